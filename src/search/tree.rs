//! The search tree of Monte Carlo tree search, apart from any model: nodes
//! with visit counts and summed rewards, UCT selection, backpropagation.
//! Edge statistics N(v,a) and Q(v,a) live on the child that edge a leads to.

use serde::Serialize;
use std::collections::BTreeMap;

pub type NodeId = usize;

#[derive(Debug, Clone, Serialize)]
pub struct Node<P> {
    pub parent: Option<NodeId>,
    /// The action whose application created this node (None at the root).
    pub action: Option<usize>,
    pub depth: usize,
    pub children: Vec<NodeId>,
    /// Valid actions not yet expanded from here.
    pub untried: Vec<usize>,
    /// N: how many rollouts passed through this node.
    pub visits: u32,
    /// Q: the sum of their rewards.
    pub value: f64,
    pub terminal: bool,
    /// The reward of a terminal node, computed once.
    pub reward: Option<f64>,
    pub payload: P,
}

#[derive(Debug, Clone, Serialize)]
pub struct Tree<P> {
    nodes: Vec<Node<P>>,
    /// Actions that stay untried after expansion: each expansion adds one
    /// more child (one more sample of the same step).
    repeatable: Vec<usize>,
    /// Visits and summed rewards of every action, wherever it was taken.
    action_stats: BTreeMap<usize, (u32, f64)>,
}

/// How guided selection values edges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guidance {
    /// UCT's exploration constant c.
    pub exploration: f64,
    /// The value assumed for an action not yet taken anywhere in the tree
    /// (instead of the paper's infinity, which makes every untried action
    /// cost a rollout before any is repeated).
    pub first_play: f64,
}

/// Where a rollout goes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selected {
    pub node: NodeId,
    /// The action to expand there; None when only a terminal node was left.
    pub expand: Option<usize>,
}

impl<P> Tree<P> {
    pub const ROOT: NodeId = 0;

    pub fn new(payload: P, untried: Vec<usize>) -> Self {
        Tree {
            nodes: vec![Node {
                parent: None,
                action: None,
                depth: 0,
                children: Vec::new(),
                terminal: untried.is_empty(),
                untried,
                visits: 0,
                value: 0.0,
                reward: None,
                payload,
            }],
            repeatable: Vec::new(),
            action_stats: BTreeMap::new(),
        }
    }

    /// Marks `actions` as repeatable (see [`Tree::add_child`]).
    pub fn with_repeatable(mut self, actions: Vec<usize>) -> Self {
        self.repeatable = actions;
        self
    }

    pub fn node(&self, id: NodeId) -> &Node<P> {
        &self.nodes[id]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node<P> {
        &mut self.nodes[id]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node<P>)> {
        self.nodes.iter().enumerate()
    }

    /// Adds the child reached from `parent` by `action` and takes the action
    /// off the parent's untried list, unless it is repeatable. A child with
    /// nothing left to try is terminal.
    pub fn add_child(
        &mut self,
        parent: NodeId,
        action: usize,
        payload: P,
        untried: Vec<usize>,
        terminal: bool,
    ) -> NodeId {
        let id = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        if !self.repeatable.contains(&action) {
            self.nodes[parent].untried.retain(|&a| a != action);
        }
        self.nodes[parent].children.push(id);
        self.nodes.push(Node {
            parent: Some(parent),
            action: Some(action),
            depth,
            children: Vec::new(),
            terminal: terminal || untried.is_empty(),
            untried: if terminal { Vec::new() } else { untried },
            visits: 0,
            value: 0.0,
            reward: None,
            payload,
        });
        id
    }

    /// UCT(v, a) = Q(v,a)/N(v,a) + c * sqrt(ln N(v) / N(v,a)); an unvisited
    /// edge scores infinity so that it is tried first.
    pub fn uct(&self, child: NodeId, c: f64) -> f64 {
        let node = &self.nodes[child];
        let parent_visits = node.parent.map_or(0, |p| self.nodes[p].visits);
        if node.visits == 0 {
            return f64::INFINITY;
        }
        let n = node.visits as f64;
        node.value / n + c * ((parent_visits.max(1) as f64).ln() / n).sqrt()
    }

    /// Nothing more can be learned below this node: it is terminal, or every
    /// action has been expanded and every child is exhausted.
    pub fn exhausted(&self, id: NodeId) -> bool {
        let node = &self.nodes[id];
        node.terminal
            || (node.untried.is_empty() && node.children.iter().all(|&c| self.exhausted(c)))
    }

    /// Selection: from the root, follow the child of highest UCT while the
    /// node is fully expanded and not terminal, skipping exhausted subtrees.
    /// Returns the node to expand (or a terminal node when only terminals
    /// remain reachable). Ties go to the earliest child.
    pub fn select(&self, c: f64) -> NodeId {
        let mut current = Self::ROOT;
        loop {
            let node = &self.nodes[current];
            if node.terminal || !node.untried.is_empty() {
                return current;
            }
            let mut best: Option<(NodeId, f64)> = None;
            for &child in &node.children {
                if self.exhausted(child) {
                    continue;
                }
                let score = self.uct(child, c);
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((child, score));
                }
            }
            match best {
                Some((child, _)) => current = child,
                None => return current,
            }
        }
    }

