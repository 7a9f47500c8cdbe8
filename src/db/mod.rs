//! SQLite: guarded read-only execution, result digests and comparison,
//! schema introspection and rendering.

pub mod compare;
mod descriptions;
pub mod digest;
pub mod executor;
pub mod guard;
mod implied_keys;
pub mod json_shape;
mod key_names;
pub mod open;
pub mod plain_names;
pub mod render;
pub mod schema;
pub mod value;

pub use compare::{bird_equal, spider_equal, Semantics};
pub use digest::ResultDigest;
pub use executor::{ExecConfig, Executor, QueryOutcome, QueryResult};
pub use plain_names::PlainNames;
pub use render::render_schema;
pub use schema::{quote_identifier, quote_literal, IntrospectOptions, Schema};
pub use value::Value;
