//! Chat prompts rendered with the model's own template (the Jinja text a
//! GGUF stores under `tokenizer.chat_template`), never a hard-coded format.

use super::ChatMessage;
use minijinja::{context, Environment, Error as JinjaError, ErrorKind, Value};
use std::collections::BTreeMap;

pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, String> {
        let mut env = Environment::new();
        // Templates call Python string methods (`.strip()`, `.startswith()`).
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, JinjaError> {
                Err(JinjaError::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| format!("the chat template does not parse: {e}"))?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// The prompt text for `messages`, ending where the assistant's reply
    /// begins. A final assistant message is a reply begun: the text ends
    /// with it, left open for the model to continue.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String, String> {
        if let Some((last, earlier)) = messages.split_last() {
            if last.role == "assistant" {
                return Ok(self.render(earlier)? + &last.content);
            }
        }
        let template = self.env.get_template("chat").expect("added in new()");
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                Value::from(BTreeMap::from([
                    ("role", m.role.clone()),
                    ("content", m.content.clone()),
                ]))
            })
            .collect();
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            })
            .map_err(|e| format!("the chat template failed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ChatML template as Qwen's GGUFs carry it, in short.
    fn chatml() -> ChatTemplate {
        let source = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content.strip() }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        ChatTemplate::new(source, "", "<|im_end|>").unwrap()
    }

    #[test]
    fn renders_a_chatml_style_template() {
        let template = chatml();
        let text = template
            .render(&[
                ChatMessage::new("system", "Be brief. "),
                ChatMessage::new("user", "Hi"),
            ])
            .unwrap();
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn a_final_assistant_message_is_continued() {
        // The reply begun is left as written: not stripped, not closed.
        let text = chatml()
            .render(&[
                ChatMessage::new("user", "Hi"),
                ChatMessage::new("assistant", "Hello, "),
            ])
            .unwrap();
        assert_eq!(
            text,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello, "
        );
    }

    #[test]
    fn template_errors_are_reported_not_panics() {
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
        let raising = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        assert!(raising.render(&[]).unwrap_err().contains("no system role"));
    }
}
