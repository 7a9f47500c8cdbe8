//! Reasoning actions as data: each file in `actions/` gives an action's
//! prompt, sampling, when it is valid, how its output is parsed and which
//! state slot it writes. The built-in files (the paper's six and the direct
//! query) are compiled in; `--actions DIR` loads a folder instead, so adding
//! or tuning an action needs no Rust.

use crate::error::{Error, Result};
use crate::search::extract::extract_sql;
use crate::understand::literal::parse_value;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The slot SQL-writing actions fill; trajectories end on it.
pub const SQL_SLOT: &str = "sql";

const BUILTIN: [(&str, &str); 7] = [
    (
        "a0_direct_query.toml",
        include_str!("../actions/a0_direct_query.toml"),
    ),
    (
        "a1_equation_analysis.toml",
        include_str!("../actions/a1_equation_analysis.toml"),
    ),
    (
        "a2_schema_selection.toml",
        include_str!("../actions/a2_schema_selection.toml"),
    ),
    (
        "a3_identify_columns.toml",
        include_str!("../actions/a3_identify_columns.toml"),
    ),
    (
        "a4_entity_extraction.toml",
        include_str!("../actions/a4_entity_extraction.toml"),
    ),
    (
        "a5_sql_generation.toml",
        include_str!("../actions/a5_sql_generation.toml"),
    ),
    (
        "a6_sql_revision.toml",
        include_str!("../actions/a6_sql_revision.toml"),
    ),
];

/// How an action's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// Free text, kept as written.
    Text,
    /// A JSON (or Python-literal) value, kept in compact JSON.
    Json,
    /// A SQL query, executed and shown with its result.
    Sql,
}

/// When an SQL-writing action ends the trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalRule {
    /// The query runs without error.
    Executes,
    /// The query runs and returns at least one row.
    Rows,
    /// The query runs and returns a row with at least one non-NULL value.
    Plausible,
}

/// What a step's prompt is built on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Frame {
    /// The reasoning chat: schema as stage 1 left it, its notes, and every
    /// earlier step as a turn.
    #[default]
    Reasoning,
    /// The prompt of greedy and sc (the whole schema and the question), so
    /// the step is one of their samples. Such an action opens a trajectory.
    Direct,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSampling {
    pub temperature: f32,
    pub max_tokens: usize,
    #[serde(default)]
    pub stop: Vec<String>,
    /// The first rows of a repeatable action's samples decode at
    /// temperature 0 (`Sampling::greedy_rows`).
    #[serde(default)]
    pub greedy_rows: usize,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Short id used by flags, e.g. `A5`.
    pub id: String,
    pub name: String,
    pub output: OutputKind,
    /// The state slot the output is stored in.
    pub writes: String,
    /// Slots that must be filled for the action to be valid.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Slots that must still be empty.
    #[serde(default)]
    pub forbids: Vec<String>,
    /// At most once per trajectory.
    #[serde(default = "default_once")]
    pub once: bool,
    /// For SQL actions: when the trajectory may end here.
    #[serde(default)]
    pub terminal: Option<TerminalRule>,
    #[serde(default)]
    pub frame: Frame,
    /// May be taken again at the same node, each time as a new child (a new
    /// sample of the same prompt).
    #[serde(default)]
    pub repeat: bool,
    /// Samples drawn per call of a repeated action; later expansions take
    /// the ones already drawn.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Relative probability of this action in simulation.
    #[serde(default = "default_weight")]
    pub rollout_weight: f64,
    /// The step's instruction: the end of the user turn that asks for it.
    pub prompt: String,
    pub sampling: ActionSampling,
}

fn default_once() -> bool {
    true
}

fn default_weight() -> f64 {
    1.0
}

fn default_batch() -> usize {
    1
}

/// What one application of an action produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepOutput {
    /// The answer as the model wrote it, trimmed; later steps see it.
    pub text: String,
    /// The query, for SQL actions whose output held one.
    pub sql: Option<String>,
    /// Why the output could not be read as the action's kind, if it could not.
    pub parse_error: Option<String>,
    /// The query as the model first wrote it, when names were fixed in
    /// place or the query was written again past a missing name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_from: Option<String>,
}

