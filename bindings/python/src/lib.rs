//! The engine for Python: `iesr.Engine` answers questions over one SQLite
//! database, `iesr.bench` runs a benchmark. Results cross as JSON text,
//! which the package's Python layer turns into dicts, so their keys are
//! exactly those of `iesr search --json`, `iesr serve` and `iesr bench
//! --json`. The model runs with the interpreter's lock released.

use clap::ValueEnum;
use iesr::eval::bench::BenchConfig;
use iesr::eval::{DatasetKind, Filters, Progress, Split};
use iesr::llm::card::DEFAULT_MODEL;
use iesr::llm::open::ModelSpec;
use iesr::search::SearchConfig;
use iesr::service::{
    default_answering, method_config, AnswerRequest, MethodName, ScSettings, Service,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::PathBuf;

create_exception!(
    _iesr,
    IesrError,
    PyException,
    "A request iesr cannot carry out; the message says what to change."
);

fn py_error(error: iesr::Error) -> PyErr {
    IesrError::new_err(error.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("engine results serialize")
}

/// The model `model` (the default model when None) on `device`.
fn model_spec(model: Option<&str>, device: &str) -> ModelSpec {
    ModelSpec {
        device: device.to_string(),
        ..ModelSpec::local(model.unwrap_or(DEFAULT_MODEL))
    }
}

/// The method named with the engine's settings, else the command line's
/// default answer on this device (`service::default_answering`).
fn answering(method: Option<&str>, spec: &ModelSpec) -> PyResult<(MethodName, SearchConfig)> {
    let mut base = SearchConfig::default();
    let method = match method {
        Some(name) => MethodName::parse(name).map_err(py_error)?,
        None => {
            default_answering(&mut base, spec.gpu_class());
            MethodName::Iesr
        }
    };
    Ok((method, base))
}

/// The registered name of a database file: its file name without the
/// extension, with characters a name may not hold made `_`.
fn database_name(path: &std::path::Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "db".into()
    } else {
        name
    }
}

/// One database, one model, one method: ask it questions.
#[pyclass(frozen, module = "iesr._iesr")]
struct Engine {
    service: Service,
    db: String,
    method: MethodName,
    budget: Option<usize>,
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (db, model=None, method=None, budget=None, device="cpu"))]
    fn new(
        py: Python<'_>,
        db: PathBuf,
        model: Option<String>,
        method: Option<String>,
        budget: Option<usize>,
        device: &str,
    ) -> PyResult<Self> {
        let spec = model_spec(model.as_deref(), device);
        let (method, base) = answering(method.as_deref(), &spec)?;
        let name = database_name(&db);
        let sc = ScSettings::default();
        let config = method_config(&base, method, budget, sc);
        let databases = [(name.clone(), db)];
        // The databases are checked before the model loads.
        iesr::service::check_databases(&databases).map_err(py_error)?;
        let service = py
            .detach(|| Service::new(&databases, spec.open()?, None, config, sc))
            .map_err(py_error)?;
        Ok(Engine {
            service,
            db: name,
            method,
            budget,
        })
    }

    /// The answer to `question` as JSON: the chosen query, its result,
    /// confidence, cost and (with `trace`) the whole trace.
    #[pyo3(signature = (question, hint=None, trace=true))]
    fn answer(
        &self,
        py: Python<'_>,
        question: String,
        hint: Option<String>,
        trace: bool,
    ) -> PyResult<String> {
        let request = AnswerRequest {
            db: self.db.clone(),
            question,
            hint,
            method: Some(self.method),
            budget: self.budget,
            trace,
        };
        py.detach(|| self.service.answer(&request, &mut |_| {}))
            .map(|view| to_json(&view))
            .map_err(py_error)
    }

    /// The database's schema as JSON: the annotated DDL the model sees,
    /// and the tables and columns as data.
    fn schema(&self) -> PyResult<String> {
        self.service
            .schema(&self.db)
            .map(|view| to_json(&view))
            .map_err(py_error)
    }

    /// One guarded read query's result as JSON (at most `max_rows` rows).
    #[pyo3(signature = (sql, max_rows=100))]
    fn sql(&self, py: Python<'_>, sql: &str, max_rows: usize) -> PyResult<String> {
        py.detach(|| self.service.sql(&self.db, sql, max_rows))
            .map(|result| to_json(&result))
            .map_err(py_error)
    }
}

/// A named choice of a command-line enum (`spider`, `mini500`).
fn choice<T: ValueEnum>(kind: &str, value: &str) -> PyResult<T> {
    T::from_str(value, true).map_err(|_| {
        let known: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
            .collect();
        IesrError::new_err(format!(
            "unknown {kind} `{value}`; use one of {}",
            known.join(", ")
        ))
    })
}

/// Runs a benchmark as `iesr bench` does (resumable with `resume`, traces
/// and predictions under `out`) and returns its summary as JSON.
#[pyfunction]
#[pyo3(signature = (
    dataset, data_dir, out, model=None, method="greedy", budget=None,
    subset=None, split="all", db=None, limit=None, resume=false, device="cpu"
))]
#[allow(clippy::too_many_arguments)]
fn bench(
    py: Python<'_>,
    dataset: &str,
    data_dir: PathBuf,
    out: PathBuf,
    model: Option<String>,
    method: &str,
    budget: Option<usize>,
    subset: Option<PathBuf>,
    split: &str,
    db: Option<String>,
    limit: Option<usize>,
    resume: bool,
    device: &str,
) -> PyResult<String> {
    let kind: DatasetKind = choice("dataset", dataset)?;
    let split: Split = choice("split", split)?;
    let spec = model_spec(model.as_deref(), device);
    let method = MethodName::parse(method).map_err(py_error)?;
    let search = method_config(
        &SearchConfig::default(),
        method,
        budget,
        ScSettings::default(),
    );
    py.detach(|| {
        let subset = subset.as_deref().map(iesr::eval::read_subset).transpose()?;
        let filters = Filters {
            split,
            db,
            subset,
            limit,
            ..Filters::default()
        };
        let data = iesr::eval::load(kind, &data_dir, &filters)?;
        let config = BenchConfig {
            out,
            resume,
            search,
            judge: None,
            progress: Progress::Hidden,
            shard: None,
            concurrency: 1,
        };
        iesr::eval::bench::run(&data, spec.open()?, &config)
    })
    .map(|summary| to_json(&summary))
    .map_err(py_error)
}

#[pymodule]
mod _iesr {
    #[pymodule_export]
    use super::{bench, Engine, IesrError};
}
