//! Applying one reasoning action to a state: build the prompt from the
//! question context and the steps taken so far, call a model, parse the
//! output, and execute any query it wrote. Shared by the tree search and the
//! discriminator, so both see states the same way.

use super::continuation::continue_reply;
use super::feedback::has_value;
use super::functions::FunctionWriter;
use super::repair::SchemaNames;
use super::DirectMaterial;
use crate::action::{Action, ActionSet, Frame, OutputKind, StepOutput, TerminalRule};
use crate::db::{Executor, QueryOutcome};
use crate::error::Result;
use crate::llm::constraint::Constraint;
use crate::llm::{ChatMessage, FinishReason, LanguageModel, Prompt, Sampling};
use crate::prompts::{REASONING_SYSTEM, REASONING_USER};
use crate::trace::CallRecord;
use crate::understand::text::truncate_chars;
use std::fmt::Write;
use std::sync::Arc;

/// What every prompt of one question starts with.
#[derive(Debug, Clone)]
pub struct QuestionContext {
    /// The schema as reasoning steps see it (stage 1 may have compressed it).
    pub schema: String,
    /// The schema and evidence as greedy and sc see them, for
    /// direct-frame steps.
    pub direct: DirectMaterial,
    pub question: String,
    pub hint: Option<String>,
    /// Stage 1's verified notes, empty when it did not run.
    pub understanding: String,
    /// The full schema's names, for notes on queries that name wrong ones.
    pub names: Arc<SchemaNames>,
    /// The sampling constraint on names, if any.
    pub constraint: Option<Constraint>,
    /// The constraint of direct-frame steps, which write only a query.
    pub direct_constraint: Option<Constraint>,
    /// Write a failed query again from where it went wrong, under the
    /// constraint (when there is one).
    pub redecode: bool,
    /// Min-p of sampled steps (`SearchConfig::min_p`).
    pub min_p: f32,
}

/// One applied action.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// Index into the action set; None for the root.
    pub action: Option<usize>,
    pub output: Option<StepOutput>,
    pub execution: Option<QueryOutcome>,
}

impl Step {
    pub fn sql(&self) -> Option<&str> {
        self.output.as_ref().and_then(|o| o.sql.as_deref())
    }

    /// The slot this step filled, if its output was usable.
    fn filled_slot<'a>(&self, actions: &'a ActionSet) -> Option<&'a str> {
        let action = actions.get(self.action?);
        let output = self.output.as_ref()?;
        let usable = action.output != OutputKind::Sql || output.sql.is_some();
        usable.then_some(action.writes.as_str())
    }
}

#[derive(Clone, Copy)]
pub struct Reasoner<'a> {
    pub actions: &'a ActionSet,
    pub executor: &'a Executor,
    pub context: &'a QuestionContext,
    /// Writes the functions a step's query declares; None when functions
    /// are off.
    pub functions: Option<&'a FunctionWriter<'a>>,
}

