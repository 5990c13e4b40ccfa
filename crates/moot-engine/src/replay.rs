//! Reading stored calls back: the outcome and key a stored call stands for, and the transcript
//! a run's calls make (for resuming, deciding again, and reports). Answers are re-extracted
//! from the stored text, so stored runs follow the current extractor.

use moot_core::chat::{CallMode, LogprobSummary};
use moot_core::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use moot_core::Answer;
use moot_store::CallRecord;

use crate::reask::{previous_answer, reading_after_reask};

/// The transcript outcome a stored call stands for; the answer is re-extracted from the text so
/// stored runs follow the current extractor. `previous` is the answer the agent held before
/// the call (under freemad's contract a KEEP stands for it).
pub fn outcome_of(spec: &DebateSpec, previous: Option<&Answer>, call: &CallRecord) -> Outcome {
    if call.skipped {
        return Outcome::Skipped {
            reason: call.error.clone().unwrap_or_else(|| "skipped".into()),
        };
    }
    match &call.response_text {
        Some(text) => {
            // Notes that no longer read (a damaged row) are taken as none: the response's own
            // answer then stands, as it did before any re-ask.
            let reask = moot_core::protocol::CallNotes::from_json(&call.notes)
                .ok()
                .and_then(|notes| notes.reask);
            Outcome::Responded {
                text: text.clone(),
                answer: reading_after_reask(
                    spec,
                    call.agent as usize,
                    mode_of(call),
                    text,
                    previous,
                    reask.as_ref().map(|r| r.reply.as_deref()),
                )
                .answer,
                logprobs: logprobs_of(call),
            }
        }
        None => Outcome::Missing {
            reason: call.error.clone().unwrap_or_else(|| "no response".into()),
        },
    }
}

/// The logprob summary stored with a call, if its backend returned logprobs.
fn logprobs_of(call: &CallRecord) -> Option<LogprobSummary> {
    Some(LogprobSummary {
        tokens: call.logprob_tokens? as usize,
        mean: call.logprob_mean?,
        min: call.logprob_min?,
        perplexity: call.perplexity?,
    })
}

/// The key of a stored call, or `None` when its slot is not one this version knows.
pub fn key_of(call: &CallRecord) -> Option<CallKey> {
    Some(CallKey {
        round: call.round as usize,
        agent: call.agent as usize,
        slot: Slot::parse(&call.slot)?,
    })
}

/// Places a stored call's outcome in a transcript; `None` when the call lies outside the
/// debate's shape.
pub fn fold_call(
    spec: &DebateSpec,
    transcript: &mut Transcript,
    call: &CallRecord,
) -> Option<CallKey> {
    let key = key_of(call)?;
    let previous = previous_answer(transcript, key.round, key.agent).cloned();
    transcript
        .set_call(key, outcome_of(spec, previous.as_ref(), call))
        .then_some(key)
}

/// The transcript a stored run's calls stand for.
pub fn transcript_of(spec: &DebateSpec, calls: &[CallRecord]) -> Transcript {
    let mut transcript = Transcript::new(spec.agents.len(), spec.rounds);
    for call in calls {
        fold_call(spec, &mut transcript, call);
    }
    transcript
}

/// The mode a stored call was made in (`critique`, else a first answer).
pub(crate) fn mode_of(call: &CallRecord) -> CallMode {
    if call.mode == CallMode::Critique.as_str() {
        CallMode::Critique
    } else {
        CallMode::Generate
    }
}
