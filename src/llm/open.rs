//! The model a user names, opened the same way by every front end (the
//! command line, the servers, the Python package): a known model missing
//! from the cache is pulled first, a backend this build lacks is refused
//! before anything is pulled or loaded.

use super::batching::BatchingModel;
use super::card::find_card;
use super::local::LocalModel;
use super::openai::OpenAiModel;
use super::pull::{pull, PullProgress};
use super::{load_llamacpp, load_local, require_llamacpp, LanguageModel};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

/// Questions a benchmark keeps in flight on a GPU by default.
const GPU_CONCURRENCY: usize = 16;

/// The engine that runs a local GGUF model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Our own kernels (candle).
    Candle,
    /// llama.cpp in this process (a build with `--features llama-cpp`).
    LlamaCpp,
}

/// An OpenAI-compatible server that runs the model instead.
#[derive(Debug, Clone)]
pub struct OpenAiServer {
    pub url: String,
    /// Longest wait for one answer.
    pub timeout: Duration,
    /// Retries of a request that failed in a way that may pass.
    pub retries: u32,
}

/// Which model answers, and where it runs.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    /// A model name (pulled when missing), a GGUF file, a Hugging Face
    /// checkpoint directory or hf:OWNER/REPO; with a server, the name the
    /// server expects.
    pub model: String,
    /// cpu, or cuda:N with the `cuda` feature.
    pub device: String,
    pub backend: Backend,
    pub server: Option<OpenAiServer>,
    /// Guessed tokens the candle backend checks per forward pass.
    pub draft_tokens: usize,
}

impl ModelSpec {
    /// `model` on this machine's CPU with the default backend settings.
    pub fn local(model: &str) -> Self {
        ModelSpec {
            model: model.to_string(),
            device: "cpu".into(),
            backend: Backend::Candle,
            server: None,
            draft_tokens: super::local::DEFAULT_MAX_DRAFT,
        }
    }

    /// The same settings for another model (a discriminator beside the
    /// main model).
    pub fn with_model(&self, model: &str) -> Self {
        ModelSpec {
            model: model.to_string(),
            ..self.clone()
        }
    }

    /// Pulls the model when it is a known one missing from the cache,
    /// telling `report` how the pull goes; fails first when the backend
    /// cannot run in this build. Nothing to do for a server's model.
    pub fn prepare(&self, report: &mut dyn FnMut(&str, PullProgress)) -> Result<()> {
        if self.server.is_some() {
            return Ok(());
        }
        if self.backend == Backend::LlamaCpp {
            require_llamacpp()?;
        }
        if let Ok(card) = find_card(&self.model) {
            if !card.cached_path().is_file() {
                pull(&card, &mut |event| report(&card.name, event))?;
            }
        }
        Ok(())
    }

    /// Opens the model (after `prepare`, which `open` calls with a silent
    /// report).
    pub fn open(&self) -> Result<Arc<dyn LanguageModel>> {
        self.prepare(&mut |_, _| {})?;
        if let Some(server) = &self.server {
            return Ok(Arc::new(
                OpenAiModel::new(
                    &server.url,
                    &self.model,
                    std::env::var("OPENAI_API_KEY").ok(),
                    server.timeout,
                )
                .with_retries(server.retries),
            ));
        }
        match self.backend {
            Backend::Candle => Ok(Arc::new(self.load_candle()?)),
            Backend::LlamaCpp => load_llamacpp(&self.model, rayon::current_num_threads()),
        }
    }

    /// Opens the model for `callers` threads that call it side by side: a
    /// model on our own kernels then decodes their calls together
    /// (`batching`); a server takes them as concurrent requests.
    pub fn open_for_callers(&self, callers: usize) -> Result<Arc<dyn LanguageModel>> {
        if callers <= 1 || self.server.is_some() {
            return self.open();
        }
        self.prepare(&mut |_, _| {})?;
        match self.backend {
            Backend::Candle => Ok(Arc::new(BatchingModel::start(self.load_candle()?)?)),
            Backend::LlamaCpp => Err(Error::InvalidArgument(
                "--concurrency above 1 needs the candle backend or a served model (--openai-url); the llama.cpp backend answers one call at a time".into(),
            )),
        }
    }

    fn load_candle(&self) -> Result<LocalModel> {
        Ok(load_local(&self.model, &super::device(&self.device)?)?
            .with_max_draft(self.draft_tokens))
    }

    /// Questions a benchmark answers at once unless told: many on a GPU,
    /// whose passes cost about the same for one row as for dozens; one on
    /// a CPU, where gathering questions measured no faster, and against a
    /// server, whose number of slots is unknown here.
    pub fn default_concurrency(&self) -> usize {
        if self.server.is_none() && self.on_gpu() {
            GPU_CONCURRENCY
        } else {
            1
        }
    }

    /// A GPU or a server: fast enough for the search by default.
    pub fn gpu_class(&self) -> bool {
        self.server.is_some() || self.on_gpu()
    }

    /// Whether an in-process model runs on a GPU (`--device cuda:N`).
    fn on_gpu(&self) -> bool {
        self.device.starts_with("cuda")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_this_build_lacks_is_refused_before_any_pull() {
        let spec = ModelSpec {
            backend: Backend::LlamaCpp,
            ..ModelSpec::local("a-model-no-card-names")
        };
        let mut pulled = false;
        let prepared = spec.prepare(&mut |_, _| pulled = true);
        assert_eq!(prepared.is_ok(), cfg!(feature = "llama-cpp"));
        assert!(!pulled);
    }

    #[test]
    fn llamacpp_refuses_questions_side_by_side() {
        let spec = ModelSpec {
            backend: Backend::LlamaCpp,
            ..ModelSpec::local("a-model-no-card-names")
        };
        let refused = spec.open_for_callers(2).err().map(|e| e.to_string());
        assert!(
            refused.as_deref().is_some_and(|e| e.contains("llama.cpp")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_server_model_is_neither_pulled_nor_checked_here() {
        let spec = ModelSpec {
            backend: Backend::LlamaCpp,
            server: Some(OpenAiServer {
                url: "http://127.0.0.1:9".into(),
                timeout: Duration::from_secs(1),
                retries: 0,
            }),
            ..ModelSpec::local(super::super::card::DEFAULT_MODEL)
        };
        assert!(spec.prepare(&mut |_, _| panic!("no pull")).is_ok());
        assert!(spec.gpu_class());
        assert!(!ModelSpec::local("m").gpu_class());
        assert_eq!(spec.default_concurrency(), 1);
    }

    #[test]
    fn only_a_local_gpu_answers_many_questions_at_once_by_default() {
        assert_eq!(ModelSpec::local("m").default_concurrency(), 1);
        let on_gpu = ModelSpec {
            device: "cuda:0".into(),
            ..ModelSpec::local("m")
        };
        assert_eq!(on_gpu.default_concurrency(), GPU_CONCURRENCY);
    }
}
