//! The full method on one question: stage 1 (understanding), stage 2 (tree
//! search) and stage 3 (selection), each recorded in the trace.

use super::functions::FunctionWriter;
use super::mcts::{NodeState, RolloutProgress, Search};
use super::reasoner::{QuestionContext, Reasoner};
use super::tree::Tree;
use super::{Answer, Engine};
use crate::error::Result;
use crate::llm::embed;
use crate::select;
use crate::trace::{CandidateRecord, Execution, Trace, TreeNodeRecord};
use crate::understand::embedding::ColumnEmbeddings;
use crate::understand::linking::ValueIndex;
use crate::understand::{self, Inputs};
use std::sync::Arc;

/// Seeds of the three stages, apart so that they never share draws.
const SELECT_SEED_MIX: u64 = 0x5E1E_C7ED;

impl Engine {
    pub(super) fn answer_by_search(
        &self,
        question: &str,
        hint: Option<&str>,
        mut trace: Trace,
        on_rollout: &mut dyn FnMut(RolloutProgress),
    ) -> Result<Answer> {
        let config = &self.config.iesr;
        let seed = self.config.seed;
        let direct = self.direct_material(question, hint, &mut trace)?;
        let functions = FunctionWriter::new(self, question);
        let plain = QuestionContext {
            schema: direct.schema.clone(),
            direct,
            question: question.to_string(),
            hint: hint.map(String::from),
            understanding: String::new(),
            names: Arc::clone(&self.names),
            constraint: self.constraint.clone(),
            direct_constraint: self.direct_constraint.clone(),
            redecode: self.config.redecode,
            min_p: self.config.min_p,
        };
        // The guided search first draws a batch of direct samples, which
        // need no understanding; when one of them runs to a result with a
        // value (or there is no reasoning fallback), the search goes on
        // sampling and stage 1 is not run at all.
        let (samples, sample_calls) = Search {
            reasoner: Reasoner {
                actions: &config.actions,
                executor: &self.executor,
                context: &plain,
                functions: functions.as_ref(),
            },
            model: self.model.as_ref(),
            config: &config.mcts,
            seed,
        }
        .first_samples()?;
        let understand = config
            .understand
            .as_ref()
            .filter(|_| !samples.suffice(&config.mcts));

        let context = match understand {
            Some(understand_config) => {
                let index = self.value_index()?;
                let embeddings = if understand_config.embedding {
                    self.column_embeddings()
                } else {
                    Err("switched off".to_string())
                };
                let (schema, full_schema) = self.shown_schema();
                let inputs = Inputs {
                    schema,
                    full_schema,
                    index,
                    embeddings,
                    rules: &config.rules,
                    question,
                    hint,
                    schema_chars: self.config.schema_chars,
                };
                let (found, record, call) =
                    understand::understand(self.model.as_ref(), &inputs, understand_config, seed)?;
                trace.cost.add(&call.usage);
                trace.calls.push(call);
                trace.understanding = Some(record);
                QuestionContext {
                    schema: found.schema_text,
                    understanding: found.notes,
                    ..plain
                }
            }
            None => plain,
        };
        let reasoner = Reasoner {
            actions: &config.actions,
            executor: &self.executor,
            context: &context,
            functions: functions.as_ref(),
        };
        let search = Search {
            reasoner,
            model: self.model.as_ref(),
            config: &config.mcts,
            seed,
        };
        let result = search.run_from(samples, sample_calls, on_rollout)?;
        for call in result.calls {
            trace.cost.add(&call.usage);
            trace.calls.push(call);
        }

        let selection = select::select(
            &result.tree,
            &reasoner,
            self.judge(),
            &config.select,
            config.mcts.design,
            seed ^ SELECT_SEED_MIX,
        )?;
        for call in selection.calls {
            trace.cost.add(&call.usage);
            trace.calls.push(call);
        }
        if let Some(review) = selection.review {
            trace.cost.add(&review.usage);
            trace.review = review.records;
        }

        trace.tree = tree_records(&result.tree, &config.actions);
        let tree = &result.tree;
        let outcome_of = |node: usize| {
            Search::query_source(tree, node, config.mcts.design)
                .and_then(|s| tree.node(s).payload.step.execution.clone())
        };
        for candidate in &selection.candidates {
            let outcome = outcome_of(candidate.node);
            let votes = (candidate.vote * selection.candidates.len() as f64).round() as usize;
            trace.candidates.push(CandidateRecord {
                sql: candidate.sql.clone(),
                execution: outcome.as_ref().map(Execution::from_outcome).unwrap_or(
                    Execution::Failed {
                        error: "not executed".into(),
                    },
                ),
                votes,
                score: candidate.score,
            });
        }
        let winner = selection.winner.map(|i| &selection.candidates[i]);
        let sql = winner.map(|w| w.sql.clone());
        let outcome = winner.and_then(|w| outcome_of(w.node));
        let confidence = match &outcome {
            Some(Ok(_)) => selection.confidence,
            _ => 0.0,
        };
        trace.selection = selection.candidates;
        let result = outcome.as_ref().and_then(|o| o.as_ref().ok().cloned());
        if result.is_none() {
            // No trajectory ended with a query that runs: one direct
            // generation (the greedy baseline's call, recorded in the trace,
            // its misspelt names fixed as greedy's are) answers instead when
            // its query runs.
            let mut direct = self.answer_by_vote(question, hint, 1, 0.0, trace)?;
            if direct.result.is_some() {
                // It runs, and nothing else was checked: the Exec term alone.
                direct.confidence = config.select.weights.exec;
                return Ok(direct);
            }
            if sql.is_none() {
                return Ok(direct);
            }
            trace = direct.trace;
        }
        Ok(Answer {
            sql,
            result,
            error: outcome
                .as_ref()
                .and_then(|o| o.as_ref().err().map(|e| e.to_string())),
            confidence,
            trace,
        })
    }
}

