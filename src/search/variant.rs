//! A short description of a search configuration (method, budget and every
//! setting that differs from the defaults), so that runs can be told apart
//! and grouped into series when they are reported side by side.

use super::mcts::{Design, MctsConfig};
use super::{FunctionUse, IesrConfig, Method, SearchConfig};
use crate::action::{ActionSet, Frame};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// `greedy`, `sc` or `iesr`.
    pub method: String,
    /// Model-call budget the method is swept over: rollouts for iesr,
    /// samples for sc, 1 for greedy.
    pub budget: usize,
    /// Settings that differ from the defaults, written as the flags that set
    /// them (`no-understanding`, `disable-action A3`, `weights 0.5,0,0.5`).
    pub changes: Vec<String>,
}

impl Variant {
    /// The series a run belongs to: its method and its changes, without the
    /// budget.
    pub fn series(&self) -> String {
        std::iter::once(self.method.clone())
            .chain(self.changes.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The series and the budget, e.g. `iesr no-compression @8`.
    pub fn label(&self) -> String {
        format!("{} @{}", self.series(), self.budget)
    }
}

impl SearchConfig {
    pub fn variant(&self) -> Variant {
        let (method, budget, mut changes) = match self.method {
            Method::Greedy => ("greedy", 1, Vec::new()),
            Method::SelfConsistency {
                samples,
                temperature,
            } => {
                let changes = if temperature == super::DEFAULT_SC_TEMPERATURE {
                    Vec::new()
                } else {
                    vec![format!("temperature {temperature}")]
                };
                ("sc", samples, changes)
            }
            Method::Iesr => (
                "iesr",
                self.iesr.mcts.rollouts,
                tree_search_changes(&self.iesr),
            ),
            Method::Read => {
                let chars = self.read_chars;
                let changes = if chars == super::DEFAULT_READ_CHARS {
                    Vec::new()
                } else {
                    vec![format!("read-chars {chars}")]
                };
                ("read", 1, changes)
            }
        };
        match self.focus_tokens {
            None => changes.insert(0, "no-focus".to_string()),
            Some(tokens) if tokens != super::DEFAULT_FOCUS_TOKENS => {
                changes.insert(0, format!("focus-tokens {tokens}"))
            }
            Some(_) => {}
        }
        if self.feedback_rounds != super::DEFAULT_FEEDBACK_ROUNDS {
            changes.insert(0, format!("feedback-rounds {}", self.feedback_rounds));
        }
        let chooses = matches!(self.method, Method::SelfConsistency { .. } | Method::Iesr);
        if chooses && !self.iesr.select.review {
            changes.insert(0, "no-review".to_string());
        }
        if self.min_p != super::DEFAULT_MIN_P {
            changes.insert(0, format!("min-p {}", self.min_p));
        }
        if !self.query_first {
            changes.insert(0, "no-query-first".to_string());
        }
        if self.name_constraint && !self.redecode {
            changes.insert(0, "no-redecode".to_string());
        }
        if !self.name_constraint {
            changes.insert(0, "no-name-constraint".to_string());
        }
        match self.functions {
            FunctionUse::Off => {}
            FunctionUse::Called => changes.insert(0, "functions".to_string()),
            FunctionUse::First => changes.insert(0, "functions-first".to_string()),
        }
        if !self.read_fallback {
            changes.insert(0, "no-read-fallback".to_string());
        }
        if !self.mentioned_values {
            changes.insert(0, "no-mentioned-values".to_string());
        }
        if let Some(demonstrations) = &self.demonstrations {
            let retrieval = &demonstrations.retrieval;
            let defaults = crate::memory::Retrieval::default();
            if retrieval.tokens != defaults.tokens {
                changes.insert(0, format!("memory-tokens {}", retrieval.tokens));
            }
            if retrieval.examples != defaults.examples {
                changes.insert(0, format!("memory-examples {}", retrieval.examples));
            }
            let name = demonstrations.memory.path().file_name().unwrap_or_default();
            changes.insert(0, format!("memory {}", name.to_string_lossy()));
        }
        Variant {
            method: method.to_string(),
            budget,
            changes,
        }
    }
}

fn tree_search_changes(config: &IesrConfig) -> Vec<String> {
    let defaults = IesrConfig::default();
    let mut changes = Vec::new();
    let paper = config.mcts.design == Design::Paper;
    if paper {
        changes.push("search paper".to_string());
    }
    match &config.understand {
        None => changes.push("no-understanding".to_string()),
        Some(understand) => {
            for (on, flag) in [
                (understand.verification, "no-verification"),
                (understand.compression, "no-compression"),
                (understand.embedding, "no-embedding"),
            ] {
                if !on {
                    changes.push(flag.to_string());
                }
            }
        }
    }
    let builtin = ActionSet::builtin();
    for action in builtin.iter() {
        // The paper's search has no direct query by design.
        let by_design = paper && action.frame == Frame::Direct;
        if config.actions.index_of(&action.id).is_none() && !by_design {
            changes.push(format!("disable-action {}", action.id));
        }
    }
    // Actions read from `--actions DIR` that are not the shipped ones: a
    // changed prompt or sampling setting makes another search.
    for action in config.actions.iter() {
        match builtin.index_of(&action.id) {
            Some(i) if builtin.get(i) == action => {}
            Some(_) => changes.push(format!("changed-action {}", action.id)),
            None => changes.push(format!("added-action {}", action.id)),
        }
    }
    if !config.select.discriminator {
        changes.push("no-discriminator".to_string());
    }
    let w = config.select.weights;
    if w != defaults.select.weights {
        changes.push(format!("weights {},{},{}", w.exec, w.disc, w.vote));
    }
    let design_defaults = match config.mcts.design {
        Design::Guided => MctsConfig::default(),
        Design::Paper => MctsConfig::paper(),
    };
    let (mcts, default_mcts) = (&config.mcts, &design_defaults);
    if mcts.exploration != default_mcts.exploration {
        changes.push(format!("exploration {}", mcts.exploration));
    }
    if mcts.agreement_samples != default_mcts.agreement_samples {
        changes.push(format!("agreement-samples {}", mcts.agreement_samples));
    }
    if mcts.max_depth != default_mcts.max_depth {
        changes.push(format!("max-depth {}", mcts.max_depth));
    }
    if !paper && mcts.first_play != default_mcts.first_play {
        changes.push(format!("first-play {}", mcts.first_play));
    }
    if !paper && mcts.settle != default_mcts.settle {
        changes.push(format!("settle {}", mcts.settle));
    }
    if let (false, Some(threshold)) = (paper, mcts.greedy_confidence) {
        changes.push(format!("greedy-confidence {threshold}"));
    }
    if !paper && mcts.reasoning_fallback != default_mcts.reasoning_fallback {
        let flag = if mcts.reasoning_fallback { "" } else { "no-" };
        changes.push(format!("{flag}reasoning-fallback"));
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::Weights;

    #[test]
    fn defaults_have_no_changes() {
        let iesr = SearchConfig {
            method: Method::Iesr,
            ..SearchConfig::default()
        };
        assert_eq!(iesr.variant().label(), "iesr @8");
        let sc = SearchConfig {
            method: Method::SelfConsistency {
                samples: 4,
                temperature: 0.8,
            },
            ..SearchConfig::default()
        };
        assert_eq!(sc.variant().label(), "sc @4");
        assert_eq!(SearchConfig::default().variant().label(), "greedy @1");
        let free = SearchConfig {
            name_constraint: false,
            ..SearchConfig::default()
        };
        assert_eq!(free.variant().label(), "greedy no-name-constraint @1");
        let given_up = SearchConfig {
            redecode: false,
            ..SearchConfig::default()
        };
        assert_eq!(given_up.variant().label(), "greedy no-redecode @1");
        let whole = SearchConfig {
            focus_tokens: None,
            ..SearchConfig::default()
        };
        assert_eq!(whole.variant().label(), "greedy no-focus @1");
        let unlinked = SearchConfig {
            mentioned_values: false,
            ..SearchConfig::default()
        };
        assert_eq!(unlinked.variant().label(), "greedy no-mentioned-values @1");
    }

    #[test]
    fn ablations_are_named_by_their_flags() {
        let mut config = SearchConfig {
            method: Method::Iesr,
            ..SearchConfig::default()
        };
        config.iesr.understand.as_mut().unwrap().compression = false;
        config.iesr.actions = ActionSet::builtin().without(&["A3".to_string()]).unwrap();
        config.iesr.select.weights = Weights {
            exec: 0.5,
            disc: 0.0,
            vote: 0.5,
        };
        config.iesr.mcts.rollouts = 4;
        let variant = config.variant();
        assert_eq!(
            variant.changes,
            ["no-compression", "disable-action A3", "weights 0.5,0,0.5"]
        );
        assert_eq!(variant.budget, 4);
        assert_eq!(
            variant.series(),
            "iesr no-compression disable-action A3 weights 0.5,0,0.5"
        );
        config.iesr.understand = None;
        assert_eq!(config.variant().changes[0], "no-understanding");

        // The paper's search is named once, not by the action it lacks.
        let mut paper = SearchConfig {
            method: Method::Iesr,
            ..SearchConfig::default()
        };
        paper.iesr.mcts = MctsConfig::paper();
        paper.iesr.actions = ActionSet::builtin().without_direct().unwrap();
        assert_eq!(paper.variant().label(), "iesr search paper @8");
    }

    #[test]
    fn changed_settings_outside_the_flags_are_named_too() {
        let sc = |temperature| SearchConfig {
            method: Method::SelfConsistency {
                samples: 8,
                temperature,
            },
            ..SearchConfig::default()
        };
        assert_eq!(sc(0.8).variant().label(), "sc @8");
        assert_eq!(sc(0.5).variant().label(), "sc temperature 0.5 @8");

        // The shipped action files, one with its sampling changed, one new.
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir("actions").unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace("temperature = 0.8", "temperature = 0.5");
            std::fs::write(dir.path().join(path.file_name().unwrap()), text).unwrap();
        }
        let mut search = SearchConfig {
            method: Method::Iesr,
            ..SearchConfig::default()
        };
        search.iesr.actions = ActionSet::load_dir(std::path::Path::new("actions")).unwrap();
        assert_eq!(search.variant().label(), "iesr @8");
        search.iesr.actions = ActionSet::load_dir(dir.path()).unwrap();
        assert_eq!(search.variant().label(), "iesr changed-action A0 @8");
        let extra = std::fs::read_to_string("actions/a5_sql_generation.toml")
            .unwrap()
            .replace("id = \"A5\"", "id = \"A7\"");
        std::fs::write(dir.path().join("a7_extra.toml"), extra).unwrap();
        search.iesr.actions = ActionSet::load_dir(dir.path()).unwrap();
        assert_eq!(
            search.variant().label(),
            "iesr changed-action A0 added-action A7 @8"
        );
        search.iesr.actions = ActionSet::load_dir(std::path::Path::new("actions")).unwrap();
        search.iesr.mcts.greedy_confidence = Some(-0.1);
        assert_eq!(search.variant().label(), "iesr greedy-confidence -0.1 @8");
    }
}
