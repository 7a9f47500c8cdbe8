//! Functions SQLite lacks, written in JavaScript and run in a sandbox
//! (`sandbox`) as SQL scalar functions (`sqlite`).
//!
//! A query that calls functions of its own carries them with it: its text
//! starts with a `/*js ... */` comment holding their declarations
//! ([`attach`]), so that every part of the engine that keeps, shows,
//! compares or re-runs a query (traces, predictions, the evaluator, `iesr
//! sql`) keeps its functions too; to SQL the block is a comment. The
//! executor registers them for that query only. Statistics SQLite lacks
//! (`aggregates`) are native aggregates on every connection.

mod aggregates;
mod sandbox;
pub mod sqlite;

pub use sandbox::{Limits, Sandbox};

/// Why a function could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FunctionError {
    #[error("the function sandbox could not start: {0}")]
    Start(String),
    #[error("{NOT_LOADING}: {0}")]
    Compile(String),
    #[error("function {0} is not defined in the query's /*js */ block")]
    Missing(String),
    #[error("function {name} failed: {message}")]
    Thrown { name: String, message: String },
    #[error(
        "function {name} was stopped after {checks} work checks (an endless or too long loop)"
    )]
    WorkLimit { name: String, checks: u64 },
    #[error("function {name} was stopped at its {limit_ms} ms time limit")]
    TimeLimit { name: String, limit_ms: u64 },
    #[error("function {name} ran out of its {limit_bytes}-byte memory limit")]
    MemoryLimit { name: String, limit_bytes: usize },
    #[error("function {name} recursed past its stack limit")]
    StackLimit { name: String },
    #[error("function {0} was given a blob; functions take numbers, text and NULL")]
    BlobArgument(String),
    #[error("function {name} returned a value of type {kind}; return a number, a string, a boolean or null")]
    BadReturn { name: String, kind: String },
}

/// How an error says that a query's functions do not compile.
pub const NOT_LOADING: &str = "the functions do not load";

/// How a query's functions block opens and closes.
const OPEN: &str = "/*js";
const CLOSE: &str = "*/";

/// Prefix of the names of functions the model declares for a query, so
/// that the name constraint can tell a call to be written from an
/// invented column.
pub const DECLARED_PREFIX: &str = "fn_";

/// Every function a query may call beside SQLite's own, on every
/// connection: the library's and the statistics aggregates.
pub fn registered_names() -> impl Iterator<Item = &'static str> {
    sqlite::LIBRARY_FUNCTIONS
        .iter()
        .map(|&(name, _)| name)
        .chain(aggregates::aggregate_names())
}

/// `sql` carrying the JavaScript `program`.
pub fn attach(program: &str, sql: &str) -> String {
    format!("{OPEN}\n{}\n{CLOSE}\n{}", program.trim(), sql.trim_start())
}

/// A query's functions block (its inside, when the text opens with one)
/// and the SQL after it.
pub fn split(text: &str) -> (Option<&str>, &str) {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix(OPEN) {
        if let Some(end) = rest.find(CLOSE) {
            return (Some(rest[..end].trim()), &rest[end + CLOSE.len()..]);
        }
    }
    (None, text)
}

/// The names `program` declares with `function NAME(` (each once, in order).
pub fn declared_names(program: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = program;
    while let Some(at) = rest.find("function") {
        let before = program.len() - rest.len() + at;
        rest = &rest[at + "function".len()..];
        let starts_word = program[..before]
            .chars()
            .next_back()
            .is_none_or(|c| !is_identifier_char(c));
        let after = rest.trim_start();
        if !starts_word || after.len() == rest.len() {
            continue;
        }
        let name: String = after
            .chars()
            .take_while(|&c| is_identifier_char(c))
            .collect();
        let follows = after[name.len()..].trim_start();
        if !name.is_empty() && follows.starts_with('(') && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Whether `c` may stand in a JavaScript (or SQL function) name.
pub(crate) fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The function a SQLite error says is missing (`no such function: X`).
pub fn missing_function(error: &str) -> Option<&str> {
    let at = error.find("no such function: ")?;
    let name = &error[at + "no such function: ".len()..];
    let end = name
        .find(|c: char| !is_identifier_char(c))
        .unwrap_or(name.len());
    Some(&name[..end]).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_functions_block_travels_with_its_query_and_splits_off_again() {
        let text = attach("function fn_half(x) { return x / 2; }", "SELECT fn_half(4)");
        assert!(text.starts_with("/*js\n"));
        let (program, sql) = split(&text);
        assert_eq!(program, Some("function fn_half(x) { return x / 2; }"));
        assert_eq!(sql.trim(), "SELECT fn_half(4)");
        assert_eq!(split("SELECT 1"), (None, "SELECT 1"));
        assert_eq!(split("/*js unclosed SELECT 1").0, None);
    }

    #[test]
    fn declared_names_are_the_functions_a_program_declares() {
        let program = "function fn_a(x) { function inner (y) { return y; } return inner(x); }\n\
                       const notfunction = 1; function  fn_b (s) { return s; }\n\
                       function fn_a(x) { return x; }";
        assert_eq!(declared_names(program), ["fn_a", "inner", "fn_b"]);
    }

    #[test]
    fn the_missing_function_is_read_from_sqlites_error() {
        assert_eq!(
            missing_function("SQL error: no such function: fn_knots_to_kmh"),
            Some("fn_knots_to_kmh")
        );
        assert_eq!(missing_function("SQL error: no such column: x"), None);
    }
}
