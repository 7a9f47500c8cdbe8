//! A backend for any OpenAI-compatible server (vLLM, SGLang, llama.cpp):
//! the way to scale the search out to a GPU cluster.

use super::{
    ChatMessage, Completion, FinishReason, Generation, LanguageModel, Prompt, Sampling, Usage,
};
use crate::error::{first_line, Error, Result};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub struct OpenAiModel {
    base_url: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
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

impl OpenAiModel {
    /// `base_url` is the server's root (`http://host:8000`) or its `/v1`.
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
        }
    }

    fn body(&self, prompt: &Prompt, sampling: &Sampling, n: usize, seed: u64) -> (String, Value) {
        let mut body = json!({
            "model": self.model,
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": seed,
        });
        if !sampling.stop.is_empty() {
            body["stop"] = json!(sampling.stop);
        }
        if sampling.top_k > 0 {
            // Not in OpenAI's API, but vLLM, SGLang and llama.cpp accept it.
            body["top_k"] = json!(sampling.top_k);
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
        let failed = |detail: String| Error::Inference(format!("{url}: {}", first_line(detail)));
        let mut request = self.agent.post(url);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request.send_json(body).map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!("server answered {status}: {text}")));
        }
        serde_json::from_str(&text).map_err(|e| failed(format!("unexpected response ({e})")))
    }
}

impl LanguageModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.model
    }

    /// Servers that ignore `n` get further requests with the following
    /// seeds until `n` completions are in.
    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let started = Instant::now();
        let wanted = sampling.n.max(1);
        let mut completions = Vec::with_capacity(wanted);
        let mut usage = Usage::default();
        let mut seed = sampling.seed;
        while completions.len() < wanted {
            let (url, body) = self.body(prompt, sampling, wanted - completions.len(), seed);
            let response = self.post(&url, &body)?;
            if response.choices.is_empty() {
                return Err(Error::Inference(format!(
                    "{url}: the server returned no choices"
                )));
            }
            let reported = response.usage.unwrap_or_default();
            usage.prompt_tokens = reported.prompt_tokens;
            usage.cached_prompt_tokens += reported
                .prompt_tokens_details
                .map_or(0, |d| d.cached_tokens);
            usage.generated_tokens += reported.completion_tokens;
            let per_choice = reported.completion_tokens / response.choices.len();
            for choice in response
                .choices
                .into_iter()
                .take(wanted - completions.len())
            {
                let text = choice
                    .message
                    .map(|m| m.content)
                    .or(choice.text)
                    .unwrap_or_default();
                let finish_reason = match choice.finish_reason.as_deref() {
                    Some("length") => FinishReason::Length,
                    _ => FinishReason::Stop,
                };
                completions.push(Completion {
                    text,
                    finish_reason,
                    generated_tokens: per_choice,
                });
            }
            seed = seed.wrapping_add(1);
        }
        // The server does not say how its time split; all of it is counted
        // as decoding.
        usage.decode_seconds = started.elapsed().as_secs_f64();
        Ok(Generation { completions, usage })
    }
}
