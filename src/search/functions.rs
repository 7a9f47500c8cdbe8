//! Synthesised functions: a query that calls `fn_...`, a function SQLite
//! lacks, gets it written in JavaScript by the model (shown the question,
//! the query and the call), checked by running the query, and written
//! again when it fails, up to [`TRIES_PER_FUNCTION`] times. The functions
//! travel with the query in its `/*js */` block (`crate::functions`).

use super::extract::fenced_with_tags;
use super::Engine;
use crate::db::QueryOutcome;
use crate::error::Result;
use crate::functions::{self, DECLARED_PREFIX};
use crate::llm::{ChatMessage, Prompt, Sampling};
use crate::prompts::{FUNCTIONS, FUNCTION_WRITING_SYSTEM, FUNCTION_WRITING_USER};
use crate::trace::{CallRecord, Trace};
use std::collections::HashMap;
use std::sync::Mutex;

/// T: how many times one function is written before the query is given up.
pub const TRIES_PER_FUNCTION: usize = 3;

/// Most functions one query may have written for it.
const MAX_FUNCTIONS: usize = 3;

/// Functions already written for one question, by name: samples that call
/// the same function share it instead of each paying for it.
#[derive(Default)]
pub(crate) struct Written {
    by_name: HashMap<String, String>,
}

impl Engine {
    /// The paragraph the direct prompts show about functions, when they
    /// are on.
    pub(super) fn functions_paragraph(&self) -> String {
        if self.config.functions.on() {
            format!("{}\n", FUNCTIONS.render(&[]).trim_end())
        } else {
            String::new()
        }
    }

    /// Runs a query the model wrote (`cut`: its reply was cut off): fixed
    /// in place if a name is clearly wrong or its text ended too soon,
    /// with its functions written when it calls any.
    pub(super) fn run_written(
        &self,
        (question, hint): (&str, Option<&str>),
        (sql, cut): (&str, bool),
        written: &mut Written,
        trace: &mut Trace,
    ) -> Result<(String, QueryOutcome)> {
        let asked = super::repair::asked(question, hint);
        let (sql, outcome) = self.names.query_or_fix(&self.executor, sql, cut, &asked);
        Ok(self
            .supply_functions_traced(question, &sql, &outcome, written, trace)?
            .unwrap_or((sql, outcome)))
    }

    /// [`Engine::supply_functions`], its calls and their cost recorded in
    /// `trace`.
    pub(super) fn supply_functions_traced(
        &self,
        question: &str,
        sql: &str,
        outcome: &QueryOutcome,
        written: &mut Written,
        trace: &mut Trace,
    ) -> Result<Option<(String, QueryOutcome)>> {
        let mut calls = Vec::new();
        let supplied = self.supply_functions(question, sql, outcome, written, &mut calls)?;
        for call in calls {
            trace.cost.add(&call.usage);
            trace.calls.push(call);
        }
        Ok(supplied)
    }

