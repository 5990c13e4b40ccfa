//! Asking again for a final line: an answer whose response has no readable answer is asked
//! once more, with a reminder of the format, and the reply to that is what the answer is read
//! from.

use moot_backends::{BackendError, Completion, CompletionRequest};
use moot_core::chat::ChatMessage;
use moot_core::debate::{DebateSpec, Slot};
use moot_core::prompts;
use moot_core::protocol::{PlannedCall, ReaskNote};
use moot_core::redact::Redactor;
use moot_core::Answer;

/// What a call needs to ask again: how its answers are read, and the reminder to send.
pub(crate) struct Reask {
    spec: DebateSpec,
    reminder: String,
}

impl Reask {
    /// The re-ask for `call` when re-asking is on. Only answers are re-asked: judgements and
    /// challenges are read differently.
    pub(crate) fn for_call(enabled: bool, spec: &DebateSpec, call: &PlannedCall) -> Option<Reask> {
        (enabled && call.slot == Slot::Answer).then(|| Reask {
            spec: spec.clone(),
            reminder: prompts::render(
                prompts::REASK,
                &[("format", prompts::format_instruction(spec.kind))],
            ),
        })
    }

    /// Whether `first` leaves nothing to read an answer from.
    pub(crate) fn needed(&self, first: &Completion) -> bool {
        self.spec.extract(&first.text).is_none()
    }

    /// The request asking again: the conversation so far, the unreadable reply, the reminder.
    pub(crate) fn request(&self, original: CompletionRequest, reply: &str) -> CompletionRequest {
        let mut messages = original.messages;
        messages.push(ChatMessage::assistant(reply.to_string()));
        messages.push(ChatMessage::user(self.reminder.clone()));
        CompletionRequest {
            messages,
            ..original
        }
    }
}

/// What the transcript notes about a re-ask: the reply or why there was none, and its tokens.
pub(crate) fn note(again: &Result<Completion, BackendError>, redactor: &Redactor) -> ReaskNote {
    match again {
        Ok(c) => ReaskNote {
            reply: Some(redactor.redact(&c.text).into_owned()),
            error: None,
            input_tokens: c.usage.input_tokens,
            output_tokens: c.usage.output_tokens,
            processed_input_tokens: c.usage.processed_input_tokens,
        },
        Err(e) => ReaskNote {
            reply: None,
            error: Some(redactor.redact(&e.to_string()).into_owned()),
            input_tokens: 0,
            output_tokens: 0,
            processed_input_tokens: None,
        },
    }
}

/// A response's answer; after a re-ask (`Some(reply)`), the one in the reply to it, or none.
pub(crate) fn answer_after_reask(
    spec: &DebateSpec,
    text: &str,
    reask_reply: Option<Option<&str>>,
) -> Option<Answer> {
    match reask_reply {
        Some(reply) => reply.and_then(|r| spec.extract(r)),
        None => spec.extract(text),
    }
}
