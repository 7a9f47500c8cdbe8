//! Stage 2: Monte Carlo tree search over reasoning actions. Each rollout
//! selects by UCT, expands one valid action, simulates to a terminal node
//! (or the depth limit), rewards it by execution agreement and
//! backpropagates. Every model call is recorded.
//!
//! Two designs share this loop. `paper` is the published method: every
//! untried action is tried before any is repeated, and a terminal node's
//! reward draws K more queries from its prompt. `guided` (the default) also
//! offers, at the root, the direct query of greedy and sc as an action that
//! can be taken again and again (its samples drawn a batch at a time), so
//! the search holds what sampling would have drawn. Every rollout is one
//! more direct sample, and the search stops as soon as the samples settle
//! on one result: easy questions cost one batch, and hard ones get the
//! whole budget of samples (measured: a direct sample is right more often
//! than any reasoning route's query, and a reasoning rollout costs about
//! ten samples). With the reasoning fallback, when no sample of the first
//! batch has a value, the tree search over reasoning actions takes the
//! remaining rollouts instead: untried actions start
//! from a first-play value and actions share their statistics across the
//! tree; the reward is agreement with the direct samples (no extra calls);
//! a revision is offered only when execution showed trouble, and a
//! revision that fails leaves its trajectory the query before it.

use super::feedback::has_value;
use super::reasoner::{Reasoner, Step};
use super::tree::{Guidance, NodeId, Selected, Tree};
use crate::error::Result;
use crate::llm::{LanguageModel, Prompt, Sampling};
use crate::trace::CallRecord;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Which search runs (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    #[default]
    Guided,
    Paper,
}

#[derive(Debug, Clone, Serialize)]
pub struct MctsConfig {
    pub design: Design,
    pub rollouts: usize,
    /// UCT exploration constant c.
    pub exploration: f64,
    /// K: extra samples drawn at a terminal node for the agreement reward.
    pub agreement_samples: usize,
    /// Steps after which a trajectory ends regardless.
    pub max_depth: usize,
    /// Guided design: the value of an action not yet taken anywhere.
    pub first_play: f64,
    /// Guided design: the search stops early once this share of the drawn
    /// direct samples (at least one batch) agree on a result with a value;
    /// above 1, never.
    pub settle: f64,
    /// Guided design: when no sample of the first batch has a value, the
    /// remaining rollouts go to the tree search over the reasoning actions
    /// (after stage 1); without it they go to more samples, as they do
    /// whenever a sample has a value.
    pub reasoning_fallback: bool,
    /// Guided design: greedy's query is drawn alone first, and when it
    /// runs to a result with a value and the model's mean log-probability
    /// per token of its reply is at least this, the search answers with it
    /// and draws no sample; None keeps greedy's row in the first batch.
    /// Off by default: at -0.1 on Spider it halved the search's tokens and
    /// lost 3 points (within noise; docs/results.md, 2026-11-30).
    pub greedy_confidence: Option<f64>,
}

impl Default for MctsConfig {
    /// The guided search. Its exploration is lower than the paper's: a
    /// reasoning rollout costs about ten direct samples, so it should be
    /// taken when the samples disagree, not merely because it is untried.
    fn default() -> Self {
        MctsConfig {
            design: Design::Guided,
            rollouts: 8,
            exploration: 0.5,
            agreement_samples: 3,
            max_depth: 8,
            first_play: 0.3,
            settle: 0.75,
            reasoning_fallback: false,
            greedy_confidence: None,
        }
    }
}

impl MctsConfig {
    /// The published search with its published settings (c = 1.4).
    pub fn paper() -> Self {
        MctsConfig {
            design: Design::Paper,
            exploration: 1.4,
            ..MctsConfig::default()
        }
    }
}

/// A tree node's contents: the step, and for terminal nodes with a query
/// the reward samples.
#[derive(Debug, Clone, Default)]
pub struct NodeState {
    pub step: Step,
    /// Queries drawn for the reward and whether each agreed.
    pub reward_samples: Vec<(Option<String>, bool)>,
    /// For a direct sample: its place among the drawn samples.
    pub sample: Option<usize>,
}

/// Reported after every rollout.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RolloutProgress {
    pub done: usize,
    pub total: usize,
    pub reward: f64,
    pub best_reward: f64,
    pub calls: usize,
}