    /// Guided selection: at every node, the untried actions (valued at
    /// their mean elsewhere in the tree, else at the first-play value), the
    /// repeatable actions (valued over all their children here) and the
    /// other live children compete by UCT; an edge's mean is shrunk towards
    /// its action's mean over the tree by one pseudo-visit, so what one
    /// branch learns about an action informs every branch. Descends until
    /// an action wins. Ties go to untried actions first, then the earliest.
    pub fn select_guided(&self, guidance: &Guidance) -> Selected {
        let mut current = Self::ROOT;
        loop {
            let node = &self.nodes[current];
            if node.terminal {
                return Selected {
                    node: current,
                    expand: None,
                };
            }
            let ln_n = f64::from(node.visits.max(1)).ln();
            let score = |action: usize, visits: u32, value: f64| {
                let prior = self.action_mean(action).unwrap_or(guidance.first_play);
                let n = f64::from(visits);
                (value + prior) / (n + 1.0) + guidance.exploration * (ln_n / n.max(1.0)).sqrt()
            };
            let mut best: Option<(f64, Result<usize, NodeId>)> = None;
            let mut consider = |s: f64, choice| {
                if best.is_none_or(|(b, _)| s > b) {
                    best = Some((s, choice));
                }
            };
            for &action in &node.untried {
                let (visits, value) = node
                    .children
                    .iter()
                    .map(|&c| &self.nodes[c])
                    .filter(|c| c.action == Some(action))
                    .fold((0, 0.0), |(n, q), c| (n + c.visits, q + c.value));
                consider(score(action, visits, value), Ok(action));
            }
            for &child in &node.children {
                let c = &self.nodes[child];
                let action = c.action.expect("children have actions");
                if node.untried.contains(&action) || self.exhausted(child) {
                    continue;
                }
                consider(score(action, c.visits, c.value), Err(child));
            }
            match best {
                Some((_, Err(child))) => current = child,
                Some((_, Ok(action))) => {
                    return Selected {
                        node: current,
                        expand: Some(action),
                    }
                }
                None => {
                    return Selected {
                        node: current,
                        expand: None,
                    }
                }
            }
        }
    }

    /// The mean reward of `action` over every rollout that took it.
    pub fn action_mean(&self, action: usize) -> Option<f64> {
        self.action_stats
            .get(&action)
            .filter(|(n, _)| *n > 0)
            .map(|(n, q)| q / f64::from(*n))
    }

    /// Backpropagation: N += 1 and Q += reward from `leaf` up to the root,
    /// and for every action on the way.
    pub fn backpropagate(&mut self, leaf: NodeId, reward: f64) {
        let mut current = Some(leaf);
        while let Some(id) = current {
            let node = &mut self.nodes[id];
            node.visits += 1;
            node.value += reward;
            if let Some(action) = node.action {
                let stats = self.action_stats.entry(action).or_default();
                stats.0 += 1;
                stats.1 += reward;
            }
            current = node.parent;
        }
    }

