//! Stage 2: Monte Carlo tree search over reasoning actions. Each rollout
//! selects by UCT, expands one untried valid action, simulates to a terminal
//! node (or the depth limit), rewards it by execution agreement and
//! backpropagates. Every model call is recorded.

use super::reasoner::{Reasoner, Step};
use super::tree::{NodeId, Tree};
use crate::error::Result;
use crate::llm::LanguageModel;
use crate::trace::CallRecord;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct MctsConfig {
    pub rollouts: usize,
    /// UCT exploration constant c.
    pub exploration: f64,
    /// K: extra samples drawn at a terminal node for the agreement reward.
    pub agreement_samples: usize,
    /// Steps after which a trajectory ends regardless.
    pub max_depth: usize,
}

impl Default for MctsConfig {
    fn default() -> Self {
        MctsConfig {
            rollouts: 8,
            exploration: 1.4,
            agreement_samples: 3,
            max_depth: 8,
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
}

/// Reported after every rollout.
#[derive(Debug, Clone, Copy)]
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

impl Search<'_> {
    pub fn run(&self, on_rollout: &mut dyn FnMut(RolloutProgress)) -> Result<SearchResult> {
        let mut tree = Tree::new(NodeState::default(), self.reasoner.valid_actions(&[]));
        let mut calls = Vec::new();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut best_reward = 0.0f64;
        let mut rollouts_run = 0;
        for done in 1..=self.config.rollouts {
            if tree.exhausted(Tree::<NodeState>::ROOT) {
                break;
            }
            let mut node = tree.select(self.config.exploration);
            if !tree.node(node).terminal {
                // Expansion: one untried valid action, chosen uniformly.
                let untried = &tree.node(node).untried;
                let action = untried[rng.random_range(0..untried.len())];
                node = self.expand(&mut tree, node, action, &mut calls)?;
                // Simulation: weighted by each action's rollout weight.
                while !tree.node(node).terminal {
                    let action = self.simulation_action(&tree, node, &mut rng);
                    node = self.expand(&mut tree, node, action, &mut calls)?;
                }
            }
            let reward = self.reward(&mut tree, node, &mut calls)?;
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

    /// Applies `action` at `parent` and adds the child to the tree.
    fn expand(
        &self,
        tree: &mut Tree<NodeState>,
        parent: NodeId,
        action: usize,
        calls: &mut Vec<CallRecord>,
    ) -> Result<NodeId> {
        let id = tree.len();
        let path = Self::path_steps(tree, parent);
        let sampling = self
            .reasoner
            .sampling(action, 1, node_seed(self.seed, id, 0));
        let stage = format!("search {} node {id}", self.reasoner.actions.get(action).id);
        let (mut steps, records) = self
            .reasoner
            .apply(self.model, &path, action, &sampling, stage)?;
        calls.extend(records);
        let step = steps.swap_remove(0);
        let mut child_path = path;
        child_path.push(&step);
        let untried = self.reasoner.valid_actions(&child_path);
        let terminal = self.reasoner.ends_trajectory(&step)
            || tree.node(parent).depth + 1 >= self.config.max_depth;
        Ok(tree.add_child(
            parent,
            action,
            NodeState {
                step,
                reward_samples: Vec::new(),
            },
            untried,
            terminal,
        ))
    }

    /// The node whose step wrote the query a trajectory holds at `node`.
    pub fn query_source(tree: &Tree<NodeState>, node: NodeId) -> Option<NodeId> {
        tree.path(node)
            .into_iter()
            .rev()
            .find(|&id| tree.node(id).payload.step.sql().is_some())
    }

    /// Execution agreement: 0 when the trajectory's query is missing or
    /// fails; otherwise the share of K more samples, drawn in one batch from
    /// the prompt that wrote the query, whose result equals its result.
    fn reward(
        &self,
        tree: &mut Tree<NodeState>,
        node: NodeId,
        calls: &mut Vec<CallRecord>,
    ) -> Result<f64> {
        if let Some(reward) = tree.node(node).reward {
            return Ok(reward);
        }
        let source = Self::query_source(tree, node);
        let key = source
            .and_then(|s| tree.node(s).payload.step.execution.clone())
            .and_then(|outcome| outcome.ok())
            .map(|result| result.digest.set_key());
        let k = self.config.agreement_samples;
        let (reward, samples) = match (source, key) {
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

    pub use crate::understand::demo::database as concert_singer;

    /// The name of the step a prompt asks for ("SQL generation", ...).
    pub fn step_of(prompt: &str) -> &str {
        let last = prompt.rsplit("Step: ").next().unwrap_or_default();
        last.split('.').next().unwrap_or_default()
    }

    fn context() -> QuestionContext {
        QuestionContext {
            schema: "CREATE TABLE singer (Singer_ID int, Age int);".into(),
            question: "How many singers do we have?".into(),
            hint: None,
            understanding: String::new(),
            names: Default::default(),
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
            },
            model,
            config,
            seed,
        };
        let mut progress = Vec::new();
        let result = search.run(&mut |p| progress.push(p)).unwrap();
        (result, progress)
    }

    #[test]
    fn the_reward_is_the_share_of_k_samples_that_agree_by_execution() {
        let actions = ActionSet::builtin()
            .without(&["A1", "A2", "A3", "A4", "A6"].map(String::from))
            .unwrap();
        let model = ScriptedModel::responding(|prompt, i| match i {
            // The third sample's answer, continued from an opened query tag.
            _ if prompt.ends_with("<sql>\n") => "SELECT nosuch FROM singer".into(),
            0 => "<sql>SELECT count(*) FROM singer".into(),
            1 => "<sql>SELECT count(*) + 1 FROM singer".into(),
            _ => "I do not know".into(),
        });
        let config = MctsConfig::default();
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
            .without(&["A3", "A4"].map(String::from))
            .unwrap();
        let config = MctsConfig {
            rollouts: 12,
            ..MctsConfig::default()
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

    #[test]
    fn a_seeded_search_is_reproducible() {
        let actions = ActionSet::builtin();
        let config = MctsConfig {
            rollouts: 6,
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
        let seeds: Vec<u64> = first.calls.iter().map(|c| c.seed).collect();
        let mut distinct = seeds.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len(), "every call has its own seed");
    }

    #[test]
    fn the_depth_limit_ends_trajectories() {
        let actions = ActionSet::builtin();
        let config = MctsConfig {
            rollouts: 4,
            max_depth: 2,
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
