//! An assistant reply continued by the model from text already written
//! (a query opened after prose, a query cut where it went wrong): the
//! prompt's states come from the prefix cache, so only the rest costs.

use crate::error::Result;
use crate::llm::{ChatMessage, LanguageModel, Prompt, Sampling};
use crate::trace::CallRecord;

/// `written` followed by one completion of `messages` with `written` as the
/// assistant's reply so far, and the call that wrote the rest.
pub(crate) fn continue_reply(
    model: &dyn LanguageModel,
    messages: &[ChatMessage],
    written: String,
    sampling: &Sampling,
    stage: String,
) -> Result<(String, CallRecord)> {
    let mut messages = messages.to_vec();
    messages.push(ChatMessage::new("assistant", written.clone()));
    let generation = model.generate(&Prompt::Chat(messages.clone()), sampling)?;
    let record = CallRecord::new(stage, messages, sampling, generation);
    let rest = record.outputs.first().cloned().unwrap_or_default();
    Ok((written + &rest, record))
}
