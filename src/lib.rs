//! iesr answers questions over structured data by searching over SQL
//! reasoning trajectories with a local language model, verifying every
//! candidate by executing it.
//!
//! - [`db`]: the guarded read-only SQLite layer, result comparison, schema
//!   introspection and rendering.
//! - [`llm`]: the [`llm::LanguageModel`] trait and its backends (GGUF and
//!   Hugging Face checkpoints on our own transformer, OpenAI-compatible
//!   servers).
//! - [`search`]: answering a question ([`search::Engine`]); [`prompts`] holds
//!   the templates and [`trace`] the record of every call and candidate.
//! - [`eval`]: dataset adapters, execution accuracy and benchmark runs.
//! - [`memory`]: worked examples retrieved into the query-writing prompts.
//! - [`sources`]: CSV, TSV and JSON tables turned into SQLite databases.
//! - [`service`]: the operations other programs call, served over HTTP by
//!   [`serve`] and to AI assistants by [`mcp`].

/// The version and the source revision (`git describe`) of this build.
pub const BUILD: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("IESR_REVISION"), ")");

pub mod action;
pub mod db;
pub mod error;
pub mod eval;
mod files;
pub mod functions;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod prompts;
pub mod search;
pub mod select;
pub mod serve;
pub mod service;
pub mod sources;
pub mod trace;
pub mod trace_view;
pub mod understand;

pub use error::{Error, QueryError, Result};