pub struct Search<'a> {
    pub reasoner: Reasoner<'a>,
    pub model: &'a dyn LanguageModel,
    pub config: &'a MctsConfig,
    /// Seeds the tree policy and every call.
    pub seed: u64,
}

pub struct SearchResult {
    pub tree: Tree<NodeState>,
    pub calls: Vec<CallRecord>,
    pub rollouts_run: usize,
}

/// The direct samples drawn so far (guided design): tree children are
/// taken from them in order, and every reward compares with them.
#[derive(Default)]
pub struct Samples {
    drawn: Vec<Step>,
    /// How many have become tree nodes.
    used: usize,
    /// Greedy's query, drawn alone, was confident enough to answer with.
    confident: bool,
}

impl Samples {
    /// The share of the drawn samples in the largest group of equal
    /// results that hold a value.
    fn top_share(&self) -> f64 {
        if self.drawn.is_empty() {
            return 0.0;
        }
        let mut groups: std::collections::HashMap<u128, usize> = Default::default();
        for step in &self.drawn {
            if let Some(Ok(result)) = &step.execution {
                if result.digest.has_non_null() {
                    *groups.entry(result.digest.set_key()).or_default() += 1;
                }
            }
        }
        let top = groups.values().copied().max().unwrap_or(0);
        top as f64 / self.drawn.len() as f64
    }

    /// Whether the drawn samples agree enough to stop searching.
    pub fn settled(&self, config: &MctsConfig) -> bool {
        config.design == Design::Guided && (self.confident || self.top_share() >= config.settle)
    }

    /// Whether the guided search spends its rollouts on more samples, and
    /// needs neither stage 1 nor the reasoning actions: some drawn sample
    /// ran to a result with a value, or there is no reasoning fallback.
    pub fn suffice(&self, config: &MctsConfig) -> bool {
        let answers = |step: &Step| step.execution.as_ref().is_some_and(has_value);
        config.design == Design::Guided
            && (!config.reasoning_fallback || self.drawn.iter().any(answers))
    }
}