    /// Node ids from the root down to `id`.
    pub fn path(&self, id: NodeId) -> Vec<NodeId> {
        let mut path = vec![id];
        let mut current = id;
        while let Some(parent) = self.nodes[current].parent {
            path.push(parent);
            current = parent;
        }
        path.reverse();
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root with three actions; children 1 and 2 expanded and visited.
    fn small_tree() -> Tree<()> {
        let mut tree = Tree::new((), vec![0, 1, 2]);
        let a = tree.add_child(Tree::<()>::ROOT, 0, (), vec![5], false);
        let b = tree.add_child(Tree::<()>::ROOT, 1, (), vec![5], false);
        tree.backpropagate(a, 1.0);
        tree.backpropagate(b, 0.0);
        tree.backpropagate(b, 1.0);
        tree
    }

    #[test]
    fn uct_matches_the_formula() {
        let tree = small_tree();
        // Root N = 3; child 1: N=1, Q=1; child 2: N=2, Q=1.
        let c = 1.4;
        let ln3 = 3f64.ln();
        assert!((tree.uct(1, c) - (1.0 + c * (ln3 / 1.0).sqrt())).abs() < 1e-12);
        assert!((tree.uct(2, c) - (0.5 + c * (ln3 / 2.0).sqrt())).abs() < 1e-12);
    }

    #[test]
    fn selection_stops_at_a_node_with_untried_actions() {
        let tree = small_tree();
        // The root still has action 2 untried: expand there.
        assert_eq!(tree.select(1.4), Tree::<()>::ROOT);
    }

    #[test]
    fn selection_follows_the_highest_uct_child() {
        let mut tree = small_tree();
        let c = tree.add_child(Tree::<()>::ROOT, 2, (), vec![5], false);
        tree.backpropagate(c, 0.0);
        tree.backpropagate(c, 0.0);
        tree.backpropagate(c, 0.0);
        // Root N=6: child 1 (1/1) has the highest mean and fewest visits.
        assert_eq!(tree.select(1.4), 1);
        // With c = 0 only the mean counts: 1.0 vs 0.5 vs 0.0.
        assert_eq!(tree.select(0.0), 1);
        // A large c favours the least visited, ties to the earliest.
        tree.backpropagate(1, 0.0);
        tree.backpropagate(1, 0.0);
        // Now child 1: N=3 Q=1, child 2: N=2 Q=1, child 3: N=3 Q=0.
        assert_eq!(tree.select(100.0), 2);
    }

    #[test]
    fn backpropagation_updates_the_whole_path() {
        let mut tree = Tree::new((), vec![0]);
        let a = tree.add_child(Tree::<()>::ROOT, 0, (), vec![1], false);
        let b = tree.add_child(a, 1, (), vec![], true);
        tree.backpropagate(b, 0.25);
        for id in [0, a, b] {
            assert_eq!(tree.node(id).visits, 1);
            assert_eq!(tree.node(id).value, 0.25);
        }
        assert_eq!(tree.path(b), vec![0, a, b]);
        assert_eq!(tree.node(b).depth, 2);
    }

    #[test]
    fn expansion_takes_the_action_off_the_untried_list() {
        let mut tree = Tree::new((), vec![3, 4]);
        tree.add_child(Tree::<()>::ROOT, 4, (), vec![3], false);
        assert_eq!(tree.node(Tree::<()>::ROOT).untried, vec![3]);
        assert_eq!(tree.node(1).action, Some(4));
    }

    const GUIDANCE: Guidance = Guidance {
        exploration: 0.5,
        first_play: 0.5,
    };

    #[test]
    fn a_repeatable_action_stays_untried_and_competes_with_its_children_summed() {
        // Action 0 repeats (samples); action 1 is a one-off.
        let mut tree = Tree::new((), vec![0, 1]).with_repeatable(vec![0]);
        // Untried actions tie at the first-play value: the earliest goes first.
        let first = tree.select_guided(&GUIDANCE);
        assert_eq!(first.expand, Some(0));
        let a = tree.add_child(Tree::<()>::ROOT, 0, (), vec![], true);
        assert_eq!(tree.node(Tree::<()>::ROOT).untried, vec![0, 1]);
        tree.backpropagate(a, 1.0);
        // Samples that agree keep the search sampling...
        let b = tree.add_child(Tree::<()>::ROOT, 0, (), vec![], true);
        tree.backpropagate(b, 1.0);
        assert_eq!(tree.select_guided(&GUIDANCE).expand, Some(0));
        // ...samples that disagree send it to the untried action.
        for _ in 0..4 {
            let c = tree.add_child(Tree::<()>::ROOT, 0, (), vec![], true);
            tree.backpropagate(c, 0.0);
        }
        assert_eq!(tree.select_guided(&GUIDANCE).expand, Some(1));
        assert_eq!(tree.action_mean(0), Some(2.0 / 6.0));
        assert_eq!(tree.action_mean(1), None);
    }

    #[test]
    fn guided_selection_descends_and_shares_what_an_action_earned() {
        let mut tree = Tree::new((), vec![0, 1]);
        let a = tree.add_child(Tree::<()>::ROOT, 0, (), vec![2], false);
        let b = tree.add_child(Tree::<()>::ROOT, 1, (), vec![3, 2], false);
        // Action 2 paid off under a, which is then exhausted.
        let a2 = tree.add_child(a, 2, (), vec![], true);
        tree.backpropagate(a2, 1.0);
        tree.backpropagate(b, 0.0);
        assert!(tree.exhausted(a));
        assert_eq!(tree.action_mean(2), Some(1.0));
        let chosen = tree.select_guided(&Guidance {
            exploration: 0.0,
            first_play: 0.0,
        });
        // Under b, action 2 is valued at its mean under a and beats
        // action 3, which nothing is known of.
        assert_eq!(
            chosen,
            Selected {
                node: b,
                expand: Some(2)
            }
        );
    }

    #[test]
    fn exhausted_subtrees_are_skipped_and_a_full_tree_is_exhausted() {
        let mut tree = Tree::new((), vec![0, 1]);
        let done = tree.add_child(Tree::<()>::ROOT, 0, (), vec![], true);
        let open = tree.add_child(Tree::<()>::ROOT, 1, (), vec![7], false);
        tree.backpropagate(done, 1.0);
        tree.backpropagate(open, 0.0);
        // The terminal child has the higher UCT but nothing left to learn.
        assert_eq!(tree.select(1.4), open);
        assert!(!tree.exhausted(Tree::<()>::ROOT));
        tree.add_child(open, 7, (), vec![], true);
        assert!(tree.exhausted(Tree::<()>::ROOT));
    }
}
