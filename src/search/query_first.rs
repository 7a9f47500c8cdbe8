//! Replies that open with their query. The prompts that ask for a query
//! and nothing else (greedy's, sc's and the search's direct samples) are
//! sometimes answered with an explanation first, then the query, or an
//! explanation alone: measured on Spider and LogicCat random-100, 2-6% of
//! such replies, holding 10-22% of the generated characters and right less
//! often than the others. This sampling rule makes a reply start as a query
//! does: a ```sql, ```sqlite or bare ``` fence, `<sql>`, or SELECT or WITH.
//! Once a reply has opened otherwise (every token drawn at a position was
//! refused and the sampler gave up on the rule there), the rule no longer
//! applies to it. Any other rule (the name constraint) applies as well.

use crate::llm::constraint::{Constraint, TextChecker, TextConstraint};
use std::sync::Arc;

/// How a reply may begin, lower-cased, after any leading whitespace.
const OPENINGS: [&str; 6] = ["```sql", "```sqlite", "```\n", "<sql>", "select", "with"];

/// The longest opening: a reply this long that opens well is settled.
const LONGEST_OPENING: usize = 9;

/// The rule, around another rule on the same replies, if any.
pub struct QueryFirst(Option<Constraint>);

impl QueryFirst {
    /// The sampling setting: this rule and `inner` together.
    pub fn around(inner: Option<Constraint>) -> Constraint {
        Constraint(Arc::new(QueryFirst(inner)))
    }
}

impl TextConstraint for QueryFirst {
    fn checker(&self) -> Box<dyn TextChecker> {
        Box::new(QueryFirstChecker {
            inner: self.0.as_ref().map(|c| c.0.checker()),
            opening: String::new(),
            settled: false,
        })
    }
}

struct QueryFirstChecker {
    inner: Option<Box<dyn TextChecker>>,
    /// The reply so far, lower-cased and without leading whitespace, while
    /// its opening is undecided.
    opening: String,
    /// Whether the opening is decided (either way).
    settled: bool,
}

impl QueryFirstChecker {
    /// Whether the reply still opens as a query with `piece` after it.
    fn opens_well_with(&self, piece: &str) -> bool {
        self.settled || {
            let mut start = self.opening.clone();
            start.push_str(&piece.to_ascii_lowercase());
            may_open_a_query(start.trim_start())
        }
    }
}

/// Whether `start` (lower-cased, no leading whitespace) is, or can still
/// become, a reply that opens with a query.
fn may_open_a_query(start: &str) -> bool {
    OPENINGS
        .iter()
        .any(|o| start.starts_with(o) || o.starts_with(start))
}

impl TextChecker for QueryFirstChecker {
    fn allows(&self, piece: &str) -> bool {
        self.opens_well_with(piece) && self.inner.as_ref().is_none_or(|c| c.allows(piece))
    }

    fn allows_as_last_resort(&self, piece: &str) -> bool {
        self.opens_well_with(piece)
            && self
                .inner
                .as_ref()
                .is_none_or(|c| c.allows_as_last_resort(piece))
    }

    fn allows_end(&self) -> bool {
        self.inner.as_ref().is_none_or(|c| c.allows_end())
    }

    fn worth_trying(&self, piece: &str) -> bool {
        self.inner.as_ref().is_some_and(|c| c.worth_trying(piece))
    }

    fn allows_unfinished_letter(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|c| c.allows_unfinished_letter())
    }

    fn push(&mut self, piece: &str) {
        if !self.settled {
            self.opening.push_str(&piece.to_ascii_lowercase());
            let start = self.opening.trim_start();
            self.settled = !may_open_a_query(start) || start.len() >= LONGEST_OPENING;
        }
        if let Some(inner) = self.inner.as_mut() {
            inner.push(piece);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether each piece in turn is allowed, pushing the allowed ones.
    fn walk(checker: &mut dyn TextChecker, pieces: &[&str]) -> Vec<bool> {
        pieces
            .iter()
            .map(|p| {
                let ok = checker.allows(p);
                if ok {
                    checker.push(p);
                }
                ok
            })
            .collect()
    }

    #[test]
    fn a_reply_must_open_with_a_fence_or_a_query() {
        let rule = QueryFirst::around(None);
        let mut fenced = rule.0.checker();
        assert_eq!(
            walk(fenced.as_mut(), &["\n", "``", "`s", "ql", "\n", "SELECT"]),
            [true; 6]
        );
        let mut bare = rule.0.checker();
        assert_eq!(walk(bare.as_mut(), &["Se", "lect", " 1"]), [true; 3]);
        let mut prose = rule.0.checker();
        assert_eq!(
            walk(prose.as_mut(), &["To", "```", "python", "sql"]),
            [false, true, false, true]
        );
    }

    #[test]
    fn a_reply_that_opened_otherwise_is_left_alone() {
        let rule = QueryFirst::around(None);
        let mut checker = rule.0.checker();
        // The sampler gave up on the rule at the first token.
        checker.push("Here");
        assert!(checker.allows(" is"));
        assert!(checker.allows(" the query"));
    }

    #[test]
    fn the_inner_rule_still_applies() {
        // Refuses any x, and to end before a y.
        struct NoX;
        #[derive(Default)]
        struct NoXChecker(bool);
        impl TextConstraint for NoX {
            fn checker(&self) -> Box<dyn TextChecker> {
                Box::new(NoXChecker::default())
            }
        }
        impl TextChecker for NoXChecker {
            fn allows(&self, piece: &str) -> bool {
                !piece.contains('x')
            }
            fn allows_end(&self) -> bool {
                self.0
            }
            fn push(&mut self, piece: &str) {
                self.0 |= piece.contains('y');
            }
        }
        let rule = QueryFirst::around(Some(Constraint(Arc::new(NoX))));
        let mut checker = rule.0.checker();
        assert!(!checker.allows_end());
        assert_eq!(
            walk(checker.as_mut(), &["SELECT", " x", " y"]),
            [true, false, true]
        );
        assert!(checker.allows_end());
    }

    #[test]
    fn the_inner_rule_decides_whether_a_letter_may_be_left_unfinished() {
        // Where no name goes beyond ASCII, the name constraint refuses a
        // letter's first byte outside literals; wrapped, it must still.
        struct AsciiOnly;
        struct AsciiOnlyChecker;
        impl TextConstraint for AsciiOnly {
            fn checker(&self) -> Box<dyn TextChecker> {
                Box::new(AsciiOnlyChecker)
            }
        }
        impl TextChecker for AsciiOnlyChecker {
            fn allows(&self, piece: &str) -> bool {
                piece.is_ascii()
            }
            fn push(&mut self, _piece: &str) {}
            fn allows_unfinished_letter(&self) -> bool {
                false
            }
        }
        let wrapped = QueryFirst::around(Some(Constraint(Arc::new(AsciiOnly))));
        assert!(!wrapped.0.checker().allows_unfinished_letter());
        assert!(QueryFirst::around(None)
            .0
            .checker()
            .allows_unfinished_letter());
    }
}
