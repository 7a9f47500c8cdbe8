//! A deterministic stand-in for a model, for unit tests of search logic
//! only: it answers each call with the next texts from a script.

use super::{
    Completion, ContinuationScore, FinishReason, Generation, LanguageModel, Prompt, Sampling, Usage,
};
use crate::error::{Error, Result};
use std::sync::Mutex;

/// Writes a reply from the prompt's text and the completion's index
/// within its call.
type Responder = dyn Fn(&str, usize) -> String + Send + Sync;

/// Gives the log-probability of a continuation after a prompt's text.
type Scorer = dyn Fn(&str, &str) -> f64 + Send + Sync;

pub struct ScriptedModel {
    replies: Mutex<std::collections::VecDeque<String>>,
    responder: Option<Box<Responder>>,
    scorer: Option<Box<Scorer>>,
}

impl ScriptedModel {
    /// Each completion of each call takes the next reply, in order.
    pub fn new<S: Into<String>>(replies: impl IntoIterator<Item = S>) -> Self {
        ScriptedModel {
            replies: Mutex::new(replies.into_iter().map(Into::into).collect()),
            responder: None,
            scorer: None,
        }
    }

    /// Scores continuations with `score(prompt text, continuation)`;
    /// without one the model cannot score, like a remote server.
    pub fn scoring(mut self, score: impl Fn(&str, &str) -> f64 + Send + Sync + 'static) -> Self {
        self.scorer = Some(Box::new(score));
        self
    }

    /// Answers every completion with `respond(prompt text, index in call)`.
    pub fn responding(respond: impl Fn(&str, usize) -> String + Send + Sync + 'static) -> Self {
        ScriptedModel {
            replies: Mutex::new(Default::default()),
            responder: Some(Box::new(respond)),
            scorer: None,
        }
    }

    pub fn remaining(&self) -> usize {
        self.replies.lock().expect("script lock").len()
    }
}

impl LanguageModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        let mut replies = self.replies.lock().expect("script lock");
        let prompt_text = text_of(prompt);
        let completions = (0..sampling.n.max(1))
            .map(|i| {
                let text = match &self.responder {
                    Some(respond) => respond(&prompt_text, i),
                    None => replies
                        .pop_front()
                        .ok_or_else(|| Error::Inference("the script has no more replies".into()))?,
                };
                Ok(Completion {
                    generated_tokens: text.split_whitespace().count(),
                    text,
                    finish_reason: FinishReason::Stop,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let generated_tokens = completions.iter().map(|c| c.generated_tokens).sum();
        Ok(Generation {
            completions,
            usage: Usage {
                prompt_tokens: 10,
                generated_tokens,
                ..Usage::default()
            },
        })
    }

    fn score(&self, prompt: &Prompt, continuation: &str) -> Result<Option<ContinuationScore>> {
        Ok(self.scorer.as_ref().map(|score| ContinuationScore {
            log_prob: score(&text_of(prompt), continuation),
            tokens: continuation.split_whitespace().count(),
            usage: Usage {
                prompt_tokens: 10,
                ..Usage::default()
            },
        }))
    }

    fn can_score(&self) -> bool {
        self.scorer.is_some()
    }
}

fn text_of(prompt: &Prompt) -> String {
    match prompt {
        Prompt::Raw(text) => text.clone(),
        Prompt::Chat(messages) => messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
