//! One error type for the library. Every failure a user can cause is a variant
//! whose message names the problem and what to do about it, on one line.

use std::path::PathBuf;

/// Why a single SQL query produced no result. Cheap to clone, because results
/// (including failures) are cached and shared between search branches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The text is not exactly one read-only query.
    #[error("refused: {0}; only a single SELECT (or WITH ... SELECT) query is allowed")]
    Refused(String),
    /// The query ran past its wall-time limit and was interrupted.
    #[error("query interrupted after the {limit_ms} ms time limit")]
    Timeout { limit_ms: u64 },
    /// A string or blob the query built grew past the limit per value.
    #[error("query stopped: a value grew past the {limit_bytes}-byte limit per value")]
    ValueTooBig { limit_bytes: usize },
    /// SQLite's memory, across the process's connections, reached its limit.
    #[error("query stopped: SQLite's memory reached the {limit_bytes}-byte limit")]
    OutOfMemory { limit_bytes: usize },
    /// SQLite rejected or failed the query (syntax error, unknown column, ...).
    #[error("SQL error: {0}")]
    Sql(String),
    /// SQLite rejected the query at one of its tokens, which starts at byte
    /// `offset` of the query.
    #[error("SQL error: {message}")]
    SqlAt { message: String, offset: usize },
}

/// Every error the library reports to a user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database {} does not exist; pass the path of a SQLite file with --db", .0.display())]
    DatabaseMissing(PathBuf),
    #[error("{} is not a SQLite database ({reason}); pass a SQLite file with --db", path.display())]
    NotSqlite { path: PathBuf, reason: String },
    #[error("database {} is corrupt ({detail}); restore it from a good copy", path.display())]
    CorruptDatabase { path: PathBuf, detail: String },
    #[error("cannot open database {}: {detail}", path.display())]
    DatabaseOpen { path: PathBuf, detail: String },
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("table file {}: {detail}", path.display())]
    TableFile { path: PathBuf, detail: String },
    #[error("graph file {}: {detail}", path.display())]
    GraphFile { path: PathBuf, detail: String },
    #[error("dataset {}: {detail}", path.display())]
    Dataset { path: PathBuf, detail: String },
    #[error("predictions {}, line {line}: {detail}; expected one JSON object per line like {{\"question_id\": 3, \"sql\": \"SELECT ...\"}}", path.display())]
    Predictions {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("demonstration memory {}, line {line}: {detail}; build a store with `iesr memory build`", path.display())]
    Memory {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("{0}")]
    InvalidArgument(String),
    /// A name that no registered database has (the servers).
    #[error("{0}")]
    UnknownDatabase(String),
    #[error("unknown model `{0}`; `iesr model list` shows the known ones, or pass --model PATH to a GGUF file")]
    UnknownModel(String),
    #[error("model file {} does not exist; run `iesr model pull` or pass --model PATH", .0.display())]
    ModelMissing(PathBuf),
    #[error("model file {} is not a usable GGUF ({detail}); delete it and run `iesr model pull` again", path.display())]
    ModelCorrupt { path: PathBuf, detail: String },
    #[error("model {} has architecture `{architecture}`, which iesr cannot run (supported: qwen2, qwen3, llama)", path.display())]
    UnknownArchitecture { path: PathBuf, architecture: String },
    #[error("checksum mismatch for {}: expected sha256 {expected}, got {actual}; the file was deleted, run `iesr model pull` again", path.display())]
    ChecksumMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("cannot fetch the model: {0}")]
    ModelPull(String),
    #[error("the prompt has {tokens} tokens, more than the model's context of {context}; shorten the question or schema")]
    PromptTooLong { tokens: usize, context: usize },
    #[error("model failure: {0}")]
    Inference(String),
    /// A server that could not start, listen or keep serving.
    #[error("{0}")]
    Server(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A model file that cannot be used, with the first line of the cause.
    pub(crate) fn model_corrupt(path: &std::path::Path, detail: impl std::fmt::Display) -> Self {
        Error::ModelCorrupt {
            path: path.to_path_buf(),
            detail: first_line(detail),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A file or folder that could not be created or written.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Write {
            path: path.into(),
            source,
        }
    }
}

/// The first line of a message from a lower layer (some append a backtrace),
/// so every error stays one line.
pub(crate) fn first_line(message: impl std::fmt::Display) -> String {
    let text = message.to_string();
    text.lines().next().unwrap_or_default().trim().to_string()
}
