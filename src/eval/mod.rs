//! Evaluation: dataset adapters, predictions files and execution accuracy.

pub mod bench;
pub mod dataset;
pub mod denotation;
pub mod memory_build;
pub mod paired;
pub mod plot;
pub mod predictions;
mod progress;
pub mod report;
pub mod score;
pub mod shard;

pub use dataset::{
    load, read_subset, DatasetKind, Example, Filters, Gold, LoadedDataset, Sample, Split,
};
pub use predictions::Predictions;
pub use progress::Progress;
pub use score::{score, score_one, EvalOptions, QuestionScore, Report, Tally, Verdict};
