//! A backend for any OpenAI-compatible server (vLLM, SGLang, llama.cpp):
//! the way to scale the search out to a GPU cluster.

use super::{
    ChatMessage, Completion, FinishReason, Generation, LanguageModel, Prompt, Sampling, Usage,
};
use crate::error::{first_line, Error, Result};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Retries of a request that failed in a way that may pass (the connection
/// refused, reset or closed mid-answer; HTTP 429 or 5xx) by default.
pub const DEFAULT_RETRIES: u32 = 2;

/// Wait before the first retry; each later one waits four times longer.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

pub struct OpenAiModel {
    base_url: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    timeout: Duration,
    retries: u32,
}

/// Why one request failed, and whether trying again may help.
struct Failure {
    detail: String,
    transient: bool,
}

impl Failure {
    fn of(error: &ureq::Error, timeout: Duration) -> Self {
        use std::io::ErrorKind;
        if let ureq::Error::Timeout(_) = error {
            // A hung server is not tried again: the timeout is the
            // longest a user waits.
            return Failure::fatal(format!(
                "no answer within {} s; pass a larger --openai-timeout if the server is only slow",
                timeout.as_secs_f64()
            ));
        }
        let transient = match error {
            ureq::Error::ConnectionFailed | ureq::Error::Protocol(_) => true,
            ureq::Error::Io(e) => matches!(
                e.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            ),
            _ => false,
        };
        Failure {
            detail: error.to_string(),
            transient,
        }
    }

    fn status(status: ureq::http::StatusCode, text: &str) -> Self {
        Failure {
            detail: format!("server answered {status}: {text}"),
            transient: status.as_u16() == 429 || status.is_server_error(),
        }
    }

    fn fatal(detail: String) -> Self {
        Failure {
            detail,
            transient: false,
        }
    }
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChatMessage>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ResponseUsage {
    #[serde(default)]
    prompt_tokens: usize,
    #[serde(default)]
    completion_tokens: usize,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: usize,
}

/// What one request asks for: `n` choices at `temperature`, drawn with `seed`.
#[derive(Clone, Copy)]
struct Rows {
    n: usize,
    temperature: f32,
    seed: u64,
}

/// What one request brought back.
struct Answered {
    completions: Vec<Completion>,
    prompt_tokens: usize,
    cached_prompt_tokens: usize,
    generated_tokens: usize,
}

impl OpenAiModel {
    /// `base_url` is the server's root (`http://host:8000`) or its `/v1`;
    /// `timeout` bounds each request, from connecting to the answer's end.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>, timeout: Duration) -> Self {
        let root = base_url.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root);
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        OpenAiModel {
            base_url: root.to_string(),
            model: model.to_string(),
            api_key,
            agent,
            timeout,
            retries: DEFAULT_RETRIES,
        }
    }

    /// Tries a request that failed transiently up to `retries` more times.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The completions of one request, at most `rows.n`.
    fn ask(&self, prompt: &Prompt, sampling: &Sampling, rows: Rows) -> Result<Answered> {
        let (url, body) = self.body(prompt, sampling, rows);
        let response = self.post(&url, &body)?;
        if response.choices.is_empty() {
            return Err(Error::Inference(format!(
                "{url}: the server returned no choices"
            )));
        }
        let reported = response.usage.unwrap_or_default();
        let per_choice = reported.completion_tokens / response.choices.len();
        let completions = response
            .choices
            .into_iter()
            .take(rows.n)
            .map(|choice| Completion {
                text: choice
                    .message
                    .map(|m| m.content)
                    .or(choice.text)
                    .unwrap_or_default(),
                finish_reason: match choice.finish_reason.as_deref() {
                    Some("length") => FinishReason::Length,
                    _ => FinishReason::Stop,
                },
                generated_tokens: per_choice,
            })
            .collect();
        Ok(Answered {
            completions,
            prompt_tokens: reported.prompt_tokens,
            cached_prompt_tokens: reported
                .prompt_tokens_details
                .map_or(0, |d| d.cached_tokens),
            generated_tokens: reported.completion_tokens,
        })
    }

    fn body(&self, prompt: &Prompt, sampling: &Sampling, rows: Rows) -> (String, Value) {
        let mut body = json!({
            "model": self.model,
            "n": rows.n,
            "temperature": rows.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": rows.seed,
        });
        if !sampling.stop.is_empty() {
            body["stop"] = json!(sampling.stop);
        }
        if sampling.top_k > 0 {
            // Not in OpenAI's API, but vLLM, SGLang and llama.cpp accept it.
            body["top_k"] = json!(sampling.top_k);
        }
        if sampling.min_p > 0.0 {
            // Likewise: vLLM, SGLang and llama.cpp read min_p.
            body["min_p"] = json!(sampling.min_p);
        }
        match prompt {
            Prompt::Chat(messages) => {
                body["messages"] = json!(messages);
                if messages.last().is_some_and(|m| m.role == "assistant") {
                    // Continue that reply rather than answer after it:
                    // the names vLLM and SGLang read; a server without
                    // them may begin a new reply instead.
                    body["continue_final_message"] = json!(true);
                    body["add_generation_prompt"] = json!(false);
                }
                (format!("{}/v1/chat/completions", self.base_url), body)
            }
            Prompt::Raw(text) => {
                body["prompt"] = json!(text);
                (format!("{}/v1/completions", self.base_url), body)
            }
        }
    }

    fn post(&self, url: &str, body: &Value) -> Result<Response> {
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            match self.post_once(url, body) {
                Ok(response) => return Ok(response),
                Err(failure) if failure.transient && attempt < self.retries => {
                    attempt += 1;
                    std::thread::sleep(backoff);
                    backoff *= 4;
                }
                Err(failure) => {
                    let tries = if attempt > 0 {
                        format!(" (after {} tries)", attempt + 1)
                    } else {
                        String::new()
                    };
                    return Err(Error::Inference(format!(
                        "{url}: {}{tries}",
                        first_line(failure.detail)
                    )));
                }
            }
        }
    }

    fn post_once(&self, url: &str, body: &Value) -> std::result::Result<Response, Failure> {
        let mut request = self.agent.post(url);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send_json(body)
            .map_err(|e| Failure::of(&e, self.timeout))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| Failure::of(&e, self.timeout))?;
        if !status.is_success() {
            return Err(Failure::status(status, &text));
        }
        serde_json::from_str(&text).map_err(|e| {
            let start: String = text.chars().take(80).collect();
            Failure::fatal(format!("not an OpenAI-style answer ({e}): {start}"))
        })
    }
}

