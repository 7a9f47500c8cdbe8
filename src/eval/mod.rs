//! Evaluation: dataset adapters, predictions files and execution accuracy.

pub mod dataset;
pub mod predictions;
pub mod score;

pub use dataset::{load, DatasetKind, Example, Filters, LoadedDataset, Split};
pub use predictions::Predictions;
pub use score::{score, EvalOptions, QuestionScore, Report, Tally, Verdict};