impl Engine {
    /// The schema-linking index of this engine's database, built (or read
    /// from the cache) on first use: hashing the file and loading the index
    /// is not repeated for every question.
    pub(super) fn value_index(&self) -> Result<&ValueIndex> {
        if let Some(index) = self.value_index.get() {
            return Ok(index);
        }
        let built = ValueIndex::for_database(
            self.executor.path(),
            &self.schema,
            self.plain_names.as_ref(),
            &self.config.iesr.index_dir,
        )?;
        Ok(self.value_index.get_or_init(|| built))
    }

    /// The database's columns embedded by the default sentence encoder,
    /// pulled on first use. Failing that, the reason, and stage 1 goes on
    /// without the embedding ranking.
    pub(super) fn column_embeddings(&self) -> std::result::Result<&ColumnEmbeddings, String> {
        let built = self.column_embeddings.get_or_init(|| {
            let dir = embed::pull_default().map_err(|e| e.to_string())?;
            let encoder = embed::SentenceEncoder::load(&dir, &candle_core::Device::Cpu)
                .map_err(|e| e.to_string())?;
            ColumnEmbeddings::build(encoder, &self.schema).map_err(|e| e.to_string())
        });
        built.as_ref().map_err(Clone::clone)
    }
}

fn tree_records(tree: &Tree<NodeState>, actions: &crate::action::ActionSet) -> Vec<TreeNodeRecord> {
    tree.nodes()
        .map(|(id, node)| {
            let step = &node.payload.step;
            let output = step.output.as_ref();
            TreeNodeRecord {
                id,
                parent: node.parent,
                action: node.action.map(|a| actions.get(a).id.clone()),
                depth: node.depth,
                visits: node.visits,
                value: node.value,
                terminal: node.terminal,
                reward: node.reward,
                output: output.map(|o| o.text.clone()),
                parse_error: output.and_then(|o| o.parse_error.clone()),
                sql: step.sql().map(String::from),
                execution: step.execution.as_ref().map(Execution::from_outcome),
                reward_samples: node.payload.reward_samples.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::mcts::tests::{concert_singer, step_of};
    use super::super::{Engine, IesrConfig, Method, SearchConfig};
    use crate::llm::scripted::ScriptedModel;
    use crate::select::Weights;
    use std::sync::Arc;

    fn engine(model: ScriptedModel, iesr: IesrConfig) -> Engine {
        let config = SearchConfig {
            method: Method::Iesr,
            iesr,
            ..SearchConfig::default()
        };
        Engine::new(Arc::new(model), &concert_singer(), config).unwrap()
    }

    /// The published search (the guided one has tests of its own).
    fn config(index_dir: &std::path::Path) -> IesrConfig {
        let defaults = IesrConfig::default();
        let mut config = IesrConfig {
            index_dir: index_dir.to_path_buf(),
            actions: defaults.actions.without_direct().unwrap(),
            ..defaults
        };
        config.mcts = crate::search::mcts::MctsConfig::paper();
        // The sentence encoder is a real model: its test is in tests/.
        config.understand.as_mut().unwrap().embedding = false;
        config
    }

    /// Understanding names the singer table; SQL generation counts singers
    /// (6) when it has seen the schema selection and otherwise counts French
    /// singers (4); the revision counts singers.
    fn model() -> ScriptedModel {
        ScriptedModel::responding(|prompt, _| {
            if step_of(prompt) == "question analysis" {
                return "{'intent': 'count_singers', 'entities': ['France'], 'tables': ['singer', 'planet'], 'columns': ['singer.Singer_ID']}".into();
            }
            match step_of(prompt) {
                "schema selection" => r#"{"tables": ["singer"]}"#.into(),
                "SQL generation" if prompt.contains("Step: schema selection") => {
                    "<sql>SELECT count(*) FROM singer".into()
                }
                "SQL generation" => {
                    "<sql>SELECT count(*) FROM singer WHERE Country = 'France'".into()
                }
                "SQL revision" => "<sql>SELECT count(*) FROM singer".into(),
                _ => "none".into(),
            }
        })
    }

    #[test]
    fn stage_one_reads_a_wide_tables_numbers_without_examples() {
        let dir = tempfile::tempdir().unwrap();
        let stores = super::super::tests::wide_stores(dir.path());
        let model = ScriptedModel::responding(|prompt, _| match step_of(prompt) {
            "question analysis" => "{'intent': 'count', 'tables': ['store_stats']}".into(),
            "SQL generation" | "SQL revision" => "<sql>SELECT count(*) FROM store_stats".into(),
            _ => "none".into(),
        });
        let config = SearchConfig {
            method: Method::Iesr,
            iesr: config(dir.path()),
            ..SearchConfig::default()
        };
        let answer = Engine::new(Arc::new(model), &stores, config)
            .unwrap()
            .answer("How many stores are there?", None)
            .unwrap();
        let understanding = answer
            .trace
            .calls
            .iter()
            .find(|c| c.stage.starts_with("understanding"))
            .unwrap();
        let prompt = &understanding.prompt[1].content;
        assert!(prompt.contains("  profit_2010 REAL,\n"), "{prompt}");
        assert!(prompt.contains("  city TEXT, -- e.g."), "{prompt}");
    }

    #[test]
    fn all_three_stages_run_and_are_traced() {
        let dir = tempfile::tempdir().unwrap();
        let answer = engine(model(), config(dir.path()))
            .answer("How many singers do we have?", None)
            .unwrap();
        let trace = &answer.trace;
        let understanding = trace.understanding.as_ref().expect("stage 1 ran");
        assert_eq!(understanding.state.intent, "count_singers");
        let verification = understanding.verification.as_ref().unwrap();
        assert!(verification.dropped.iter().any(|c| c.claim == "planet"));
        assert!(understanding
            .links
            .iter()
            .any(|l| l.value.as_deref() == Some("France")));
        assert!(understanding.notes.contains("singer.Country = 'France'"));
        // Stage 2's prompts carry stage 1's notes.
        let search_call = trace
            .calls
            .iter()
            .find(|c| c.stage.starts_with("search"))
            .unwrap();
        assert!(search_call.prompt[1].content.contains("Stored values"));
        assert!(trace.tree.len() > 1);
        assert!(trace.calls.iter().any(|c| c.stage.starts_with("reward")));
        assert!(trace
            .calls
            .iter()
            .any(|c| c.stage.starts_with("discriminator")));
        assert_eq!(trace.selection.len(), trace.candidates.len());
        // Scores follow the weights.
        for c in &trace.selection {
            let expected = 0.4 * c.exec + 0.2 * c.disc.unwrap() + 0.4 * c.vote;
            assert!((c.score - expected).abs() < 1e-12);
        }
        // The answer is a best-scoring candidate.
        let best = trace.selection.iter().map(|c| c.score).fold(0.0, f64::max);
        let chosen = trace
            .selection
            .iter()
            .find(|c| Some(&c.sql) == answer.sql.as_ref())
            .unwrap();
        assert_eq!(chosen.score, best);
        assert_eq!(answer.confidence, best);
        assert_eq!(trace.cost.calls, trace.calls.len());
    }

    #[test]
    fn a_search_without_a_running_query_falls_back_to_one_direct_generation() {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::responding(|prompt, _| {
            if !prompt.contains("Step: ") {
                // The greedy baseline's prompt; the misspelt table is fixed.
                return "```sql\nSELECT count(*) FROM singers\n```".into();
            }
            match step_of(prompt) {
                "SQL generation" | "SQL revision" => "<sql>SELECT max(lift) FROM singer".into(),
                _ => "none".into(),
            }
        });
        let mut iesr = config(dir.path());
        iesr.understand = None;
        let answer = engine(model, iesr)
            .answer("How many singers do we have?", None)
            .unwrap();
        assert_eq!(answer.sql.as_deref(), Some("SELECT count(*) FROM singer"));
        assert!(answer.result.is_some());
        assert_eq!(answer.confidence, 0.4, "the Exec term alone");
        let last = answer.trace.calls.last().unwrap();
        assert_eq!(last.stage, "sql_generation");
        assert_eq!(answer.trace.cost.calls, answer.trace.calls.len());
    }

    /// The guided search, with stage 1 as in [`config`].
    fn guided(index_dir: &std::path::Path) -> IesrConfig {
        let mut config = IesrConfig {
            index_dir: index_dir.to_path_buf(),
            ..IesrConfig::default()
        };
        config.understand.as_mut().unwrap().embedding = false;
        config
    }

    /// Direct samples (greedy's prompt) answer with `direct(row)`; the
    /// reasoning steps as [`model`] does.
    fn with_direct(direct: fn(usize) -> &'static str) -> ScriptedModel {
        let reasoning = model();
        ScriptedModel::responding(move |prompt, i| {
            if prompt.contains("Step: ") {
                let messages = vec![crate::llm::ChatMessage::new("user", prompt)];
                let sampling = crate::llm::Sampling::default();
                let reply = crate::llm::LanguageModel::generate(
                    &reasoning,
                    &crate::llm::Prompt::Chat(messages),
                    &sampling,
                );
                reply.unwrap().completions[0].text.clone()
            } else {
                format!("```sql\n{}\n```", direct(i))
            }
        })
    }

    #[test]
    fn settled_direct_samples_answer_without_stage_one() {
        let dir = tempfile::tempdir().unwrap();
        let model = with_direct(|_| "SELECT count(*) FROM singer");
        let answer = engine(model, guided(dir.path()))
            .answer("How many singers do we have?", None)
            .unwrap();
        assert_eq!(answer.result.unwrap().rows[0][0].to_string(), "6");
        // Every sample agrees: the confidence is the whole vote.
        assert_eq!(answer.confidence, 1.0);
        let trace = &answer.trace;
        assert!(trace.understanding.is_none());
        assert!(trace
            .calls
            .iter()
            .all(|c| !c.stage.starts_with("understanding")));
        assert!(trace
            .tree
            .iter()
            .skip(1)
            .all(|n| n.action.as_deref() == Some("A0")));
        // The direct samples' prompt is greedy's and sc's.
        let greedy = Engine::new(
            Arc::new(ScriptedModel::new(["SELECT 1"])),
            &concert_singer(),
            SearchConfig::default(),
        )
        .unwrap()
        .answer("How many singers do we have?", None)
        .unwrap();
        assert_eq!(trace.calls[0].prompt, greedy.trace.calls[0].prompt);
    }

    #[test]
    fn disagreeing_direct_samples_are_answered_by_more_samples() {
        let dir = tempfile::tempdir().unwrap();
        // Four different answers, each with a value: no two samples agree.
        let model = with_direct(|i| match i % 4 {
            0 => "SELECT count(*) FROM singer WHERE Country = 'France'",
            1 => "SELECT count(*) + 1 FROM singer",
            2 => "SELECT max(Age) FROM singer",
            _ => "SELECT min(Age) FROM singer",
        });
        let answer = engine(model, guided(dir.path()))
            .answer("How many singers do we have?", None)
            .unwrap();
        let trace = &answer.trace;
        assert!(trace.understanding.is_none());
        // Every rollout is a sample: the budget of 8, in two calls of 4.
        let samples: Vec<_> = trace.tree.iter().skip(1).collect();
        assert_eq!(samples.len(), 8);
        assert!(samples.iter().all(|n| n.action.as_deref() == Some("A0")));
        // (A model that cannot score has the discriminator choose.)
        let stages: Vec<&str> = trace
            .calls
            .iter()
            .map(|c| c.stage.as_str())
            .filter(|s| !s.starts_with("discriminator"))
            .collect();
        assert_eq!(stages, ["search A0 samples 0-3", "search A0 samples 4-7"]);
        assert!(answer.result.is_some());
        // The winner's result is two of the eight samples'.
        assert!(
            (answer.confidence - 0.25).abs() < 1e-9,
            "{}",
            answer.confidence
        );
    }

    #[test]
    fn samples_without_a_value_bring_in_stage_one_and_the_reasoning_actions() {
        let dir = tempfile::tempdir().unwrap();
        // Every sample runs to no rows.
        let model = with_direct(|_| "SELECT Name FROM singer WHERE Age > 900");
        let mut iesr = guided(dir.path());
        iesr.mcts.reasoning_fallback = true;
        let answer = engine(model, iesr)
            .answer("How many singers do we have?", None)
            .unwrap();
        let trace = &answer.trace;
        assert!(trace.understanding.is_some());
        assert!(trace.tree.iter().any(|n| n.action.as_deref() == Some("A5")));
        // A reasoning route's count is the answer, not the empty samples.
        let rows = &answer.result.unwrap().rows;
        assert!(["4", "6"].contains(&rows[0][0].to_string().as_str()));
    }

    #[test]
    fn ablations_switch_their_stage_off() {
        let dir = tempfile::tempdir().unwrap();
        let mut iesr = config(dir.path());
        iesr.understand = None;
        iesr.select.discriminator = false;
        iesr.select.weights = Weights {
            exec: 1.0,
            disc: 0.0,
            vote: 0.0,
        };
        iesr.actions = iesr.actions.without(&["A2".to_string()]).unwrap();
        let answer = engine(model(), iesr)
            .answer("How many singers do we have?", None)
            .unwrap();
        let trace = &answer.trace;
        assert!(trace.understanding.is_none());
        assert!(!trace
            .calls
            .iter()
            .any(|c| c.stage.starts_with("understanding")));
        assert!(!trace
            .calls
            .iter()
            .any(|c| c.stage.starts_with("discriminator")));
        assert!(!trace.tree.iter().any(|n| n.action.as_deref() == Some("A2")));
        assert!(trace
            .selection
            .iter()
            .all(|c| c.disc.is_none() && c.score == c.exec));
        // Without schema selection every first query counts French singers.
        assert_eq!(answer.result.unwrap().rows[0][0].to_string(), "4");
    }
}