impl LanguageModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.model
    }

    /// Servers that ignore `n` get further requests with the following
    /// seeds, all at once (a server with several slots computes them
    /// together), until `n` completions are in. A server samples every
    /// choice of a request alike, so greedy rows (`Sampling::greedy_rows`)
    /// are asked for in a request of their own at temperature 0. Row i of
    /// a larger request is asked for with seed + i, so rows asked for apart
    /// (`first_row`) do not repeat the first rows' draws.
    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let started = Instant::now();
        let wanted = sampling.n.max(1);
        let greedy = sampling.greedy_rows_here();
        let first_seed = sampling.seed.wrapping_add(sampling.first_row as u64);
        let rows = |start: usize, n: usize, temperature: f32| Rows {
            n,
            temperature,
            seed: first_seed.wrapping_add(start as u64),
        };
        let mut answers = Vec::new();
        for (start, end, temperature) in [(0, greedy, 0.0), (greedy, wanted, sampling.temperature)]
        {
            if start == end {
                continue;
            }
            let first = self.ask(prompt, sampling, rows(start, end - start, temperature))?;
            let missing = start + first.completions.len()..end;
            answers.push(first);
            let rest = std::thread::scope(|scope| {
                let asked: Vec<_> = missing
                    .map(|row| {
                        let one = rows(row, 1, temperature);
                        scope.spawn(move || self.ask(prompt, sampling, one))
                    })
                    .collect();
                asked
                    .into_iter()
                    .map(|request| request.join().expect("a request thread panicked"))
                    .collect::<Result<Vec<Answered>>>()
            })?;
            answers.extend(rest);
        }
        let mut completions = Vec::with_capacity(wanted);
        let mut usage = Usage {
            prompt_tokens: answers.first().map_or(0, |a| a.prompt_tokens),
            ..Usage::default()
        };
        for answer in answers {
            usage.cached_prompt_tokens += answer.cached_prompt_tokens;
            usage.generated_tokens += answer.generated_tokens;
            completions.extend(answer.completions);
        }
        // The server does not say how its time split; all of it is counted
        // as decoding.
        usage.decode_seconds = started.elapsed().as_secs_f64();
        Ok(Generation { completions, usage })
    }
}