    /// When `outcome` failed because `sql` calls a declared function
    /// SQLite lacks, the query with its functions written and what running
    /// it gave (the last try's, if none ran); None when there is nothing
    /// to write. The calls made are added to `calls`.
    pub(super) fn supply_functions(
        &self,
        question: &str,
        sql: &str,
        outcome: &QueryOutcome,
        written: &mut Written,
        calls: &mut Vec<CallRecord>,
    ) -> Result<Option<(String, QueryOutcome)>> {
        if !self.config.functions.on() || declared_missing(outcome).is_none() {
            return Ok(None);
        }
        let (_, body) = functions::split(sql);
        let body = body.trim().to_string();
        let mut program: Vec<(String, String)> = Vec::new();
        let mut tries: HashMap<String, usize> = HashMap::new();
        let mut last = (sql.to_string(), outcome.clone());
        loop {
            let (name, failure) = match &last.1 {
                Ok(_) => return Ok(Some(last)),
                Err(e) => match (declared_missing(&last.1), failing_function(&e.to_string())) {
                    (Some(name), _) => (name, None),
                    (None, Some(name)) if program.iter().any(|(n, _)| *n == name) => {
                        (name, Some(e.to_string()))
                    }
                    // The newest function does not compile.
                    (None, _) if e.to_string().contains(functions::NOT_LOADING) => {
                        match program.last() {
                            Some((name, _)) => (name.clone(), Some(e.to_string())),
                            None => return Ok(Some(last)),
                        }
                    }
                    _ => return Ok(Some(last)),
                },
            };
            let tried = tries.entry(name.clone()).or_default();
            let new_function = !program.iter().any(|(n, _)| *n == name);
            if *tried >= TRIES_PER_FUNCTION || (new_function && program.len() >= MAX_FUNCTIONS) {
                return Ok(Some(last));
            }
            *tried += 1;
            let source = match written.by_name.get(&name).filter(|_| failure.is_none()) {
                Some(source) => Some(source.clone()),
                None => self.write_function(question, &body, &name, failure.as_deref(), calls)?,
            };
            let Some(source) = source else {
                return Ok(Some(last));
            };
            written.by_name.insert(name.clone(), source.clone());
            match program.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 = source,
                None => program.push((name, source)),
            }
            let text: Vec<&str> = program.iter().map(|(_, s)| s.as_str()).collect();
            let attached = functions::attach(&text.join("\n"), &body);
            let ran = self.executor.query(&attached);
            last = (attached, ran);
        }
    }

    /// One call that writes `name` for `sql`; the function's source, or
    /// None when the reply holds no declaration of it.
    fn write_function(
        &self,
        question: &str,
        sql: &str,
        name: &str,
        failure: Option<&str>,
        calls: &mut Vec<CallRecord>,
    ) -> Result<Option<String>> {
        let failure = failure
            .map(|f| format!("\nThe last version failed: {f}. Write it again."))
            .unwrap_or_default();
        let call = call_site(sql, name).unwrap_or_else(|| format!("{name}(...)"));
        let columns = passed_columns(&self.schema_text, &call);
        let messages = vec![
            ChatMessage::new("system", FUNCTION_WRITING_SYSTEM.render(&[])),
            ChatMessage::new(
                "user",
                FUNCTION_WRITING_USER.render(&[
                    ("question", question),
                    ("sql", sql),
                    ("name", name),
                    ("call", &call),
                    ("columns", &columns),
                    ("failure", &failure),
                ]),
            ),
        ];
        let sampling = Sampling {
            temperature: 0.0,
            max_tokens: self.config.max_tokens,
            seed: self.config.seed,
            n: 1,
            ..Sampling::default()
        };
        let generation = self
            .model
            .generate(&Prompt::Chat(messages.clone()), &sampling)?;
        let call = CallRecord::new("function_writing", messages, &sampling, generation);
        let source = call.outputs.first().and_then(|o| function_source(o, name));
        calls.push(call);
        Ok(source)
    }
}

/// Writes functions for the queries of one question's search steps.
pub struct FunctionWriter<'a> {
    engine: &'a Engine,
    question: &'a str,
    written: Mutex<Written>,
}

impl<'a> FunctionWriter<'a> {
    /// None when functions are off.
    pub(super) fn new(engine: &'a Engine, question: &'a str) -> Option<Self> {
        engine.config.functions.on().then(|| FunctionWriter {
            engine,
            question,
            written: Mutex::new(Written::default()),
        })
    }

    /// [`Engine::supply_functions`] for a step's query.
    pub fn supply(
        &self,
        sql: &str,
        outcome: &QueryOutcome,
        calls: &mut Vec<CallRecord>,
    ) -> Result<Option<(String, QueryOutcome)>> {
        let mut written = self.written.lock().expect("written functions lock");
        self.engine
            .supply_functions(self.question, sql, outcome, &mut written, calls)
    }
}

/// The declared function (named with [`DECLARED_PREFIX`]) whose absence
/// made `outcome` fail.
fn declared_missing(outcome: &QueryOutcome) -> Option<String> {
    let error = outcome.as_ref().err()?.to_string();
    functions::missing_function(&error)
        .filter(|name| name.to_ascii_lowercase().starts_with(DECLARED_PREFIX))
        .map(String::from)
}