impl Search<'_> {
    pub fn run(&self, on_rollout: &mut dyn FnMut(RolloutProgress)) -> Result<SearchResult> {
        let (samples, calls) = self.first_samples()?;
        self.run_from(samples, calls, on_rollout)
    }

    /// The first batch of direct samples (none without a repeatable action
    /// or in the paper's design), and the calls that drew it.
    pub fn first_samples(&self) -> Result<(Samples, Vec<CallRecord>)> {
        let mut samples = Samples::default();
        let mut calls = Vec::new();
        if let Some(direct) = self.direct_action() {
            let spec = self.reasoner.actions.get(direct);
            let greedy_rows = spec.sampling.greedy_rows;
            match self.config.greedy_confidence {
                Some(threshold)
                    if greedy_rows > 0 && greedy_rows < spec.batch && self.model.can_score() =>
                {
                    let greedy_call = calls.len();
                    self.draw_rows(direct, greedy_rows, &mut samples, &mut calls)?;
                    samples.confident =
                        self.greedy_is_confident(&samples, &mut calls, greedy_call, threshold)?;
                    if !samples.confident {
                        self.draw_rows(direct, spec.batch - greedy_rows, &mut samples, &mut calls)?;
                    }
                }
                _ => self.draw_samples(direct, &mut samples, &mut calls)?,
            }
        }
        Ok((samples, calls))
    }

    /// Whether greedy's query (the one sample drawn, by call `greedy_call`;
    /// repairs may have added calls after it) ran to a value and the model
    /// found its reply likely enough: at least `threshold` nats per token on
    /// average, scored in one pass over the cached prompt and recorded as a
    /// call.
    fn greedy_is_confident(
        &self,
        samples: &Samples,
        calls: &mut Vec<CallRecord>,
        greedy_call: usize,
        threshold: f64,
    ) -> Result<bool> {
        let ran = samples.drawn.first().and_then(|s| s.execution.as_ref());
        let (Some(call), true) = (calls.get(greedy_call), ran.is_some_and(has_value)) else {
            return Ok(false);
        };
        let Some(reply) = call.outputs.first() else {
            return Ok(false);
        };
        let Some(scored) = self
            .model
            .score(&Prompt::Chat(call.prompt.clone()), reply)?
        else {
            return Ok(false);
        };
        let per_token = scored.log_prob / scored.tokens.max(1) as f64;
        calls.push(CallRecord::scored(
            format!("search greedy query scored: {per_token:.3} nats per token"),
            call.prompt.clone(),
            scored.usage,
        ));
        Ok(per_token >= threshold)
    }

    /// The repeatable action whose samples the guided search draws.
    fn direct_action(&self) -> Option<usize> {
        let actions = self.reasoner.actions;
        (0..actions.len()).find(|&a| actions.get(a).repeat && self.config.design == Design::Guided)
    }

    /// The search, continuing from samples (and their calls) drawn before.
    pub fn run_from(
        &self,
        mut samples: Samples,
        mut calls: Vec<CallRecord>,
        on_rollout: &mut dyn FnMut(RolloutProgress),
    ) -> Result<SearchResult> {
        let repeatable = (0..self.reasoner.actions.len())
            .filter(|&a| self.reasoner.actions.get(a).repeat)
            .collect();
        let mut tree = Tree::new(NodeState::default(), self.reasoner.valid_actions(&[]))
            .with_repeatable(repeatable);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let guidance = Guidance {
            exploration: self.config.exploration,
            first_play: self.config.first_play,
        };
        let mut best_reward = 0.0f64;
        let mut rollouts_run = 0;
        for done in 1..=self.config.rollouts {
            if tree.exhausted(Tree::<NodeState>::ROOT) {
                break;
            }
            // Once the drawn samples settle on one answer, the samples
            // already drawn join the tree (drawing them again costs no
            // call) and the search ends: more rollouts would cost calls
            // without changing the answer.
            if samples.settled(self.config) && samples.used >= samples.drawn.len() {
                break;
            }
            let next_sample = self
                .direct_action()
                .filter(|_| samples.suffice(self.config));
            let selected = match self.config.design {
                Design::Guided if next_sample.is_some() => Selected {
                    node: Tree::<NodeState>::ROOT,
                    expand: next_sample,
                },
                Design::Guided => tree.select_guided(&guidance),
                Design::Paper => {
                    // Expansion: one untried valid action, chosen uniformly.
                    let node = tree.select(self.config.exploration);
                    let untried = &tree.node(node).untried;
                    let expand = (!tree.node(node).terminal)
                        .then(|| untried[rng.random_range(0..untried.len())]);
                    Selected { node, expand }
                }
            };
            let mut node = selected.node;
            if let Some(action) = selected.expand {
                // A sample taken while sampling suffices is a candidate as
                // it stands, as in sc: a revision would cost as much as
                // another sample and is rarely right.
                let leaf = next_sample.is_some();
                node = self.expand(&mut tree, node, action, leaf, &mut samples, &mut calls)?;
                // Simulation: weighted by each action's rollout weight.
                while !tree.node(node).terminal {
                    let action = self.simulation_action(&tree, node, &mut rng);
                    node = self.expand(&mut tree, node, action, false, &mut samples, &mut calls)?;
                }
            }
            let reward = self.reward(&mut tree, node, &mut samples, &mut calls)?;
            tree.backpropagate(node, reward);
            best_reward = best_reward.max(reward);
            rollouts_run = done;
            on_rollout(RolloutProgress {
                done,
                total: self.config.rollouts,
                reward,
                best_reward,
                calls: calls.len(),
            });
        }
        Ok(SearchResult {
            tree,
            calls,
            rollouts_run,
        })
    }

    fn simulation_action(
        &self,
        tree: &Tree<NodeState>,
        node: NodeId,
        rng: &mut ChaCha8Rng,
    ) -> usize {
        let untried = &tree.node(node).untried;
        let weights: Vec<f64> = untried
            .iter()
            .map(|&a| self.reasoner.actions.get(a).rollout_weight)
            .collect();
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return untried[rng.random_range(0..untried.len())];
        }
        let mut pick = rng.random::<f64>() * total;
        for (&action, weight) in untried.iter().zip(&weights) {
            if pick < *weight {
                return action;
            }
            pick -= weight;
        }
        untried[untried.len() - 1]
    }

    fn path_steps(tree: &Tree<NodeState>, node: NodeId) -> Vec<&Step> {
        tree.path(node)
            .into_iter()
            .skip(1)
            .map(|id| &tree.node(id).payload.step)
            .collect()
    }

    /// Applies `action` at `parent` and adds the child to the tree, as a
    /// trajectory's end when `leaf`. A repeatable action's child is its next
    /// drawn sample.
    fn expand(
        &self,
        tree: &mut Tree<NodeState>,
        parent: NodeId,
        action: usize,
        leaf: bool,
        samples: &mut Samples,
        calls: &mut Vec<CallRecord>,
    ) -> Result<NodeId> {
        let id = tree.len();
        let (step, sample) = if self.reasoner.actions.get(action).repeat {
            if samples.used == samples.drawn.len() {
                self.draw_samples(action, samples, calls)?;
            }
            samples.used += 1;
            (
                samples.drawn[samples.used - 1].clone(),
                Some(samples.used - 1),
            )
        } else {
            let path = Self::path_steps(tree, parent);
            let sampling = self
                .reasoner
                .sampling(action, 1, node_seed(self.seed, id, 0));
            let stage = format!("search {} node {id}", self.reasoner.actions.get(action).id);
            let (mut steps, records) = self
                .reasoner
                .apply(self.model, &path, action, &sampling, stage)?;
            calls.extend(records);
            (steps.swap_remove(0), None)
        };
        let path = Self::path_steps(tree, parent);
        let mut child_path = path;
        child_path.push(&step);
        let untried = self.reasoner.valid_actions(&child_path);
        let terminal = leaf
            || self.reasoner.ends_trajectory(&step)
            || tree.node(parent).depth + 1 >= self.config.max_depth;
        Ok(tree.add_child(
            parent,
            action,
            NodeState {
                step,
                reward_samples: Vec::new(),
                sample,
            },
            untried,
            terminal,
        ))
    }

    /// One call of the repeatable `action` at the root: its batch of samples.
    fn draw_samples(
        &self,
        action: usize,
        samples: &mut Samples,
        calls: &mut Vec<CallRecord>,
    ) -> Result<()> {
        let batch = self.reasoner.actions.get(action).batch;
        self.draw_rows(action, batch, samples, calls)
    }

    /// One call of the repeatable `action` at the root drawing `rows`
    /// samples, the rows after those drawn so far.
    fn draw_rows(
        &self,
        action: usize,
        rows: usize,
        samples: &mut Samples,
        calls: &mut Vec<CallRecord>,
    ) -> Result<()> {
        let spec = self.reasoner.actions.get(action);
        let first = samples.drawn.len();
        // The rows of sc's one call with the same seed: at B samples the
        // search holds exactly what sc-B would have drawn.
        let sampling = Sampling {
            first_row: first,
            ..self.reasoner.sampling(action, rows, self.seed)
        };
        let stage = format!("search {} samples {}-{}", spec.id, first, first + rows - 1);
        let (steps, records) = self
            .reasoner
            .apply(self.model, &[], action, &sampling, stage)?;
        calls.extend(records);
        samples.drawn.extend(steps);
        Ok(())
    }

    /// The node whose step wrote the query a trajectory holds at `node`:
    /// the latest query; in the guided design the latest that ran, so a
    /// revision that failed leaves the trajectory the query before it.
    pub fn query_source(tree: &Tree<NodeState>, node: NodeId, design: Design) -> Option<NodeId> {
        let path = tree.path(node);
        let wrote = |id: &&NodeId| tree.node(**id).payload.step.sql().is_some();
        let ran = |id: &&NodeId| matches!(tree.node(**id).payload.step.execution, Some(Ok(_)));
        let running = match design {
            Design::Guided => path.iter().rev().find(ran),
            Design::Paper => None,
        };
        running.or_else(|| path.iter().rev().find(wrote)).copied()
    }

    /// Execution agreement: 0 when the trajectory's query is missing or
    /// fails; otherwise, with direct samples in the action set (guided
    /// design), the share of the other drawn samples whose result equals its
    /// result, and 0 when that result has no row with a value (agreeing on
    /// nothing is weak evidence, and such a result is what revisions are
    /// for); else the share of K more samples, drawn in one batch from the
    /// prompt that wrote the query.
    fn reward(
        &self,
        tree: &mut Tree<NodeState>,
        node: NodeId,
        samples: &mut Samples,
        calls: &mut Vec<CallRecord>,
    ) -> Result<f64> {
        if let Some(reward) = tree.node(node).reward {
            return Ok(reward);
        }
        let source = Self::query_source(tree, node, self.config.design);
        let result = source
            .and_then(|s| tree.node(s).payload.step.execution.clone())
            .and_then(|outcome| outcome.ok());
        let key = result.as_ref().map(|r| r.digest.set_key());
        let k = self.config.agreement_samples;
        let direct = self.direct_action();
        let (reward, samples) = match (source, key) {
            (Some(source), Some(key)) if direct.is_some() => {
                if samples.drawn.len() < 2 && !samples.confident {
                    self.draw_samples(direct.expect("checked"), samples, calls)?;
                }
                let own = tree.node(source).payload.sample;
                let others: Vec<(Option<String>, bool)> = samples
                    .drawn
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| Some(*i) != own)
                    .map(|(_, s)| {
                        let agrees =
                            matches!(&s.execution, Some(Ok(r)) if r.digest.set_key() == key);
                        (s.sql().map(String::from), agrees)
                    })
                    .collect();
                let agreeing = others.iter().filter(|(_, a)| *a).count();
                let plausible = result.as_ref().is_some_and(|r| r.digest.has_non_null());
                // Greedy's confident query alone has nothing to disagree with.
                let share = if others.is_empty() {
                    1.0
                } else {
                    agreeing as f64 / others.len() as f64
                };
                (if plausible { share } else { 0.0 }, others)
            }
            (Some(source), Some(key)) if k > 0 => {
                let step = &tree.node(source).payload.step;
                let action = step.action.expect("a query comes from an action");
                let parent = tree.node(source).parent.expect("actions have parents");
                let path = Self::path_steps(tree, parent);
                let sampling = self
                    .reasoner
                    .sampling(action, k, node_seed(self.seed, node, 1));
                let (steps, records) = self.reasoner.apply(
                    self.model,
                    &path,
                    action,
                    &sampling,
                    format!("reward node {node}"),
                )?;
                calls.extend(records);
                let samples: Vec<(Option<String>, bool)> = steps
                    .iter()
                    .map(|s| {
                        let agrees =
                            matches!(&s.execution, Some(Ok(r)) if r.digest.set_key() == key);
                        (s.sql().map(String::from), agrees)
                    })
                    .collect();
                let agreeing = samples.iter().filter(|(_, a)| *a).count();
                (agreeing as f64 / k as f64, samples)
            }
            (Some(_), Some(_)) => (1.0, Vec::new()),
            _ => (0.0, Vec::new()),
        };
        let entry = tree.node_mut(node);
        entry.reward = Some(reward);
        entry.payload.reward_samples = samples;
        Ok(reward)
    }
}

