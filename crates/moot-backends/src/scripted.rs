//! `scripted`: fixed responses for tests, optionally delayed, optionally failing.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use crate::{
    BackendError, Capabilities, Completion, CompletionRequest, FinishReason, LanguageModel, Usage,
};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// Reply with this text after `delay`.
    Reply { text: String, delay: Duration },
    /// Fail with this error after `delay`.
    Fail {
        error: BackendError,
        delay: Duration,
    },
    /// Never answer (until cancelled).
    Hang,
}

impl Scripted {
    pub fn reply(text: impl Into<String>) -> Scripted {
        Scripted::Reply {
            text: text.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn delayed(text: impl Into<String>, delay: Duration) -> Scripted {
        Scripted::Reply {
            text: text.into(),
            delay,
        }
    }
}

/// Replies in order; the last reply repeats when the script runs out. Records every request.
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    script: Mutex<VecDeque<Scripted>>,
    last: Mutex<Option<Scripted>>,
    requests: Mutex<Vec<CompletionRequest>>,
}

impl ScriptedModel {
    pub fn new(
        name: impl Into<String>,
        script: impl IntoIterator<Item = Scripted>,
    ) -> ScriptedModel {
        ScriptedModel {
            name: name.into(),
            script: Mutex::new(script.into_iter().collect()),
            last: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn next(&self) -> Option<Scripted> {
        let mut script = self.script.lock().ok()?;
        let mut last = self.last.lock().ok()?;
        match script.pop_front() {
            Some(s) => {
                *last = Some(s.clone());
                Some(s)
            }
            None => last.clone(),
        }
    }
}

/// Whitespace-separated words: a rough, deterministic token count for fakes.
pub fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Words in a conversation's messages.
pub fn count_message_words(messages: &[crate::ChatMessage]) -> u64 {
    messages.iter().map(|m| count_words(&m.content)).sum()
}

/// A finished completion for backends that cannot count tokens (scripted, agent CLIs, sim): the
/// output is counted in words, the input as the caller counted it.
pub fn word_counted(text: String, input_tokens: u64) -> Completion {
    Completion {
        usage: Usage {
            input_tokens,
            output_tokens: count_words(&text),
            processed_input_tokens: None,
            cache_write_input_tokens: None,
        },
        text,
        logprobs: None,
        finish: FinishReason::Stop,
        retries: Vec::new(),
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn name(&self) -> String {
        format!("scripted:{}", self.name)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let messages = request.messages.clone();
        if let Ok(mut r) = self.requests.lock() {
            r.push(request);
        }
        match self.next() {
            None => Err(BackendError::Config(format!(
                "scripted model {} has no script",
                self.name
            ))),
            Some(Scripted::Hang) => std::future::pending().await,
            Some(Scripted::Fail { error, delay }) => {
                tokio::time::sleep(delay).await;
                Err(error)
            }
            Some(Scripted::Reply { text, delay }) => {
                tokio::time::sleep(delay).await;
                Ok(word_counted(text, count_message_words(&messages)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_core::chat::ChatMessage;

    #[tokio::test]
    async fn replies_in_order_then_repeats() {
        let m = ScriptedModel::new("t", [Scripted::reply("one"), Scripted::reply("two words")]);
        let req = CompletionRequest::new(vec![ChatMessage::user("hi there")]);
        assert_eq!(m.complete(req.clone()).await.unwrap().text, "one");
        let c = m.complete(req.clone()).await.unwrap();
        assert_eq!(
            (c.text.as_str(), c.usage.output_tokens, c.usage.input_tokens),
            ("two words", 2, 2)
        );
        assert_eq!(m.complete(req).await.unwrap().text, "two words");
        assert_eq!(m.requests().len(), 3);
    }
}
