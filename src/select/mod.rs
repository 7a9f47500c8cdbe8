//! Stage 3: choosing among the search's terminal trajectories. A
//! discriminator model re-derives each candidate from a random earlier
//! step; the score mixes execution, that agreement and the vote of all
//! candidates: Score = a*Exec + b*DiscConf + g*ConsVote. In the guided
//! design each candidate's vote counts as much as its route (the action
//! its trajectory opened with) has proved reliable in the search, its mean
//! reward, so a route whose queries agree with nothing adds nothing. By
//! default the guided design chooses among disagreeing results with the
//! reviewer instead (`review`): ln(vote) + ln p(question | query) + the
//! result's prior (a result without a value weighs a tenth).

pub mod review;

use crate::action::OutputKind;
use crate::error::Result;
use crate::llm::{LanguageModel, Sampling};
use crate::search::has_value;
use crate::search::mcts::{node_seed, Design, NodeState, Search};
use crate::search::reasoner::{Reasoner, Step};
use crate::search::tree::{NodeId, Tree};
use crate::trace::CallRecord;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::HashMap;

/// The (alpha, beta, gamma) of the score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    pub exec: f64,
    pub disc: f64,
    pub vote: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            exec: 0.4,
            disc: 0.2,
            vote: 0.4,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SelectConfig {
    pub weights: Weights,
    /// Run the discriminator check (DiscConf is 0 for everyone without it).
    pub discriminator: bool,
    /// Choose among disagreeing results by the vote and the reviewer
    /// (`review`): sc's groups of samples, and the guided search's
    /// candidates instead of the weighted score and the discriminator.
    pub review: bool,
}

