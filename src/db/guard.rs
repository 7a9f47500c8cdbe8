//! Decides whether a piece of SQL may run at all, in two independent layers:
//! a syntactic check with sqlparser's SQLite dialect here, and SQLite's own
//! authorizer on every connection (see [`authorize`]), which sees exactly what
//! the statement will do once compiled.

use crate::error::QueryError;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use sqlparser::ast::Statement;
use sqlparser::dialect::SQLiteDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Functions that reach outside the database file even inside a SELECT.
const DENIED_FUNCTIONS: &[&str] = &[
    "load_extension",
    "fts3_tokenizer",
    "readfile",
    "writefile",
    "edit",
];

/// Accepts exactly one read query (SELECT, WITH ... SELECT, VALUES).
///
/// sqlparser does not know every corner of SQLite's grammar, so a statement it
/// cannot parse is not refused for that alone: it must then at least start
/// like a query and hold one statement, and SQLite's authorizer and its
/// read-only verdict on the prepared statement decide the rest.
pub fn check_single_read(sql: &str) -> Result<(), QueryError> {
    let dialect = SQLiteDialect {};
    match Parser::parse_sql(&dialect, sql) {
        Ok(statements) => match statements.as_slice() {
            [] => Err(QueryError::Refused("the SQL text is empty".into())),
            [Statement::Query(_)] => Ok(()),
            [other] => Err(QueryError::Refused(format!(
                "`{}` is not a read query",
                first_words(&other.to_string())
            ))),
            _ => Err(QueryError::Refused(format!(
                "{} statements were given",
                statements.len()
            ))),
        },
        Err(_) => check_unparsed(sql),
    }
}

fn check_unparsed(sql: &str) -> Result<(), QueryError> {
    let tokens = significant_tokens(sql).map_err(QueryError::Sql)?;
    let Some(first) = tokens.first() else {
        return Err(QueryError::Refused("the SQL text is empty".into()));
    };
    let starts_like_query = matches!(
        first,
        Token::Word(w) if matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES)
    ) || matches!(first, Token::LParen);
    if !starts_like_query {
        return Err(QueryError::Refused(format!(
            "`{}` is not a read query",
            first_words(sql)
        )));
    }
    let body_end = tokens
        .iter()
        .rposition(|t| *t != Token::SemiColon)
        .unwrap_or(0);
    if tokens[..body_end].contains(&Token::SemiColon) {
        return Err(QueryError::Refused(
            "more than one statement was given".into(),
        ));
    }
    Ok(())
}

/// Tokens without whitespace and comments.
fn significant_tokens(sql: &str) -> Result<Vec<Token>, String> {
    let dialect = SQLiteDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize()
        .map_err(|e| e.to_string())?;
    Ok(tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF))
        .collect())
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The SQLite authorizer every guarded connection runs with: reading tables
/// and calling ordinary functions is all a query may do.
pub fn authorize(context: AuthContext<'_>) -> Authorization {
    match context.action {
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => {
            Authorization::Allow
        }
        AuthAction::Function { function_name } => {
            if DENIED_FUNCTIONS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(function_name))
            {
                Authorization::Deny
            } else {
                Authorization::Allow
            }
        }
        _ => Authorization::Deny,
    }
}

/// A cache key under which SQL texts that differ only in whitespace, comments,
/// keyword case or a trailing semicolon coincide. Literals and identifiers
/// keep their case, since `'Bob'` and `'bob'` are different queries.
pub fn normalize(sql: &str) -> String {
    let Ok(tokens) = significant_tokens(sql) else {
        return sql.trim().to_string();
    };
    let end = tokens
        .iter()
        .rposition(|t| *t != Token::SemiColon)
        .map_or(0, |i| i + 1);
    let mut out = String::with_capacity(sql.len());
    for token in &tokens[..end] {
        if !out.is_empty() {
            out.push(' ');
        }
        match token {
            Token::Word(w) if w.quote_style.is_none() && w.keyword != Keyword::NoKeyword => {
                out.push_str(&w.value.to_ascii_uppercase())
            }
            other => out.push_str(&other.to_string()),
        }
    }
    out
}

/// Whether the query has an ORDER BY anywhere (Spider's rule for when row
/// order matters).
pub fn has_order_by(sql: &str) -> bool {
    let Ok(tokens) = significant_tokens(sql) else {
        return sql.to_ascii_lowercase().contains("order by");
    };
    tokens.windows(2).any(|pair| {
        matches!(&pair[0], Token::Word(w) if w.keyword == Keyword::ORDER)
            && matches!(&pair[1], Token::Word(w) if w.keyword == Keyword::BY)
    })
}

/// The query with every DISTINCT keyword removed, as Spider's evaluator does
/// to both sides unless told to keep it.
pub fn strip_distinct(sql: &str) -> String {
    let dialect = SQLiteDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return sql.to_string();
    };
    tokens
        .iter()
        .filter(|t| !matches!(t, Token::Word(w) if w.keyword == Keyword::DISTINCT && w.quote_style.is_none()))
        .map(Token::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_read_queries() {
        for sql in [
            "SELECT 1",
            "select name from singer where age > 3;",
            "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
            "SELECT a FROM t UNION SELECT b FROM u",
            "VALUES (1, 2)",
            // sqlparser cannot parse this SQLite form; the fallback accepts it.
            "SELECT x FROM t WHERE x GLOB 'a*' ESCAPE '\\'",
        ] {
            assert_eq!(check_single_read(sql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn refuses_everything_else() {
        for sql in [
            "",
            "   ;  ",
            "DELETE FROM t",
            "UPDATE t SET a = 1",
            "INSERT INTO t VALUES (1)",
            "DROP TABLE t",
            "CREATE TABLE x (a)",
            "ATTACH DATABASE '/tmp/x.db' AS x",
            "PRAGMA journal_mode = WAL",
            "VACUUM INTO '/tmp/copy.db'",
            "SELECT 1; DROP TABLE t",
            "SELECT 1; SELECT 2",
            "BEGIN",
            "REINDEX",
        ] {
            assert!(
                matches!(check_single_read(sql), Err(QueryError::Refused(_))),
                "{sql:?} was not refused"
            );
        }
    }

    #[test]
    fn normalize_ignores_layout_and_keyword_case_only() {
        assert_eq!(
            normalize("select  name\nFROM singer -- who\n;"),
            normalize("SELECT name FROM singer")
        );
        assert_ne!(
            normalize("SELECT name FROM t WHERE n = 'Bob'"),
            normalize("SELECT name FROM t WHERE n = 'bob'")
        );
    }

    #[test]
    fn detects_order_by() {
        assert!(has_order_by("SELECT a FROM t ORDER  BY a"));
        assert!(!has_order_by("SELECT \"order by\" FROM t"));
        assert!(!has_order_by("SELECT a FROM t"));
    }

    #[test]
    fn strips_distinct_keywords_only() {
        assert_eq!(
            strip_distinct("SELECT DISTINCT a, count(distinct b) FROM t"),
            "SELECT  a, count( b) FROM t"
        );
        assert_eq!(
            strip_distinct("SELECT \"distinct\" FROM t"),
            "SELECT \"distinct\" FROM t"
        );
    }
}
