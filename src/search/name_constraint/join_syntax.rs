//! The few words a FROM's syntax allows after a table's alias and inside a
//! join's keywords, and the test for an alias that reads as a clause.

use super::super::sql_text::CLAUSES_AFTER_FROM;

/// What may come next where a FROM's syntax leaves few choices. Refused
/// the end of a FROM that leaves a name unbound, a model otherwise writes
/// a clause as an alias or a join word (`FROM phones UNORDERED BY`, `FROM
/// t HAVINGS LEFT 13`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Next {
    Any,
    /// After a table's alias: a join's word (`JOIN_WORDS`), a comma or a
    /// closing parenthesis, or where the FROM may end, a clause.
    AfterTableAlias,
    /// Inside a join's keywords (`LEFT OUTER JOIN`): one of these words.
    JoinWords(&'static [&'static str]),
}

impl Next {
    /// What follows `word` when it stands among a join's keywords.
    pub(super) fn after_join_word(word: &str) -> Next {
        match word {
            "left" | "right" | "full" => Next::JoinWords(&["outer", "join"]),
            "inner" | "cross" | "outer" => Next::JoinWords(&["join"]),
            "natural" => Next::JoinWords(&["left", "right", "full", "inner", "cross", "join"]),
            _ => Next::Any,
        }
    }

    /// Whether the next word may be `word` (a prefix of it, if
    /// `growing`); `from_may_end` says whether a clause may end the FROM.
    pub(super) fn allows_word(
        self,
        word: &str,
        growing: bool,
        from_may_end: impl Fn() -> bool,
    ) -> bool {
        let fits = |words: &[&str]| {
            if growing {
                words.iter().any(|w| w.starts_with(word))
            } else {
                words.contains(&word)
            }
        };
        match self {
            Next::Any => true,
            Next::AfterTableAlias => {
                fits(&JOIN_WORDS) || (fits(&CLAUSES_AFTER_FROM) && from_may_end())
            }
            Next::JoinWords(words) => fits(words),
        }
    }

    /// Whether the next sign may be `c` (whitespace aside).
    pub(super) fn allows_sign(self, c: char) -> bool {
        match self {
            Next::Any => true,
            Next::AfterTableAlias => matches!(c, ',' | ')'),
            Next::JoinWords(_) => false,
        }
    }
}

/// The words of a join and its condition, which may follow a table's
/// alias, or stand where an alias could (`FROM t LEFT JOIN`).
pub(super) const JOIN_WORDS: [&str; 9] = [
    "join", "inner", "left", "right", "full", "cross", "natural", "on", "using",
];

/// Whether an alias reads as a clause misspelt: it holds one (`HAVINGS`,
/// `UNORDERED`) or begins as one does (`HAVIN`, `HAVIGN`, `WHE`).
pub(super) fn looks_like_a_clause(alias: &str) -> bool {
    alias.len() >= 3
        && CLAUSES_AFTER_FROM
            .iter()
            .any(|clause| alias.contains(clause) || clause.get(..3) == alias.get(..3))
}