impl Action {
    /// Whether the action may follow a trajectory that has filled `slots`
    /// and used `used` actions.
    pub fn valid_after(&self, index: usize, used: &[usize], slots: &[&str]) -> bool {
        let opens = self.frame == Frame::Direct;
        (!opens || used.is_empty())
            && (!self.once || !used.contains(&index))
            && self.requires.iter().all(|s| slots.contains(&s.as_str()))
            && !self.forbids.iter().any(|s| slots.contains(&s.as_str()))
    }

    /// Reads a completion as this action's output. Never fails: what cannot
    /// be read is kept as text with the reason.
    pub fn parse(&self, completion: &str) -> StepOutput {
        let text = completion.trim().to_string();
        match self.output {
            OutputKind::Text => StepOutput {
                text,
                ..StepOutput::default()
            },
            OutputKind::Json => StepOutput {
                parse_error: parse_value(&text).err(),
                text,
                ..StepOutput::default()
            },
            OutputKind::Sql => {
                let sql = extract_sql(&text);
                StepOutput {
                    parse_error: sql
                        .is_none()
                        .then(|| "no SQL query in the output".to_string()),
                    text,
                    sql,
                    fixed_from: None,
                }
            }
        }
    }

    fn weight_positive(&self) -> bool {
        self.rollout_weight > 0.0
    }

    fn check(&self, source: &str) -> Result<()> {
        let problem = if self.output == OutputKind::Sql && self.writes != SQL_SLOT {
            Some(format!("an sql action must write the `{SQL_SLOT}` slot"))
        } else if self.output != OutputKind::Sql && self.terminal.is_some() {
            Some("only sql actions can end a trajectory".to_string())
        } else if self.rollout_weight.is_nan() || self.rollout_weight < 0.0 {
            Some("rollout_weight must be zero or more".to_string())
        } else if self.id.trim().is_empty() {
            Some("the id is empty".to_string())
        } else if self.batch == 0 {
            Some("batch must be at least 1".to_string())
        } else if self.frame == Frame::Direct && self.output != OutputKind::Sql {
            Some("a direct-frame action must write a query".to_string())
        } else {
            None
        };
        match problem {
            Some(p) => Err(Error::InvalidArgument(format!("action file {source}: {p}"))),
            None => Ok(()),
        }
    }
}

/// The actions a search may take, in a fixed order (their indices are the
/// tree's action numbers).
#[derive(Debug, Clone)]
pub struct ActionSet {
    actions: Vec<Action>,
}

impl ActionSet {
    /// The six actions shipped with the engine.
    pub fn builtin() -> Self {
        let actions = BUILTIN
            .iter()
            .map(|(name, text)| parse_action(name, text).expect("built-in actions are valid"))
            .collect();
        ActionSet::new(actions).expect("built-in actions are valid")
    }

    /// Every `*.toml` in `dir`, in file-name order.
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        let actions = files
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
                parse_action(&path.display().to_string(), &text)
            })
            .collect::<Result<Vec<_>>>()?;
        ActionSet::new(actions)
    }

    fn new(actions: Vec<Action>) -> Result<Self> {
        let can_start_sql = actions
            .iter()
            .any(|a| a.output == OutputKind::Sql && a.weight_positive() && a.requires.is_empty());
        if !can_start_sql {
            return Err(Error::InvalidArgument(
                "the actions need one sql action without requirements, or no trajectory can produce a query".into(),
            ));
        }
        for (i, a) in actions.iter().enumerate() {
            if actions[..i]
                .iter()
                .any(|b| b.id.eq_ignore_ascii_case(&a.id))
            {
                return Err(Error::InvalidArgument(format!(
                    "two actions share the id {}",
                    a.id
                )));
            }
        }
        Ok(ActionSet { actions })
    }

    /// The set without the actions whose ids are given (case-insensitive).
    pub fn without(&self, ids: &[String]) -> Result<Self> {
        for id in ids {
            if self.index_of(id).is_none() {
                let known: Vec<&str> = self.actions.iter().map(|a| a.id.as_str()).collect();
                return Err(Error::InvalidArgument(format!(
                    "unknown action `{id}`; the actions are {}",
                    known.join(", ")
                )));
            }
        }
        let kept = self
            .actions
            .iter()
            .filter(|a| !ids.iter().any(|id| id.eq_ignore_ascii_case(&a.id)))
            .cloned()
            .collect();
        ActionSet::new(kept).map_err(|_| {
            Error::InvalidArgument(format!(
                "cannot disable {}: no action would be left to write SQL",
                ids.join(", ")
            ))
        })
    }

    /// The set without its direct-frame actions: the paper's search.
    pub fn without_direct(&self) -> Result<Self> {
        let direct: Vec<String> = self
            .actions
            .iter()
            .filter(|a| a.frame == Frame::Direct)
            .map(|a| a.id.clone())
            .collect();
        self.without(&direct)
    }

    pub fn get(&self, index: usize) -> &Action {
        &self.actions[index]
    }

    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter()
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.actions
            .iter()
            .position(|a| a.id.eq_ignore_ascii_case(id))
    }

    /// Indices of the actions valid after a trajectory that used `used` and
    /// filled `slots`.
    pub fn valid_after(&self, used: &[usize], slots: &[&str]) -> Vec<usize> {
        (0..self.actions.len())
            .filter(|&i| self.actions[i].valid_after(i, used, slots))
            .collect()
    }
}

