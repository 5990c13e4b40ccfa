//! Writing a call down: the stored [`CallRecord`] built from a planned call and how it ended,
//! written to the store before it enters the in-memory transcript, so a crash never leaves
//! the transcript ahead of what a resume can read back.

use std::collections::BTreeMap;
use std::time::Duration;

use moot_backends::{BackendError, Completion};
use moot_core::chat::FailedAttempt;
use moot_core::debate::{CallKey, DebateSpec, Reading, Transcript};
use moot_core::protocol::{PlannedCall, ReaskNote};
use moot_core::redact::Redactor;
use moot_core::Answer;
use moot_store::{CallBatch, CallRecord, Store};
use serde::Serialize;

use crate::engine_config::EngineAgent;
use crate::error::EngineError;
use crate::ids::timestamp;
use crate::reask::{previous_answer, reading_after_reask};
use crate::replay::outcome_of;

/// How a call ended: its completion (if any), why there is none, and what it took.
#[derive(Debug, Default)]
pub(crate) struct CallEnd {
    completion: Option<Completion>,
    error: Option<String>,
    retries: Vec<FailedAttempt>,
    latency: Duration,
    cached: bool,
    /// The request's key (see [`crate::request_key`]), when it was built.
    request_key: Option<String>,
    /// A fork's copy of its parent's call, recorded instead of an answer of its own.
    reused: Option<CallRecord>,
    /// Cancelled at a deadline (its error says which).
    cancelled: bool,
}

impl CallEnd {
    /// Never asked: the protocol or the budget skipped it (the reason is on the call).
    pub(crate) fn unasked() -> CallEnd {
        CallEnd::default()
    }

    /// Not sent, for `reason`.
    pub(crate) fn refused(reason: String) -> CallEnd {
        CallEnd {
            error: Some(reason),
            ..CallEnd::default()
        }
    }

    /// Answered from the request cache.
    pub(crate) fn cached(completion: Completion) -> CallEnd {
        CallEnd {
            completion: Some(completion),
            cached: true,
            ..CallEnd::default()
        }
    }

    /// Not asked: a fork's parent made the same request here, and this is its record as the
    /// fork keeps it (see `crate::fork::reused`).
    pub(crate) fn reused(record: CallRecord) -> CallEnd {
        CallEnd {
            reused: Some(record),
            ..CallEnd::default()
        }
    }

    /// Cancelled at a deadline, `latency` into the round.
    pub(crate) fn cancelled(reason: String, latency: Duration) -> CallEnd {
        CallEnd {
            error: Some(reason),
            latency,
            cancelled: true,
            ..CallEnd::default()
        }
    }

    /// The same end, for the request stored under `key`.
    pub(crate) fn with_request_key(self, key: Option<String>) -> CallEnd {
        CallEnd {
            request_key: key,
            ..self
        }
    }

    /// How the call ended, as its span says (`ok`, `cached`, `reused`, `error`, `cancelled`
    /// at a deadline, `refused` before asking, `skipped`), and the answer's text when it has
    /// one.
    pub(crate) fn outcome(&self) -> (&'static str, Option<&str>) {
        let text = self.completion.as_ref().map(|c| c.text.as_str());
        let outcome = if self.reused.is_some() {
            "reused"
        } else if self.cached {
            "cached"
        } else if self.completion.is_some() {
            "ok"
        } else if self.cancelled {
            "cancelled"
        } else if self
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("error: "))
        {
            "error"
        } else if self.error.is_some() {
            "refused"
        } else {
            "skipped"
        };
        (outcome, text)
    }

    /// What the model said, or the error it ended with.
    pub(crate) fn asked(result: Result<Completion, BackendError>, latency: Duration) -> CallEnd {
        match result {
            Ok(c) => CallEnd {
                retries: c.retries.clone(),
                completion: Some(c),
                latency,
                ..CallEnd::default()
            },
            Err(e) => CallEnd {
                retries: e.attempts().to_vec(),
                error: Some(format!("error: {e}")),
                latency,
                ..CallEnd::default()
            },
        }
    }
}

/// Where a debate's calls are written: the store, then the transcript and the records the
/// debate keeps in memory.
pub(crate) struct CallLog<'d> {
    pub run_id: &'d str,
    pub spec: &'d DebateSpec,
    pub agents: &'d [EngineAgent],
    pub store: &'d dyn Store,
    /// Applied to everything written (prompts, responses, errors).
    pub redactor: &'d Redactor,
    pub transcript: &'d mut Transcript,
    pub records: &'d mut BTreeMap<CallKey, CallRecord>,
}

