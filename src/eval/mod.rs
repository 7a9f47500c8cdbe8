pub mod dataset;