impl Default for SelectConfig {
    fn default() -> Self {
        SelectConfig {
            weights: Weights::default(),
            discriminator: true,
            review: true,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ScoredCandidate {
    /// The tree node the trajectory ends at.
    pub node: NodeId,
    pub sql: String,
    pub exec: f64,
    /// The discriminator's agreement; None when it did not run.
    pub disc: Option<f64>,
    pub vote: f64,
    pub score: f64,
    /// Steps the discriminator was given before completing.
    pub cut_after: Option<usize>,
    /// The query the discriminator's completion wrote.
    pub disc_sql: Option<String>,
    /// ln p(question | query) of the likeliest query with this result,
    /// when the reviewer chose.
    pub review: Option<f64>,
}

pub struct Selection {
    pub candidates: Vec<ScoredCandidate>,
    pub winner: Option<usize>,
    /// How sure the choice is, in [0, 1]: with the reviewer, the
    /// route-weighted share of the candidates whose result is the
    /// winner's (its score is a log-probability, not a confidence);
    /// otherwise the winner's weighted score.
    pub confidence: f64,
    pub calls: Vec<CallRecord>,
    /// The reviewed queries and what reviewing them cost, when it ran.
    pub review: Option<review::Review>,
}

/// Terminal nodes holding a query (in the guided design, one that ran);
/// when no trajectory finished with one, every node that wrote a query, so
/// that a failing answer can still be shown.
pub fn candidate_nodes(tree: &Tree<NodeState>, design: Design) -> Vec<NodeId> {
    let holds_answer = |id: NodeId| {
        Search::query_source(tree, id, design).is_some_and(|s| {
            design == Design::Paper || matches!(tree.node(s).payload.step.execution, Some(Ok(_)))
        })
    };
    let terminal: Vec<NodeId> = tree
        .nodes()
        .filter(|(id, n)| n.terminal && holds_answer(*id))
        .map(|(id, _)| id)
        .collect();
    if !terminal.is_empty() {
        return terminal;
    }
    tree.nodes()
        .filter(|(_, n)| n.payload.step.sql().is_some())
        .map(|(id, _)| id)
        .collect()
}

pub fn select(
    tree: &Tree<NodeState>,
    reasoner: &Reasoner<'_>,
    discriminator: &dyn LanguageModel,
    config: &SelectConfig,
    design: Design,
    seed: u64,
) -> Result<Selection> {
    let nodes = candidate_nodes(tree, design);
    let sources: Vec<&Step> = nodes
        .iter()
        .map(|&n| {
            let source = Search::query_source(tree, n, design).expect("candidates hold a query");
            &tree.node(source).payload.step
        })
        .collect();
    let keys: Vec<Option<u128>> = sources
        .iter()
        .map(|s| match &s.execution {
            Some(Ok(result)) => Some(result.digest.set_key()),
            _ => None,
        })
        .collect();
    let weights: Vec<f64> = match design {
        Design::Paper => vec![1.0; nodes.len()],
        Design::Guided => route_reliabilities(tree, &nodes),
    };
    let total_weight: f64 = weights.iter().sum();
    let mut groups: HashMap<u128, f64> = HashMap::new();
    for (key, weight) in keys.iter().zip(&weights) {
        if let Some(key) = key {
            *groups.entry(*key).or_default() += weight;
        }
    }

    // In the guided design the reviewer replaces the discriminator; with
    // one result there is nothing to choose and neither runs.
    let reviewing = design == Design::Guided && config.review;
    let reviewed = match groups.len() {
        2.. if reviewing => {
            let context = reasoner.context;
            let asked = review::Asked {
                schema: &context.direct.schema,
                hint: context.hint.as_deref(),
                question: &context.question,
            };
            let ran = sources
                .iter()
                .zip(&keys)
                .filter_map(|(source, key)| Some((source.sql()?, (*key)?)));
            review::review_by_result(discriminator, asked, ran)?
        }
        _ => None,
    };
    let discriminate = config.discriminator && !(reviewing && groups.len() < 2);

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut calls = Vec::new();
    // Completions are greedy, so equal cuts give equal answers: run each once.
    let mut completions: HashMap<(NodeId, usize), Completion> = HashMap::new();
    let mut candidates = Vec::with_capacity(nodes.len());
    for (i, &node) in nodes.iter().enumerate() {
        let exec = if keys[i].is_some() { 1.0 } else { 0.0 };
        let vote = keys[i].map_or(0.0, |k| groups[&k] / total_weight);
        if let Some((_, log_probs)) = &reviewed {
            let review = keys[i].map(|k| log_probs[&k]);
            let valued = sources[i].execution.as_ref().is_some_and(has_value);
            candidates.push(ScoredCandidate {
                node,
                sql: sources[i].sql().unwrap_or_default().to_string(),
                exec,
                disc: None,
                vote,
                score: review.map_or(f64::NEG_INFINITY, |lp| {
                    vote.ln() + lp + review::result_prior(valued)
                }),
                cut_after: None,
                disc_sql: None,
                review,
            });
            continue;
        }
        let (disc, cut_after, disc_sql) = match (discriminate, keys[i]) {
            (false, _) => (None, None, None),
            (true, None) => (Some(0.0), None, None),
            (true, Some(key)) => {
                let cut = plan_cut(tree, node, reasoner, &mut rng);
                match cut.action {
                    None => (Some(0.0), Some(cut.keep), None),
                    Some(action) => {
                        let completion = match completions.get(&(cut.ancestor, action)) {
                            Some(done) => done.clone(),
                            None => {
                                let (done, records) =
                                    complete(tree, &cut, action, reasoner, discriminator, seed)?;
                                calls.extend(records);
                                completions.insert((cut.ancestor, action), done.clone());
                                done
                            }
                        };
                        let agreement = if completion.result == Some(key) {
                            1.0
                        } else {
                            0.0
                        };
                        (Some(agreement), Some(cut.keep), completion.sql)
                    }
                }
            }
        };
        let w = config.weights;
        let score = w.exec * exec + w.disc * disc.unwrap_or(0.0) + w.vote * vote;
        candidates.push(ScoredCandidate {
            node,
            sql: sources[i].sql().unwrap_or_default().to_string(),
            exec,
            disc,
            vote,
            score,
            cut_after,
            disc_sql,
            review: None,
        });
    }
    let winner = (0..candidates.len()).max_by(|&a, &b| {
        let rank = |i: usize| {
            let non_empty = matches!(&sources[i].execution, Some(Ok(r)) if r.total_rows > 0);
            let reward = tree.node(candidates[i].node).reward.unwrap_or(0.0);
            (candidates[i].score, non_empty, reward)
        };
        let (sa, ea, ra) = rank(a);
        let (sb, eb, rb) = rank(b);
        sa.total_cmp(&sb)
            .then(ea.cmp(&eb))
            .then(ra.total_cmp(&rb))
            // Earlier candidates win remaining ties.
            .then(b.cmp(&a))
    });
    let confidence = winner.map_or(0.0, |w| {
        if reviewing {
            candidates[w].vote
        } else {
            candidates[w].score
        }
    });
    Ok(Selection {
        candidates,
        winner,
        confidence,
        calls,
        review: reviewed.map(|(review, _)| review),
    })
}

/// Each candidate's weight in the vote: the mean reward of the rollouts
/// through its route (the root's child it descends from, or all children
/// of a repeated action there). When no route earned anything, all weigh 1.
fn route_reliabilities(tree: &Tree<NodeState>, nodes: &[NodeId]) -> Vec<f64> {
    let route_action = |node: NodeId| tree.node(tree.path(node)[1]).action;
    let root = tree.node(Tree::<NodeState>::ROOT);
    let reliability = |action: Option<usize>| {
        let (n, q) = root
            .children
            .iter()
            .map(|&c| tree.node(c))
            .filter(|c| c.action == action)
            .fold((0u32, 0.0), |(n, q), c| (n + c.visits, q + c.value));
        if n == 0 {
            0.0
        } else {
            q / f64::from(n)
        }
    };
    let weights: Vec<f64> = nodes
        .iter()
        .map(|&n| reliability(route_action(n)))
        .collect();
    if weights.iter().all(|&w| w <= 0.0) {
        vec![1.0; nodes.len()]
    } else {
        weights
    }
}

#[derive(Clone)]
struct Completion {
    result: Option<u128>,
    sql: Option<String>,
}

/// Where a trajectory is cut: the first `keep` steps are kept (fewer than
/// all), ending at `ancestor`; `action` is the trajectory's next
/// query-writing action valid there.
struct Cut {
    keep: usize,
    ancestor: NodeId,
    action: Option<usize>,
}

fn plan_cut(
    tree: &Tree<NodeState>,
    node: NodeId,
    reasoner: &Reasoner<'_>,
    rng: &mut ChaCha8Rng,
) -> Cut {
    let path = tree.path(node);
    let depth = path.len() - 1;
    let keep = rng.random_range(0..depth.max(1));
    let prefix = steps(tree, &path[1..=keep]);
    let valid = reasoner.valid_actions(&prefix);
    let is_sql = |a: usize| reasoner.actions.get(a).output == OutputKind::Sql;
    let action = path[keep + 1..]
        .iter()
        .filter_map(|&id| tree.node(id).action)
        .find(|&a| is_sql(a) && valid.contains(&a))
        .or_else(|| valid.iter().copied().find(|&a| is_sql(a)));
    Cut {
        keep,
        ancestor: path[keep],
        action,
    }
}

fn steps<'t>(tree: &'t Tree<NodeState>, ids: &[NodeId]) -> Vec<&'t Step> {
    ids.iter().map(|&id| &tree.node(id).payload.step).collect()
}

/// The discriminator writes the query from the cut, greedily.
fn complete(
    tree: &Tree<NodeState>,
    cut: &Cut,
    action: usize,
    reasoner: &Reasoner<'_>,
    model: &dyn LanguageModel,
    seed: u64,
) -> Result<(Completion, Vec<CallRecord>)> {
    let path = tree.path(cut.ancestor);
    let prefix = steps(tree, &path[1..]);
    let sampling = Sampling {
        temperature: 0.0,
        top_p: 1.0,
        ..reasoner.sampling(action, 1, node_seed(seed, cut.ancestor, 2))
    };
    let (found, records) = reasoner.apply(
        model,
        &prefix,
        action,
        &sampling,
        format!("discriminator from node {}", cut.ancestor),
    )?;
    let step = &found[0];
    let result = match &step.execution {
        Some(Ok(r)) => Some(r.digest.set_key()),
        _ => None,
    };
    let completion = Completion {
        result,
        sql: step.sql().map(String::from),
    };
    Ok((completion, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_weighs_what_its_route_earned_on_average() {
        // Root: two direct samples (rewards 1 and 0.5) and a reasoning
        // route whose one trajectory earned nothing.
        let mut tree = Tree::new(NodeState::default(), vec![0, 5]).with_repeatable(vec![0]);
        let a = tree.add_child(
            Tree::<NodeState>::ROOT,
            0,
            NodeState::default(),
            vec![],
            true,
        );
        let b = tree.add_child(
            Tree::<NodeState>::ROOT,
            0,
            NodeState::default(),
            vec![],
            true,
        );
        let r = tree.add_child(
            Tree::<NodeState>::ROOT,
            5,
            NodeState::default(),
            vec![6],
            false,
        );
        let r2 = tree.add_child(r, 6, NodeState::default(), vec![], true);
        tree.backpropagate(a, 1.0);
        tree.backpropagate(b, 0.5);
        tree.backpropagate(r2, 0.0);
        assert_eq!(route_reliabilities(&tree, &[a, b, r2]), [0.75, 0.75, 0.0]);
        // When no route earned anything, every candidate counts alike.
        let mut flat = Tree::new(NodeState::default(), vec![0]).with_repeatable(vec![0]);
        let c = flat.add_child(
            Tree::<NodeState>::ROOT,
            0,
            NodeState::default(),
            vec![],
            true,
        );
        flat.backpropagate(c, 0.0);
        assert_eq!(route_reliabilities(&flat, &[c]), [1.0]);
    }
}