impl CallLog<'_> {
    /// Stores how each call of `ended` ended, with the responses they add to the request cache
    /// (`cache`), as one batch; then places the calls in the transcript. Returns their keys, in
    /// order. A round's calls that end together are written together: one commit, not one each.
    pub(crate) async fn write_all(
        &mut self,
        ended: Vec<(PlannedCall, CallEnd)>,
        cache: Vec<(String, serde_json::Value)>,
    ) -> Result<Vec<CallKey>, EngineError> {
        let mut placed = Vec::with_capacity(ended.len());
        let mut calls = Vec::with_capacity(ended.len());
        for (call, end) in ended {
            let previous = previous_answer(self.transcript, call.round, call.agent).cloned();
            calls.push(self.call_record(&call, end, previous.as_ref()));
            placed.push((call.key(), previous));
        }
        let batch = CallBatch { calls, cache };
        self.store.record_batch(&batch).await?;
        for ((key, previous), record) in placed.iter().zip(batch.calls) {
            self.transcript
                .set_call(*key, outcome_of(self.spec, previous.as_ref(), &record));
            self.records.insert(*key, record);
        }
        Ok(placed.into_iter().map(|(key, _)| key).collect())
    }

    fn call_record(
        &self,
        call: &PlannedCall,
        end: CallEnd,
        previous: Option<&Answer>,
    ) -> CallRecord {
        if let Some(record) = end.reused {
            return record;
        }
        let completion = end.completion.as_ref();
        let reading = self.reading(call, completion, previous);
        let mut notes = call.notes.clone();
        notes.contract = reading.note;
        let skipped = call.skipped();
        let tokens = Tokens::of(completion, call.notes.reask.as_ref());
        let logprobs = completion.and_then(Completion::logprob_summary);
        CallRecord {
            run_id: self.run_id.to_string(),
            round: call.round as u32,
            agent: call.agent as u32,
            slot: call.slot.label(),
            agent_id: self.spec.agents[call.agent].id.clone(),
            backend: self.agents[call.agent].model.name(),
            mode: call.mode.as_str().to_string(),
            template: call.template.to_string(),
            template_hash: call.template_hash.clone(),
            messages: self.redacted_json(&call.messages),
            peers: call.peers.iter().map(|&p| p as u32).collect(),
            response_text: completion.map(|c| self.redacted(&c.text)),
            answer: reading.answer.map(|a| self.redacted(a.canonical())),
            error: skipped
                .map(str::to_string)
                .or(end.error)
                .map(|e| self.redacted(&e)),
            skipped: skipped.is_some(),
            finish: completion.map(|c| c.finish.as_str().to_string()),
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            processed_input_tokens: tokens.processed_input,
            cache_write_input_tokens: tokens.cache_writes,
            logprob_tokens: logprobs.map(|s| s.tokens as u64),
            logprob_mean: logprobs.map(|s| s.mean),
            logprob_min: logprobs.map(|s| s.min),
            perplexity: logprobs.map(|s| s.perplexity),
            latency_ms: end.latency.as_millis() as u64,
            recorded_at: timestamp(),
            notes: serde_json::to_value(&notes).unwrap_or_default(),
            ncomm: notes.ncomm as u32,
            cached: end.cached,
            retries: self.redacted_json(&end.retries),
            request_key: end.request_key,
            reused_from: None,
        }
    }

    /// How the response reads under the agent's contract; after a re-ask, the reply to it
    /// (or no answer).
    fn reading(
        &self,
        call: &PlannedCall,
        completion: Option<&Completion>,
        previous: Option<&Answer>,
    ) -> Reading {
        let reask_reply = call.notes.reask.as_ref().map(|r| r.reply.as_deref());
        match completion {
            Some(c) => reading_after_reask(
                self.spec,
                call.agent,
                call.mode,
                &c.text,
                previous,
                reask_reply,
            ),
            None => Reading {
                answer: None,
                note: None,
            },
        }
    }

    fn redacted(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    fn redacted_json(&self, value: &impl Serialize) -> serde_json::Value {
        let mut v = serde_json::to_value(value).unwrap_or_default();
        self.redactor.redact_json(&mut v);
        v
    }
}

/// A call's tokens, its re-ask's included.
struct Tokens {
    input: u64,
    output: u64,
    processed_input: Option<u64>,
    cache_writes: Option<u64>,
}

impl Tokens {
    fn of(completion: Option<&Completion>, reask: Option<&ReaskNote>) -> Tokens {
        let (reask_in, reask_out) = reask.map_or((0, 0), |r| (r.input_tokens, r.output_tokens));
        Tokens {
            input: completion
                .map_or(0, |c| c.usage.input_tokens)
                .saturating_add(reask_in),
            output: completion
                .map_or(0, |c| c.usage.output_tokens)
                .saturating_add(reask_out),
            // A re-ask's prompt counts in both totals: one that reused no cache is processed
            // whole, so reuse is never claimed for tokens nobody reported.
            processed_input: completion
                .and_then(|c| c.usage.processed_input_tokens)
                .map(|p| {
                    p.saturating_add(
                        reask.map_or(0, |r| r.processed_input_tokens.unwrap_or(r.input_tokens)),
                    )
                }),
            // A side that does not say what it wrote to a cache wrote nothing it was billed for.
            cache_writes: match (
                completion.and_then(|c| c.usage.cache_write_input_tokens),
                reask.and_then(|r| r.cache_write_input_tokens),
            ) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            },
        }
    }
}