/// The function a query's own function error names (`function NAME ...`).
fn failing_function(error: &str) -> Option<String> {
    let at = error.find("function ")?;
    let name: String = error[at + "function ".len()..]
        .chars()
        .take_while(|&c| functions::is_identifier_char(c))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// How `sql` calls `name`: the call's text up to its closing parenthesis.
fn call_site(sql: &str, name: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let start = lower.find(&format!("{}(", name.to_ascii_lowercase()))?;
    let mut depth = 0usize;
    for (i, c) in sql[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(sql[start..=start + i].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Most schema lines shown for the columns a call passes.
const MAX_PASSED_COLUMNS: usize = 6;

/// The schema's lines (name, type, stored examples) of the columns `call`
/// names, as a prompt paragraph: what the function will be given, as
/// CRAFT shows its function writer the intermediate results. Empty when
/// the call names none.
fn passed_columns(schema_text: &str, call: &str) -> String {
    let words: Vec<String> = call
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut lines: Vec<&str> = Vec::new();
    for line in schema_text.lines() {
        let trimmed = line.trim().trim_end_matches(',');
        let is_column = line.starts_with(' ') && !trimmed.starts_with("--");
        let named = trimmed
            .split_whitespace()
            .next()
            .is_some_and(|first| words.contains(&first.trim_matches('"').to_lowercase()));
        if is_column && named && !lines.contains(&trimmed) && lines.len() < MAX_PASSED_COLUMNS {
            lines.push(trimmed);
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("\nThe columns it is given:\n{}", lines.join("\n"))
}

/// The JavaScript of a reply: its fenced block (or the whole reply), from
/// the declaration of `name` on, when it declares it. A block comment end
/// inside it would close the query's functions block early, so such a
/// function is not taken.
fn function_source(reply: &str, name: &str) -> Option<String> {
    let code = fenced_with_tags(reply)
        .first()
        .map_or(reply, |(_, body)| *body);
    let declared = functions::declared_names(code);
    if !declared.iter().any(|n| n == name) || code.contains("*/") {
        return None;
    }
    Some(code.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Value;
    use crate::llm::scripted::ScriptedModel;
    use crate::search::tests::stages;
    use crate::search::{Answer, FunctionUse, Method, SearchConfig};
    use std::sync::Arc;

    fn answer(replies: Vec<&str>, functions: FunctionUse) -> Answer {
        let database = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/datasets/spider/database/concert_singer/concert_singer.sqlite");
        let config = SearchConfig {
            method: Method::Greedy,
            functions,
            feedback_rounds: 0,
            name_constraint: false,
            ..SearchConfig::default()
        };
        Engine::new(Arc::new(ScriptedModel::new(replies)), &database, config)
            .unwrap()
            .answer("How old is the oldest singer in months?", None)
            .unwrap()
    }

    const QUERY: &str = "```sql\nSELECT fn_years_to_months(max(Age)) FROM singer\n```";

    #[test]
    fn a_declared_function_is_written_and_travels_with_the_query() {
        let function = "```javascript\nfunction fn_years_to_months(y) { return y * 12; }\n```";
        let answer = answer(vec![QUERY, function], FunctionUse::Called);
        assert_eq!(stages(&answer), ["sql_generation", "function_writing"]);
        let sql = answer.sql.as_deref().unwrap();
        assert!(
            sql.starts_with("/*js\nfunction fn_years_to_months(y)"),
            "{sql}"
        );
        assert!(sql.ends_with("SELECT fn_years_to_months(max(Age)) FROM singer"));
        // The oldest singer of concert_singer is 52.
        assert_eq!(answer.result.unwrap().rows, [[Value::Integer(624)]]);
        let asked = &answer.trace.calls[1].prompt[1].content;
        assert!(
            asked.contains("called as fn_years_to_months(max(Age))"),
            "{asked}"
        );
        // The direct prompt told the model it may call one.
        assert!(answer.trace.calls[0].prompt[1]
            .content
            .contains("fn_<what_it_does>"));
    }

    #[test]
    fn a_function_that_fails_is_written_again_shown_its_error() {
        let broken = "```javascript\nfunction fn_years_to_months(y) { return years * 12; }\n```";
        let fixed = "```javascript\nfunction fn_years_to_months(y) { return y * 12; }\n```";
        let answer = answer(vec![QUERY, broken, fixed], FunctionUse::Called);
        assert_eq!(
            stages(&answer),
            ["sql_generation", "function_writing", "function_writing"]
        );
        let again = &answer.trace.calls[2].prompt[1].content;
        assert!(again.contains("The last version failed"), "{again}");
        assert!(again.contains("years is not defined"), "{again}");
        assert_eq!(answer.result.unwrap().rows, [[Value::Integer(624)]]);
    }

    #[test]
    fn a_function_is_tried_at_most_t_times() {
        let broken = "```javascript\nfunction fn_years_to_months(y) { return years * 12; }\n```";
        let answer = answer(
            vec![QUERY, broken, broken, broken, broken],
            FunctionUse::Called,
        );
        assert_eq!(stages(&answer).len(), 1 + TRIES_PER_FUNCTION);
        assert!(answer.result.is_none());
        let error = answer.error.unwrap();
        assert!(
            error.contains("function fn_years_to_months failed"),
            "{error}"
        );
    }

    #[test]
    fn with_functions_first_the_reply_is_begun_with_a_function_and_its_query_runs_with_it() {
        // The model writes on from the opening it was given.
        let continued = "years_to_months(y) { return y * 12; }\n*/\nSELECT fn_years_to_months(max(Age)) FROM singer\n```";
        let answer = answer(vec![continued], FunctionUse::First);
        assert_eq!(stages(&answer), ["sql_generation"]);
        let asked = &answer.trace.calls[0].prompt;
        let roles: Vec<&str> = asked.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
        assert_eq!(asked[4].content, crate::search::FUNCTION_FIRST_OPENING);
        // The frame and its example say how; the paragraph for functions
        // to be written later is left out.
        assert!(asked[2]
            .content
            .contains("/*js\nfunction fn_kinetic_energy"));
        assert!(!asked[3].content.contains("it will be written for you"));
        let sql = answer.sql.as_deref().unwrap();
        assert!(
            sql.starts_with("/*js\nfunction fn_years_to_months(y) { return y * 12; }\n*/"),
            "{sql}"
        );
        assert_eq!(answer.result.unwrap().rows, [[Value::Integer(624)]]);
    }

    #[test]
    fn without_functions_nothing_is_written_and_the_prompt_says_nothing() {
        let answer = answer(vec![QUERY], FunctionUse::Off);
        assert_eq!(stages(&answer), ["sql_generation"]);
        assert!(answer.error.unwrap().contains("no such function"));
        assert!(!answer.trace.calls[0].prompt[1].content.contains("fn_"));
    }

    #[test]
    fn the_columns_a_call_passes_are_shown_as_the_schema_shows_them() {
        let schema = "CREATE TABLE bike ( -- 3 rows\n  \
                      BikeID INTEGER PRIMARY KEY, -- e.g. 1, 2, 3\n  \
                      TopSpeed TEXT, -- e.g. '50 km/h', '62 km/h'\n  \
                      Weight REAL -- e.g. 7.5\n);";
        assert_eq!(
            passed_columns(schema, "fn_to_ms(T1.topspeed, 'km/h')"),
            "\nThe columns it is given:\nTopSpeed TEXT, -- e.g. '50 km/h', '62 km/h'"
        );
        assert_eq!(passed_columns(schema, "fn_to_ms(3.6)"), "");
    }

    #[test]
    fn the_call_site_is_read_to_its_closing_parenthesis() {
        let sql = "SELECT fn_speed(max(T1.v), 'km') + 1 FROM t AS T1";
        assert_eq!(
            call_site(sql, "fn_speed").as_deref(),
            Some("fn_speed(max(T1.v), 'km')")
        );
        assert_eq!(call_site(sql, "fn_other"), None);
    }

    #[test]
    fn a_reply_gives_its_function_only_when_it_declares_the_name() {
        let reply = "```javascript\nfunction fn_half(x) {\n  return x / 2;\n}\n```\nDone.";
        assert_eq!(
            function_source(reply, "fn_half").as_deref(),
            Some("function fn_half(x) {\n  return x / 2;\n}")
        );
        assert_eq!(function_source(reply, "fn_double"), None);
        let closing = "```js\nfunction fn_half(x) { /* half */ return x / 2; }\n```";
        assert_eq!(function_source(closing, "fn_half"), None);
    }

    #[test]
    fn a_failing_function_is_named_by_its_error() {
        assert_eq!(
            failing_function("SQL error: function fn_half failed: x is not defined").as_deref(),
            Some("fn_half")
        );
        assert_eq!(failing_function("SQL error: no such column: x"), None);
    }
}