impl Reasoner<'_> {
    /// Actions valid after `path` (the steps from the root, root excluded).
    pub fn valid_actions(&self, path: &[&Step]) -> Vec<usize> {
        // A query-writing step that wrote no query may be tried again: it
        // did not do its job, and without a query the trajectory cannot end.
        let (used, slots): (Vec<usize>, Vec<&str>) = path
            .iter()
            .filter_map(|s| Some((s.action?, s.filled_slot(self.actions)?)))
            .unzip();
        self.actions.valid_after(&used, &slots)
    }

    /// Whether a trajectory ends at this step by the action's own rule.
    pub fn ends_trajectory(&self, step: &Step) -> bool {
        let Some(action) = step.action.map(|a| self.actions.get(a)) else {
            return false;
        };
        match (action.terminal, &step.execution) {
            (Some(TerminalRule::Executes), Some(Ok(_))) => true,
            (Some(TerminalRule::Rows), Some(Ok(result))) => result.total_rows > 0,
            (Some(TerminalRule::Plausible), Some(Ok(result))) => result.digest.has_non_null(),
            _ => false,
        }
    }

    /// The chat for `action` after `path`: the question's frame with the
    /// first step's instruction, then each step as the model's answer and a
    /// user turn with its execution feedback and the next instruction. A
    /// child's prompt thus extends its parent's prompt and answer token for
    /// token, so a model that keeps those states computes only the new turn.
    /// A query step that wrote no query is left out: shown its own failed
    /// answer, a small model tends to repeat it.
    pub fn prompt(&self, path: &[&Step], action: &Action) -> Vec<ChatMessage> {
        let answered: Vec<(&Action, &StepOutput, &Step)> = path
            .iter()
            .filter(|step| step.filled_slot(self.actions).is_some())
            .filter_map(|step| {
                let output = step.output.as_ref()?;
                Some((self.actions.get(step.action?), output, *step))
            })
            .collect();
        let first = answered.first().map_or(action, |(a, _, _)| *a);
        let mut messages = match first.frame {
            Frame::Direct => super::direct_prompt(
                &self.context.direct,
                self.context.hint.as_deref(),
                &self.context.question,
                first.prompt.trim(),
            ),
            Frame::Reasoning => {
                let hint = crate::prompts::hint_line(self.context.hint.as_deref());
                vec![
                    ChatMessage::new("system", REASONING_SYSTEM.render(&[])),
                    ChatMessage::new(
                        "user",
                        REASONING_USER.render(&[
                            ("schema", self.context.schema.as_str()),
                            ("hint", hint.as_str()),
                            ("question", self.context.question.as_str()),
                            ("understanding", self.context.understanding.as_str()),
                            ("instruction", first.prompt.trim()),
                        ]),
                    ),
                ]
            }
        };
        let next_instructions = answered
            .iter()
            .skip(1)
            .map(|(a, _, _)| *a)
            .chain(std::iter::once(action));
        for ((step_action, output, step), next) in answered.iter().zip(next_instructions) {
            messages.push(ChatMessage::new(
                "assistant",
                answer_text(step_action, output),
            ));
            let mut turn = self.feedback(step_action, output, step);
            turn.push_str(next.prompt.trim());
            messages.push(ChatMessage::new("user", turn));
        }
        messages
    }

    /// What the engine learnt from a step, ahead of the next instruction:
    /// for a query step, how its query ran; nothing for the others.
    fn feedback(&self, action: &Action, output: &StepOutput, step: &Step) -> String {
        let mut out = String::new();
        // Only query steps that wrote a query are shown, and such a query
        // was always executed.
        let (OutputKind::Sql, Some(sql), Some(outcome)) =
            (&action.output, &output.sql, &step.execution)
        else {
            return out;
        };
        if output.fixed_from.is_some() {
            let _ = writeln!(
                out,
                "Misspelt names in the query were fixed; it ran as:\n```sql\n{sql}\n```"
            );
        }
        let _ = writeln!(out, "Execution: {}", execution_note(outcome));
        if let Err(e) = outcome {
            if let Some(note) = self.context.names.suggest(&e.to_string(), sql) {
                let _ = writeln!(out, "Schema note: {note}");
            }
        }
        out.push('\n');
        out
    }

    /// Applies `action` after `path` with `model`: one call of `n`
    /// completions (the first becomes the step), each query executed. A
    /// query step's answer that ended without a query is continued once
    /// from an opened query tag, in a call of its own; the calls made are
    /// returned in order.
    pub fn apply(
        &self,
        model: &dyn LanguageModel,
        path: &[&Step],
        action_index: usize,
        sampling: &Sampling,
        stage: String,
    ) -> Result<(Vec<Step>, Vec<CallRecord>)> {
        let action = self.actions.get(action_index);
        let prompt = self.prompt(path, action);
        let generation = model.generate(&Prompt::Chat(prompt.clone()), sampling)?;
        let mut outputs = Vec::with_capacity(generation.completions.len());
        // Whether each output's text was cut off rather than ended.
        let mut cut = Vec::with_capacity(generation.completions.len());
        let mut continuations = Vec::new();
        for (row, completion) in generation.completions.iter().enumerate() {
            let mut output = action.parse(&completion.text);
            let mut was_cut = completion.finish_reason != FinishReason::Stop;
            let unfinished = action.output == OutputKind::Sql
                && action.frame == Frame::Reasoning
                && output.sql.is_none()
                && completion.finish_reason == FinishReason::Stop;
            if unfinished {
                let (answer, record) = self.continue_with_query(
                    model,
                    &prompt,
                    &completion.text,
                    sampling,
                    row,
                    &stage,
                )?;
                output = action.parse(&answer);
                was_cut = record.was_cut(0);
                continuations.push(record);
            }
            outputs.push(output);
            cut.push(was_cut);
        }
        let sqls: Vec<&str> = outputs.iter().filter_map(|o| o.sql.as_deref()).collect();
        let mut executions = self.executor.query_many(&sqls).into_iter();
        let steps: Vec<Step> = outputs
            .into_iter()
            .zip(cut)
            .map(|(output, cut)| {
                let execution = output.sql.as_ref().and_then(|_| executions.next());
                let step = Step {
                    action: Some(action_index),
                    execution,
                    output: Some(output),
                };
                self.fix_names(step, cut)
            })
            .collect();
        let mut records = vec![CallRecord::new(
            stage.clone(),
            prompt.clone(),
            sampling,
            generation,
        )];
        records.extend(continuations);
        let steps = steps
            .into_iter()
            .map(|step| self.supply_functions(step, &mut records))
            .collect::<Result<Vec<Step>>>()?;
        // A rescue for the call, never one more vote among its answers.
        let answered = steps
            .iter()
            .any(|s| s.execution.as_ref().is_some_and(has_value));
        if answered {
            return Ok((steps, records));
        }
        let steps = steps
            .into_iter()
            .map(|step| self.redecode_failed(model, &prompt, step, sampling, &stage, &mut records))
            .collect::<Result<Vec<Step>>>()?;
        Ok((steps, records))
    }

    /// The step written again from where its failed query went wrong (a
    /// missing column, a syntax error: `SchemaNames::redecode_failed_query`),
    /// when redecoding and the name constraint are on and the query written
    /// again runs (fixed in place if need be); else the step as it was. The call is
    /// recorded in `records` either way.
    fn redecode_failed(
        &self,
        model: &dyn LanguageModel,
        prompt: &[ChatMessage],
        step: Step,
        sampling: &Sampling,
        stage: &str,
        records: &mut Vec<CallRecord>,
    ) -> Result<Step> {
        let (Some(output), Some(Err(error)), Some(_), true) = (
            &step.output,
            &step.execution,
            &self.context.constraint,
            self.context.redecode,
        ) else {
            return Ok(step);
        };
        let Some(sql) = &output.sql else {
            return Ok(step);
        };
        let Some((answer, record)) = self.context.names.redecode_failed_query(
            model,
            prompt,
            &output.text,
            sql,
            error,
            sampling,
            stage,
        )?
        else {
            return Ok(step);
        };
        let cut = record.was_cut(0);
        records.push(record);
        let original = sql.clone();
        let action_index = step.action.expect("a query step has an action");
        let output = self.actions.get(action_index).parse(&answer);
        let execution = output.sql.as_ref().map(|sql| self.executor.query(sql));
        let written = Step {
            action: step.action,
            execution,
            output: Some(output),
        };
        let mut rewritten = self.fix_names(written, cut);
        if !matches!(rewritten.execution, Some(Ok(_))) {
            return Ok(step);
        }
        if let Some(output) = rewritten.output.as_mut() {
            output.fixed_from = Some(original);
        }
        Ok(rewritten)
    }

    /// `answer` (row `row` of a query step) with a query written after it:
    /// the model continues its own reply from an opened query tag. A small
    /// model often ends its turn after the first line of the answer format;
    /// a retried step tends to do the same again.
    fn continue_with_query(
        &self,
        model: &dyn LanguageModel,
        prompt: &[ChatMessage],
        answer: &str,
        sampling: &Sampling,
        row: usize,
        stage: &str,
    ) -> Result<(String, CallRecord)> {
        let begun = format!("{}\n{QUERY_OPEN}\n", answer.trim_end());
        let sampling = Sampling {
            n: 1,
            seed: sampling.seed.wrapping_add(row as u64 + 1),
            ..sampling.clone()
        };
        continue_reply(
            model,
            prompt,
            begun,
            &sampling,
            format!("{stage} query continuation"),
        )
    }

    /// The step with the functions its query declares written
    /// (`FunctionWriter`), the calls added to `records`.
    fn supply_functions(&self, mut step: Step, records: &mut Vec<CallRecord>) -> Result<Step> {
        let (Some(writer), Some(output), Some(outcome)) =
            (self.functions, step.output.as_mut(), &step.execution)
        else {
            return Ok(step);
        };
        let Some(sql) = &output.sql else {
            return Ok(step);
        };
        if let Some((with_functions, ran)) = writer.supply(sql, outcome, records)? {
            output.sql = Some(with_functions);
            step.execution = Some(ran);
        }
        Ok(step)
    }

    /// The step with its failed query fixed, when the fixed query runs: a
    /// query whose text was `cut` off ended where it last could be, else
    /// misspelt table or column names replaced by the clearly closest real
    /// ones (`SchemaNames::fix_until_it_runs`); a query that found no value
    /// with a join on columns that never meet, rejoined
    /// (`SchemaNames::rejoin`).
    fn fix_names(&self, mut step: Step, cut: bool) -> Step {
        let Some(original) = step.output.as_ref().and_then(|o| o.sql.clone()) else {
            return step;
        };
        let asked = super::repair::asked(&self.context.question, self.context.hint.as_deref());
        let fixed = step.execution.as_ref().and_then(|outcome| {
            self.context
                .names
                .mend(self.executor, &original, outcome, cut, &asked)
        });
        if let Some((fixed, result)) = fixed {
            let output = step.output.as_mut().expect("checked above");
            output.sql = Some(fixed);
            output.fixed_from = Some(original);
            step.execution = Some(Ok(result));
        }
        step
    }

    /// The sampling an action's file asks for.
    pub fn sampling(&self, action_index: usize, n: usize, seed: u64) -> Sampling {
        let spec = &self.actions.get(action_index).sampling;
        Sampling {
            temperature: spec.temperature,
            top_p: if spec.temperature > 0.0 { 0.95 } else { 1.0 },
            min_p: self.context.min_p,
            max_tokens: spec.max_tokens,
            stop: spec.stop.clone(),
            seed,
            n,
            greedy_rows: spec.greedy_rows,
            constraint: match self.actions.get(action_index).frame {
                Frame::Direct => self.context.direct_constraint.clone(),
                _ => self.context.constraint.clone(),
            },
            ..Sampling::default()
        }
    }
}

