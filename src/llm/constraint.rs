//! Rules on the text a completion may write, applied while sampling: a
//! drawn token whose text the rule refuses is masked out and the token is
//! drawn again from what is left (the same distribution as masking every
//! refused token first, at the cost of checking only the tokens drawn).
//! Where the allowed tokens lie so far down that redrawing does not reach
//! them, they are looked for among the likeliest in order, then among the
//! rest of the tokens the rule deems worth trying; where none of those is
//! allowed either, the rule stands aside until it allows a drawn token
//! again.
//! In-process backends apply it; a remote server cannot.

use std::sync::Arc;

/// A rule, shared by every completion of a call.
pub trait TextConstraint: Send + Sync {
    /// A fresh checker for one completion.
    fn checker(&self) -> Box<dyn TextChecker>;
}

/// One completion's view of the rule.
pub trait TextChecker: Send {
    /// Whether `piece` may follow the text pushed so far.
    fn allows(&self, piece: &str) -> bool;
    /// Whether the completion may end after the text pushed so far (the
    /// model drew a stop token).
    fn allows_end(&self) -> bool {
        true
    }
    /// Appends the text of a sampled token.
    fn push(&mut self, piece: &str);
    /// Whether `piece` may follow where the model holds to it and none of
    /// its likeliest tokens is allowed: a looser rule, for what is worse
    /// than the model's second choices but better than far-down tokens.
    /// By default the same rule.
    fn allows_as_last_resort(&self, piece: &str) -> bool {
        self.allows(piece)
    }
    /// Whether `piece` is worth asking `allows` about once none of the
    /// likeliest tokens is allowed: a cheap look through the whole
    /// vocabulary for what the rule may want (a part of a name). By
    /// default none is.
    fn worth_trying(&self, _piece: &str) -> bool {
        false
    }
    /// Whether a letter may follow whose first bytes are drawn and whose
    /// rest is to come, so that no text can be judged yet. By default one
    /// may.
    fn allows_unfinished_letter(&self) -> bool {
        true
    }
}

/// A constraint as a sampling setting; two settings are equal when they
/// hold the same rule.
#[derive(Clone)]
pub struct Constraint(pub Arc<dyn TextConstraint>);

impl PartialEq for Constraint {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Constraint")
    }
}

/// Draws at most this many tokens for one position before looking for the
/// tokens the rule allows in order of likelihood.
pub const MAX_REDRAWS: usize = 32;