fn parse_action(source: &str, text: &str) -> Result<Action> {
    let action: Action = toml::from_str(text).map_err(|e| {
        Error::InvalidArgument(format!(
            "action file {source} is not valid: {}",
            crate::error::first_line(e)
        ))
    })?;
    action.check(source)?;
    Ok(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_actions_load_with_their_rules() {
        let set = ActionSet::builtin();
        let ids: Vec<&str> = set.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["A0", "A1", "A2", "A3", "A4", "A5", "A6"]);
        // At the root every action but the revision is valid.
        assert_eq!(set.valid_after(&[], &[]), vec![0, 1, 2, 3, 4, 5]);
        // After a draft query only the revision is.
        assert_eq!(set.valid_after(&[1, 5], &["formulas", "sql"]), vec![6]);
        // The direct query opens a trajectory or not at all.
        assert_eq!(set.valid_after(&[1], &["formulas"]), vec![2, 3, 4, 5]);
        assert_eq!(set.valid_after(&[0], &["sql"]), vec![6]);
        // And each at most once per trajectory.
        assert!(set.valid_after(&[5, 6], &["sql"]).is_empty());
        let direct = set.get(0);
        assert!(direct.repeat && direct.batch > 1);
        assert_eq!(direct.terminal, Some(TerminalRule::Plausible));
    }

    #[test]
    fn outputs_are_parsed_by_kind() {
        let set = ActionSet::builtin();
        let action = |id: &str| set.get(set.index_of(id).unwrap());
        let selection = action("A2").parse("Need singer.\n{'tables': ['singer']}");
        assert_eq!(selection.text, "Need singer.\n{'tables': ['singer']}");
        assert_eq!(selection.parse_error, None);
        let broken = action("A2").parse("just singer");
        assert_eq!(broken.text, "just singer");
        assert!(broken.parse_error.is_some());
        let sql = action("A5").parse("1. count\n<sql>SELECT count(*) FROM singer");
        assert_eq!(sql.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert!(action("A5").parse("no idea").parse_error.is_some());
    }

    #[test]
    fn disabling_actions_and_its_limits() {
        let set = ActionSet::builtin();
        let fewer = set.without(&["a1".into(), "A6".into()]).unwrap();
        assert_eq!(fewer.len(), 5);
        assert_eq!(fewer.index_of("A5"), Some(4));
        let err = set.without(&["A9".into()]).unwrap_err().to_string();
        assert!(err.contains("unknown action `A9`"), "{err}");
        assert_eq!(set.without_direct().unwrap().len(), 6);
        let err = set
            .without(&["A0".into(), "A5".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no action would be left to write SQL"),
            "{err}"
        );
    }

    #[test]
    fn a_folder_of_action_files_replaces_the_builtins() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in BUILTIN.iter().skip(5) {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let seventh = "id = \"A7\"\nname = \"aggregation_check\"\noutput = \"text\"\nwrites = \"aggregations\"\nforbids = [\"sql\"]\nprompt = \"Step: say which aggregations the question needs.\"\n[sampling]\ntemperature = 0.5\nmax_tokens = 64\n";
        std::fs::write(dir.path().join("a7_aggregation.toml"), seventh).unwrap();
        let set = ActionSet::load_dir(dir.path()).unwrap();
        let ids: Vec<&str> = set.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["A5", "A6", "A7"]);
        assert_eq!(set.valid_after(&[2], &["aggregations"]), vec![0]);

        std::fs::write(dir.path().join("bad.toml"), "id = \"A8\"\n").unwrap();
        let err = ActionSet::load_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("bad.toml is not valid"), "{err}");
    }
}
