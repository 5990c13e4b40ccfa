//! Asking again for a final line: an answer whose response has no readable answer is asked
//! once more, with a reminder of the format, and the reply to that is what the answer is read
//! from.

use moot_backends::{BackendError, Completion, CompletionRequest};
use moot_core::chat::{CallMode, ChatMessage};
use moot_core::contract::ReplyContract;
use moot_core::debate::{DebateSpec, Outcome, Reading, Slot, Transcript};
use moot_core::prompts;
use moot_core::protocol::{PlannedCall, ReaskNote};
use moot_core::redact::Redactor;
use moot_core::Answer;

/// What a call needs to ask again: how its answers are read, and the reminder to send.
pub(crate) struct Reask {
    spec: DebateSpec,
    agent: usize,
    mode: CallMode,
    /// The answer the agent held before this call (freemad's KEEP stands for it).
    previous: Option<Answer>,
    reminder: String,
}

impl Reask {
    /// The re-ask for `call` when re-asking is on. Only answers are re-asked (judgements and
    /// challenges are read differently), and only where an answer is due (a judge's look at
    /// the debate may rightly give none).
    pub(crate) fn for_call(
        enabled: bool,
        spec: &DebateSpec,
        call: &PlannedCall,
        previous: Option<&Answer>,
    ) -> Option<Reask> {
        (enabled && call.slot == Slot::Answer && !call.notes.answer_optional).then(|| Reask {
            spec: spec.clone(),
            agent: call.agent,
            mode: call.mode,
            previous: previous.cloned(),
            reminder: reminder(spec, call),
        })
    }

    /// Whether `first` leaves nothing to read an answer from.
    pub(crate) fn needed(&self, first: &Completion) -> bool {
        self.spec
            .read_reply(self.agent, self.mode, &first.text, self.previous.as_ref())
            .answer
            .is_none()
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

/// The reminder a re-ask of `call` sends: the final-line format, or under freemad's contract
/// its layout (freemad also asks once more).
fn reminder(spec: &DebateSpec, call: &PlannedCall) -> String {
    match spec.contract(call.agent) {
        ReplyContract::Moot => prompts::render(
            prompts::REASK,
            &[("format", prompts::format_instruction(spec.kind))],
        ),
        ReplyContract::Freemad => {
            let sections = match call.mode {
                CallMode::Generate => "SOLUTION, REASONING",
                CallMode::Critique => "DECISION, then REVISED_SOLUTION when revising, REASONING",
            };
            prompts::render(prompts::FREEMAD_REASK, &[("sections", sections)])
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
            cache_write_input_tokens: c.usage.cache_write_input_tokens,
        },
        Err(e) => ReaskNote {
            reply: None,
            error: Some(redactor.redact(&e.to_string()).into_owned()),
            input_tokens: 0,
            output_tokens: 0,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
        },
    }
}

/// How agent `agent`'s reply `text` to a call in `mode` reads; after a re-ask
/// (`Some(reply)`), the reply to it is read instead (no reply: no answer). `previous` is the
/// answer the agent held before the call.
pub(crate) fn reading_after_reask(
    spec: &DebateSpec,
    agent: usize,
    mode: CallMode,
    text: &str,
    previous: Option<&Answer>,
    reask_reply: Option<Option<&str>>,
) -> Reading {
    match reask_reply {
        Some(Some(reply)) => spec.read_reply(agent, mode, reply, previous),
        Some(None) => Reading {
            answer: None,
            note: spec.read_reply(agent, mode, text, previous).note,
        },
        None => spec.read_reply(agent, mode, text, previous),
    }
}

/// The answer `agent` held before `round`: its last response's, skips carrying it.
pub(crate) fn previous_answer(t: &Transcript, round: usize, agent: usize) -> Option<&Answer> {
    let before = round.checked_sub(1)?;
    t.effective(before, agent).and_then(Outcome::answer)
}