/// A per-node, per-purpose seed, so that a search is reproducible and no
/// two calls share random draws by accident.
pub fn node_seed(seed: u64, node: usize, purpose: u64) -> u64 {
    let mut x = seed ^ (node as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (purpose << 56);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::action::ActionSet;
    use crate::db::{ExecConfig, Executor};
    use crate::llm::scripted::ScriptedModel;
    use crate::search::reasoner::QuestionContext;
    use crate::search::DirectMaterial;

    pub use crate::understand::demo::database as concert_singer;

    /// The name of the step a prompt asks for ("SQL generation", ...).
    pub fn step_of(prompt: &str) -> &str {
        let last = prompt.rsplit("Step: ").next().unwrap_or_default();
        last.split('.').next().unwrap_or_default()
    }

    fn context() -> QuestionContext {
        QuestionContext {
            schema: "CREATE TABLE singer (Singer_ID int, Age int);".into(),
            direct: DirectMaterial {
                schema: "CREATE TABLE singer (Singer_ID int, Age int);".into(),
                evidence: String::new(),
                functions: String::new(),
            },
            question: "How many singers do we have?".into(),
            hint: None,
            understanding: String::new(),
            names: Default::default(),
            constraint: None,
            direct_constraint: None,
            redecode: false,
            min_p: 0.0,
        }
    }

    fn run(
        model: &ScriptedModel,
        actions: &ActionSet,
        config: &MctsConfig,
        seed: u64,
    ) -> (SearchResult, Vec<RolloutProgress>) {
        let executor = Executor::open(&concert_singer(), ExecConfig::default()).unwrap();
        let context = context();
        let search = Search {
            reasoner: Reasoner {
                actions,
                executor: &executor,
                context: &context,
                functions: None,
            },
            model,
            config,
            seed,
        };
        let mut progress = Vec::new();
        let result = search.run(&mut |p| progress.push(p)).unwrap();
        (result, progress)
    }

    fn paper() -> MctsConfig {
        MctsConfig::paper()
    }

    #[test]
    fn the_reward_is_the_share_of_k_samples_that_agree_by_execution() {
        let actions = ActionSet::builtin()
            .without(&["A0", "A1", "A2", "A3", "A4", "A6"].map(String::from))
            .unwrap();
        let model = ScriptedModel::responding(|prompt, i| match i {
            // The third sample's answer, continued from an opened query tag.
            _ if prompt.ends_with("<sql>\n") => "SELECT nosuch FROM singer".into(),
            0 => "<sql>SELECT count(*) FROM singer".into(),
            1 => "<sql>SELECT count(*) + 1 FROM singer".into(),
            _ => "I do not know".into(),
        });
        let config = paper();
        let (result, progress) = run(&model, &actions, &config, 0);
        // One action, one terminal child: the root is exhausted after one rollout.
        assert_eq!(result.rollouts_run, 1);
        assert_eq!(result.tree.len(), 2);
        let leaf = result.tree.node(1);
        assert!(leaf.terminal);
        assert!((leaf.reward.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        let agreed: Vec<bool> = leaf.payload.reward_samples.iter().map(|s| s.1).collect();
        assert_eq!(agreed, [true, false, false]);
        // The K samples are one call of n = 3, and the sample that wrote no
        // query was continued once.
        assert_eq!(result.calls.len(), 3);
        assert_eq!(result.calls[1].n, 3);
        assert!(result.calls[2].stage.ends_with("query continuation"));
        assert_eq!(progress.len(), 1);
    }

    /// A2 then A5 writes the right query (all samples agree); A5 without A2
    /// fails and A6 then writes a query its samples disagree with.
    fn schema_selection_helps() -> ScriptedModel {
        ScriptedModel::responding(|prompt, i| match step_of(prompt) {
            "schema selection" => r#"{"tables": ["singer"]}"#.into(),
            "SQL generation" if prompt.contains("Step: schema selection") => {
                "<sql>SELECT count(*) FROM singer".into()
            }
            "SQL generation" => "<sql>SELECT nosuch FROM singer".into(),
            "SQL revision" => format!("<sql>SELECT {}", 5 + i),
            _ => "none".into(),
        })
    }

    #[test]
    fn search_statistics_follow_the_rewards_and_favour_the_better_branch() {
        let actions = ActionSet::builtin()
            .without(&["A0", "A3", "A4"].map(String::from))
            .unwrap();
        let config = MctsConfig {
            rollouts: 12,
            ..paper()
        };
        let (result, progress) = run(&schema_selection_helps(), &actions, &config, 0);
        let tree = &result.tree;
        let root = tree.node(Tree::<NodeState>::ROOT);
        assert_eq!(root.visits as usize, result.rollouts_run);
        assert_eq!(progress.len(), result.rollouts_run);
        let total: f64 = progress.iter().map(|p| p.reward).sum();
        assert!((root.value - total).abs() < 1e-9);
        for (_, node) in tree.nodes() {
            let below: u32 = node.children.iter().map(|&c| tree.node(c).visits).sum();
            assert!(below <= node.visits);
            assert!(node.value >= 0.0 && node.value <= node.visits as f64 + 1e-9);
            // Each action at most once per trajectory.
            if let Some(action) = node.action {
                let path = tree.path(node.parent.unwrap());
                assert!(path.iter().all(|&p| tree.node(p).action != Some(action)));
            }
        }
        let child_by_action = |id: &str| {
            let index = actions.index_of(id).unwrap();
            root.children
                .iter()
                .map(|&c| tree.node(c))
                .find(|c| c.action == Some(index))
                .unwrap()
        };
        // Every path under A2 gets the agreeing query.
        let a2 = child_by_action("A2");
        assert_eq!(a2.value / a2.visits as f64, 1.0);
        // A5 first fails; its revision's samples never agree with it.
        let a5 = child_by_action("A5");
        assert!((a5.value / a5.visits as f64 - 1.0 / 3.0).abs() < 1e-9);
        // UCT sent more rollouts to the better branch.
        assert!(a2.visits > a5.visits);
    }

    /// The direct prompt (greedy's and sc's) has no step instruction.
    fn is_direct(prompt: &str) -> bool {
        !prompt.contains("Step: ")
    }

    /// Direct samples 0-2 count the singers; sample 3 counts one too many.
    /// Reasoning steps write nothing useful.
    fn three_of_four_samples_agree() -> ScriptedModel {
        ScriptedModel::responding(|prompt, i| match i {
            _ if !is_direct(prompt) => "none".into(),
            3 => "```sql\nSELECT count(*) + 1 FROM singer\n```".into(),
            _ => "```sql\nSELECT count(*) FROM singer\n```".into(),
        })
    }

    #[test]
    fn the_guided_search_takes_direct_samples_and_rewards_their_agreement() {
        let model = three_of_four_samples_agree();
        let config = MctsConfig {
            rollouts: 3,
            ..MctsConfig::default()
        };
        let (result, _) = run(&model, &ActionSet::builtin(), &config, 0);
        let tree = &result.tree;
        let direct = ActionSet::builtin().index_of("A0");
        let root = tree.node(Tree::<NodeState>::ROOT);
        // While the samples agree, every rollout takes one more of them...
        assert_eq!(root.children.len(), 3);
        for &child in &root.children {
            let node = tree.node(child);
            assert_eq!(node.action, direct);
            assert!(node.terminal);
            // ...rewarded by the other drawn samples: 2 of 3 agree.
            assert!((node.reward.unwrap() - 2.0 / 3.0).abs() < 1e-12);
            assert_eq!(node.payload.reward_samples.len(), 3);
        }
        // ...and the four samples came from one call, with no other call.
        assert_eq!(result.calls.len(), 1);
        assert_eq!(result.rollouts_run, 3);
        assert_eq!(result.calls[0].n, 4);
        assert_eq!(result.calls[0].stage, "search A0 samples 0-3");
    }

    #[test]
    fn the_search_stops_once_a_batch_of_samples_settles() {
        let model = three_of_four_samples_agree();
        let config = MctsConfig {
            rollouts: 8,
            settle: 0.75,
            ..MctsConfig::default()
        };
        let (result, progress) = run(&model, &ActionSet::builtin(), &config, 0);
        // Three of the four samples agree: the search ends with the batch.
        assert_eq!(result.rollouts_run, 4);
        assert_eq!(progress.len(), 4);
        assert_eq!(result.calls.len(), 1);
        let unsettled = MctsConfig {
            settle: 0.8,
            ..config
        };
        let (result, _) = run(&model, &ActionSet::builtin(), &unsettled, 0);
        assert_eq!(result.rollouts_run, 8);
        // Unsettled samples with a value: every rollout is one more sample,
        // taken as it stands; the two calls are rows 0-3 and 4-7 of sc's
        // one call with the same seed.
        assert_eq!(result.calls.len(), 2);
        let streams: Vec<(u64, usize)> =
            result.calls.iter().map(|c| (c.seed, c.first_row)).collect();
        assert_eq!(streams, [(0, 0), (0, 4)]);
        let direct = ActionSet::builtin().index_of("A0");
        let root = result.tree.node(Tree::<NodeState>::ROOT);
        assert_eq!(root.children.len(), 8);
        for &child in &root.children {
            let node = result.tree.node(child);
            assert_eq!(node.action, direct);
            assert!(node.terminal && node.children.is_empty());
        }
    }

    #[test]
    fn a_confident_greedy_query_answers_alone_and_an_unsure_one_completes_the_batch() {
        // The greedy reply's 6 words score -0.6 in all: -0.1 per token.
        let model = three_of_four_samples_agree().scoring(|_, _| -0.6);
        let confident = MctsConfig {
            greedy_confidence: Some(-0.2),
            ..MctsConfig::default()
        };
        let (result, _) = run(&model, &ActionSet::builtin(), &confident, 0);
        assert_eq!(result.rollouts_run, 1);
        let root = result.tree.node(Tree::<NodeState>::ROOT);
        assert_eq!(root.children.len(), 1);
        assert_eq!(result.tree.node(root.children[0]).reward, Some(1.0));
        let shapes: Vec<(usize, usize)> = result.calls.iter().map(|c| (c.n, c.first_row)).collect();
        assert_eq!(shapes, [(1, 0), (0, 0)]);
        assert!(result.calls[1].stage.contains("-0.100 nats per token"));

        // Less sure than asked: the rest of the first batch is drawn, rows
        // 1-3 of the same streams, and the search goes on as without.
        let unsure = MctsConfig {
            greedy_confidence: Some(-0.05),
            ..confident
        };
        let (result, _) = run(&model, &ActionSet::builtin(), &unsure, 0);
        let shapes: Vec<(usize, usize)> = result.calls.iter().map(|c| (c.n, c.first_row)).collect();
        assert_eq!(shapes, [(1, 0), (0, 0), (3, 1)]);
        assert_eq!(result.rollouts_run, 4);

        // With a model that cannot score, greedy's row stays in the batch.
        let (result, _) = run(
            &three_of_four_samples_agree(),
            &ActionSet::builtin(),
            &confident,
            0,
        );
        let shapes: Vec<(usize, usize)> = result.calls.iter().map(|c| (c.n, c.first_row)).collect();
        assert_eq!(shapes, [(4, 0)]);
    }

    /// Every sample returns no rows; revisions fail; reasoning steps lead
    /// to a query that runs.
    fn samples_without_a_value() -> ScriptedModel {
        ScriptedModel::responding(|prompt, i| {
            if is_direct(prompt) {
                return format!(
                    "```sql\nSELECT Age FROM singer WHERE Age > {}\n```",
                    900 + i
                );
            }
            match step_of(prompt) {
                "SQL revision" => "<sql>SELECT nosuch FROM singer".into(),
                "SQL generation" => "<sql>SELECT count(*) FROM singer".into(),
                _ => "none".into(),
            }
        })
    }

    #[test]
    fn disagreeing_samples_send_rollouts_to_reasoning_and_failed_revisions_fall_back() {
        let model = samples_without_a_value();
        let config = MctsConfig {
            rollouts: 6,
            reasoning_fallback: true,
            ..MctsConfig::default()
        };
        let actions = ActionSet::builtin();
        let (result, _) = run(&model, &actions, &config, 0);
        let tree = &result.tree;
        let direct = actions.index_of("A0");
        let root = tree.node(Tree::<NodeState>::ROOT);
        assert!(root.children.iter().any(|&c| tree.node(c).action != direct));
        // A sample's failed revision leaves the trajectory the sample's
        // query, which ran (with no rows).
        let revised = tree
            .nodes()
            .find(|(_, n)| n.action == actions.index_of("A6"))
            .map(|(id, _)| id)
            .expect("an empty result was revised");
        let source = Search::query_source(tree, revised, Design::Guided).unwrap();
        assert_eq!(tree.node(source).action, direct);
        assert_eq!(
            Search::query_source(tree, revised, Design::Paper),
            Some(revised)
        );
    }

    #[test]
    fn without_the_reasoning_fallback_samples_without_a_value_take_every_rollout() {
        let model = samples_without_a_value();
        let config = MctsConfig {
            rollouts: 6,
            reasoning_fallback: false,
            ..MctsConfig::default()
        };
        let actions = ActionSet::builtin();
        let (result, _) = run(&model, &actions, &config, 0);
        let root = result.tree.node(Tree::<NodeState>::ROOT);
        assert_eq!(root.children.len(), 6);
        assert!(result
            .tree
            .nodes()
            .skip(1)
            .all(|(_, n)| n.action == actions.index_of("A0") && n.terminal));
        assert_eq!(
            result.calls.len(),
            2,
            "two batches of samples, nothing else"
        );
    }

    #[test]
    fn a_seeded_search_is_reproducible() {
        let actions = ActionSet::builtin();
        let config = MctsConfig {
            rollouts: 6,
            reasoning_fallback: true,
            ..MctsConfig::default()
        };
        let shape = |result: &SearchResult| -> Vec<(Option<usize>, Option<usize>, u32)> {
            result
                .tree
                .nodes()
                .map(|(_, n)| (n.parent, n.action, n.visits))
                .collect()
        };
        let (first, _) = run(&schema_selection_helps(), &actions, &config, 11);
        let (second, _) = run(&schema_selection_helps(), &actions, &config, 11);
        assert_eq!(shape(&first), shape(&second));
        let streams: Vec<(u64, usize)> =
            first.calls.iter().map(|c| (c.seed, c.first_row)).collect();
        let mut distinct = streams.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            streams.len(),
            "every call draws its own streams"
        );
    }

    #[test]
    fn the_depth_limit_ends_trajectories() {
        let actions = ActionSet::builtin();
        let config = MctsConfig {
            rollouts: 4,
            max_depth: 2,
            reasoning_fallback: true,
            ..MctsConfig::default()
        };
        let (result, _) = run(&schema_selection_helps(), &actions, &config, 0);
        assert!(result.tree.nodes().all(|(_, n)| n.depth <= 2));
        assert!(result
            .tree
            .nodes()
            .filter(|(_, n)| n.depth == 2)
            .all(|(_, n)| n.terminal));
    }
}
