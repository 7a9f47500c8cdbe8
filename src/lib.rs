//! iesr answers questions over structured data by searching over SQL
//! reasoning trajectories with a local language model, verifying every
//! candidate by executing it.
//!
//! This crate holds the guarded SQLite layer ([`db`]), and the
//! execution-accuracy evaluator with its dataset adapters ([`eval`]).

pub mod db;
pub mod error;
pub mod eval;

pub use error::{Error, QueryError, Result};
pub mod llm;
pub mod prompts;
pub mod search;
pub mod trace;