/// A step's answer as the model wrote it. Query answers stop at the
/// `</sql>` stop string, which the completion text leaves out: it is put
/// back so the turn reads as written and matches the tokens the model
/// produced.
fn answer_text(action: &Action, output: &StepOutput) -> String {
    let mut text = output.text.clone();
    if action.output == OutputKind::Sql && text.contains(QUERY_OPEN) && !text.contains(QUERY_CLOSE)
    {
        text.push('\n');
        text.push_str(QUERY_CLOSE);
    }
    text
}

/// The tags around the query in the query actions' answer format.
const QUERY_OPEN: &str = "<sql>";
const QUERY_CLOSE: &str = "</sql>";

/// An execution outcome as one line for the next prompt.
pub fn execution_note(outcome: &QueryOutcome) -> String {
    match outcome {
        Err(e) => format!("error: {e}"),
        Ok(result) if result.total_rows == 0 => "no rows".to_string(),
        Ok(result) => {
            let mut note = format!(
                "{} row{}; columns {}",
                result.total_rows,
                if result.total_rows == 1 { "" } else { "s" },
                result.columns.join(", ")
            );
            let rows: Vec<String> = result
                .rows
                .iter()
                .take(3)
                .map(|row| {
                    let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
                    format!("({})", cells.join(", "))
                })
                .collect();
            let _ = write!(note, "; first rows: {}", rows.join(" "));
            truncate_chars(&note, 300)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::ExecConfig;
    use crate::understand::demo;

    /// The demo database, the built-in actions and a question about singers.
    struct Fixture {
        executor: Executor,
        actions: ActionSet,
        context: QuestionContext,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                executor: Executor::open(&demo::database(), ExecConfig::default()).unwrap(),
                actions: ActionSet::builtin(),
                context: QuestionContext {
                    schema: String::new(),
                    direct: DirectMaterial::default(),
                    question: "How old is the oldest singer?".into(),
                    hint: None,
                    understanding: String::new(),
                    names: Arc::new(SchemaNames::of(&demo::schema())),
                    constraint: None,
                    direct_constraint: None,
                    redecode: false,
                    min_p: 0.0,
                },
            }
        }

        fn reasoner(&self) -> Reasoner<'_> {
            Reasoner {
                actions: &self.actions,
                executor: &self.executor,
                context: &self.context,
                functions: None,
            }
        }

        /// An A5 step that wrote `sql`, executed.
        fn drafted(&self, sql: &str) -> Step {
            Step {
                action: self.actions.index_of("A5"),
                output: Some(StepOutput {
                    text: String::new(),
                    sql: Some(sql.into()),
                    ..StepOutput::default()
                }),
                execution: Some(self.executor.query(sql)),
            }
        }

        /// The user message of the revision prompt after `step`.
        fn revision_prompt(&self, step: &Step) -> String {
            let revise = self.actions.get(self.actions.index_of("A6").unwrap());
            let prompt = self.reasoner().prompt(&[step], revise);
            prompt.last().unwrap().content.clone()
        }
    }

    #[test]
    fn a_direct_query_calling_a_declared_function_gets_it_written() {
        let f = Fixture::new();
        let writer_model = Arc::new(crate::llm::scripted::ScriptedModel::new(vec![
            "```javascript\nfunction fn_in_months(years) { return years * 12; }\n```",
        ]));
        let config = crate::search::SearchConfig {
            functions: crate::search::FunctionUse::Called,
            name_constraint: false,
            ..crate::search::SearchConfig::default()
        };
        let engine = crate::search::Engine::new(writer_model, &demo::database(), config).unwrap();
        let writer = FunctionWriter::new(&engine, "How old is the oldest singer in months?");
        let reasoner = Reasoner {
            functions: writer.as_ref(),
            ..f.reasoner()
        };
        let sampler = crate::llm::scripted::ScriptedModel::new(vec![
            "```sql\nSELECT fn_in_months(MAX(Age)) FROM singer\n```",
        ]);
        let a0 = f.actions.index_of("A0").unwrap();
        let sampling = reasoner.sampling(a0, 1, 0);
        let (steps, records) = reasoner
            .apply(&sampler, &[], a0, &sampling, "A0".into())
            .unwrap();
        let stages: Vec<&str> = records.iter().map(|r| r.stage.as_str()).collect();
        assert_eq!(stages, ["A0", "function_writing"]);
        let sql = steps[0].output.as_ref().unwrap().sql.as_deref().unwrap();
        assert!(sql.starts_with("/*js\nfunction fn_in_months"), "{sql}");
        let result = steps[0].execution.as_ref().unwrap().as_ref().unwrap();
        let oldest = f
            .executor
            .query("SELECT MAX(Age) * 12 FROM singer")
            .unwrap();
        assert_eq!(result.rows, oldest.rows);
    }

    #[test]
    fn a_query_naming_a_missing_column_is_followed_by_the_real_names() {
        let f = Fixture::new();
        let user = f.revision_prompt(&f.drafted("SELECT MAX(Agee) FROM singer"));
        assert!(user.contains("no such column: Agee"), "{user}");
        assert!(
            user.contains("Schema note: no column `Agee`; the closest are singer.Age"),
            "{user}"
        );
    }

    #[test]
    fn a_child_prompt_extends_its_parent_prompt_and_answer() {
        let f = Fixture::new();
        let a5 = f.actions.index_of("A5").unwrap();
        let a6 = f.actions.index_of("A6").unwrap();
        let reasoner = f.reasoner();
        let parent = reasoner.prompt(&[], f.actions.get(a5));
        let answer = "Sub-questions: the oldest age.\n<sql>\nSELECT MAX(Age) FROM singer";
        let output = f.actions.get(a5).parse(answer);
        let step = Step {
            action: Some(a5),
            execution: Some(f.executor.query(output.sql.as_deref().unwrap())),
            output: Some(output),
        };
        let child = reasoner.prompt(&[&step], f.actions.get(a6));
        assert_eq!(child[..parent.len()], parent[..]);
        assert_eq!(child.len(), parent.len() + 2);
        assert_eq!(child[parent.len()].role, "assistant");
        assert_eq!(child[parent.len()].content, format!("{answer}\n</sql>"));
        let turn = &child[parent.len() + 1].content;
        assert!(
            turn.starts_with("Execution: 1 row; columns MAX(Age)"),
            "{turn}"
        );
        assert!(turn.ends_with(f.actions.get(a6).prompt.trim()), "{turn}");
    }

    #[test]
    fn an_answer_that_stops_before_its_query_is_continued() {
        let f = Fixture::new();
        let model = crate::llm::scripted::ScriptedModel::responding(|prompt, _| {
            if prompt.ends_with("<sql>\n") {
                "SELECT MAX(Age) FROM singer".into()
            } else {
                "Sub-questions: the oldest age.".into()
            }
        });
        let a5 = f.actions.index_of("A5").unwrap();
        let sampling = f.reasoner().sampling(a5, 1, 7);
        let (steps, calls) = f
            .reasoner()
            .apply(&model, &[], a5, &sampling, "search A5".into())
            .unwrap();
        let output = steps[0].output.as_ref().unwrap();
        assert_eq!(
            output.text,
            "Sub-questions: the oldest age.\n<sql>\nSELECT MAX(Age) FROM singer"
        );
        assert_eq!(output.sql.as_deref(), Some("SELECT MAX(Age) FROM singer"));
        assert!(matches!(steps[0].execution, Some(Ok(_))));
        let stages: Vec<&str> = calls.iter().map(|c| c.stage.as_str()).collect();
        assert_eq!(stages, ["search A5", "search A5 query continuation"]);
        assert_ne!(calls[1].seed, calls[0].seed);

        // A text step's answer is taken as it is.
        let a4 = f.actions.index_of("A4").unwrap();
        let sampling = f.reasoner().sampling(a4, 1, 7);
        let (_, calls) = f
            .reasoner()
            .apply(&model, &[], a4, &sampling, "search A4".into())
            .unwrap();
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn a_query_step_that_wrote_no_query_is_not_shown_again() {
        let f = Fixture::new();
        let a5 = f.actions.get(f.actions.index_of("A5").unwrap());
        let empty = Step {
            action: f.actions.index_of("A5"),
            output: Some(a5.parse("Sub-questions: the oldest age.")),
            execution: None,
        };
        let retry = f.reasoner().prompt(&[&empty], a5);
        assert_eq!(retry, f.reasoner().prompt(&[], a5));
    }

    #[test]
    fn a_query_step_that_wrote_no_query_may_be_tried_again() {
        let f = Fixture::new();
        let a5 = f.actions.index_of("A5").unwrap();
        let empty = Step {
            action: Some(a5),
            output: Some(f.actions.get(a5).parse("Sub-questions: the lift.")),
            execution: None,
        };
        assert!(f.reasoner().valid_actions(&[&empty]).contains(&a5));
        let written = f.drafted("SELECT MAX(Age) FROM singer");
        assert!(!f.reasoner().valid_actions(&[&written]).contains(&a5));
    }

    #[test]
    fn misspelt_names_are_fixed_when_the_fixed_query_runs() {
        let f = Fixture::new();
        let written = "SELECT MAX(Agee) FROM singers";
        let step = f.reasoner().fix_names(f.drafted(written), false);
        let output = step.output.as_ref().unwrap();
        assert_eq!(output.sql.as_deref(), Some("SELECT MAX(Age) FROM singer"));
        assert_eq!(output.fixed_from.as_deref(), Some(written));
        assert!(matches!(step.execution, Some(Ok(_))));
        let user = f.revision_prompt(&step);
        assert!(
            user.contains("Misspelt names in the query were fixed; it ran as:\n```sql\nSELECT MAX(Age) FROM singer\n```"),
            "{user}"
        );

        // An invented column has no clearly closest name: the step stays failed.
        let invented = "SELECT MAX(Lift) FROM singer";
        let step = f.reasoner().fix_names(f.drafted(invented), false);
        assert_eq!(step.sql(), Some(invented));
        assert!(matches!(step.execution, Some(Err(_))));
    }
}
