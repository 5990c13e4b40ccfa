//! Forks (see `moot_core::fork`): a debate that starts as a stored parent did and changes one
//! thing at a round. The parent's calls before the round are copied into the fork; from the
//! round on, a planned call whose request is exactly the one the parent made at the same place
//! (same request key: backend, sampling, mode, messages, agent) is reused from the parent
//! instead of asked; every copy and reuse is marked with the parent's id and counts 0 tokens.
//!
//! A null fork salts its round: each of the round's requests carries the salt in
//! `params.resample` and in its sampling seed, so its request key differs from the parent's (no
//! reuse, no request-cache hit) and the backend draws afresh. The salt is a hash of the fork's
//! run id, so a resumed fork salts as it did before. A `say` fork writes the given text as the
//! agent's response of the round, with the run, before anything is asked.

use std::collections::BTreeMap;

use moot_core::chat::SamplingParams;
use moot_core::debate::{CallKey, DebateSpec, Slot};
use moot_core::fork::Intervention;
use moot_core::protocol::{check_fork, CallNotes, Protocol};
use moot_core::redact::Redactor;
use moot_store::CallRecord;

use crate::error::EngineError;
use crate::ids::timestamp;
use crate::reask::{previous_answer, reading_after_reask};
use crate::replay::{key_of, mode_of, transcript_of};

/// What a fork is made from: its parent, the round and what changes there.
#[derive(Debug, Clone)]
pub struct ForkSource {
    /// The parent run's id.
    pub parent: String,
    /// The parent's calls. A fork being resumed whose parent is no longer in the store gets
    /// none: its copied calls are its own by then, and only later reuses are lost.
    pub parent_calls: Vec<CallRecord>,
    pub round: usize,
    pub intervention: Intervention,
}

/// A fork as its debate runs it.
#[derive(Debug)]
pub(crate) struct Fork {
    parent: String,
    round: usize,
    intervention: Intervention,
    /// The salt of the resampled round (null forks only).
    resample: Option<u64>,
    /// The parent's calls before the round, copied when the fork is created.
    before: Vec<CallRecord>,
    /// The parent's answered calls from the round on, by place: reused when the fork makes
    /// the same request there.
    later: BTreeMap<CallKey, CallRecord>,
}

impl Fork {
    /// The fork of `source` for the debate `run_id` of `spec` under `protocol`, refused (with
    /// the reason, the user's to fix) when the protocol does not allow its intervention at its
    /// round, or the intervention names an agent the debate does not have.
    pub(crate) fn new(
        source: ForkSource,
        run_id: &str,
        protocol: &dyn Protocol,
        spec: &DebateSpec,
    ) -> Result<Fork, EngineError> {
        let ForkSource {
            parent,
            parent_calls,
            round,
            intervention,
        } = source;
        check_fork(protocol, intervention.kind(), round, spec.rounds)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        if let Some(agent) = intervention.agent() {
            if agent >= spec.agents.len() {
                return Err(EngineError::Config(format!(
                    "agent {} is not in the debate, whose agents are 1 to {}",
                    agent + 1,
                    spec.agents.len()
                )));
            }
        }
        let resample = matches!(intervention, Intervention::Null).then(|| salt_of(run_id));
        let (before, from_round): (Vec<_>, Vec<_>) = parent_calls
            .into_iter()
            .partition(|c| (c.round as usize) < round);
        let later = from_round
            .into_iter()
            .filter(|c| c.response_text.is_some() && !c.skipped && c.request_key.is_some())
            .filter_map(|c| Some((key_of(&c)?, c)))
            .collect();
        Ok(Fork {
            parent,
            round,
            intervention,
            resample,
            before,
            later,
        })
    }

    pub(crate) fn parent(&self) -> &str {
        &self.parent
    }

    pub(crate) fn round(&self) -> usize {
        self.round
    }

    pub(crate) fn intervention(&self) -> &Intervention {
        &self.intervention
    }

    /// `params` for a call of `round`: salted when the round is the one a null fork resamples
    /// (the salt also moves the seed, which seeded samplers read).
    pub(crate) fn sampling(&self, round: usize, params: SamplingParams) -> SamplingParams {
        match self.resample.filter(|_| round == self.round) {
            Some(salt) => SamplingParams {
                seed: params.seed.map(|s| s ^ salt),
                resample: Some(salt),
                ..params
            },
            None => params,
        }
    }

    /// The parent's call at `key`, when the fork's request there (`request_key`) is the one
    /// the parent made.
    pub(crate) fn reusable(&self, key: &CallKey, request_key: &str) -> Option<&CallRecord> {
        self.later
            .get(key)
            .filter(|c| c.request_key.as_deref() == Some(request_key))
    }

    /// The calls the fork `run_id` starts with, written with its run: the parent's calls before
    /// the round, copied, and under `say` the agent's response of the round replaced by the
    /// text (its answer read as the agent's reply would be). Refused when the agent gave no
    /// response there to replace.
    pub(crate) fn opening(
        &self,
        run_id: &str,
        spec: &DebateSpec,
        redactor: &Redactor,
    ) -> Result<Vec<CallRecord>, EngineError> {
        let mut calls: Vec<CallRecord> = self
            .before
            .iter()
            .map(|c| reused(c, run_id, &self.parent))
            .collect();
        if let Intervention::Say { agent, text } = &self.intervention {
            let replaced = self
                .later
                .get(&CallKey {
                    round: self.round,
                    agent: *agent,
                    slot: Slot::Answer,
                })
                .ok_or_else(|| {
                    EngineError::Config(format!(
                        "agent {} gave no response in round {} of run {} (it was skipped or its call failed): there is nothing to replace",
                        agent + 1,
                        self.round,
                        self.parent
                    ))
                })?;
            let so_far = transcript_of(spec, &calls);
            let previous = previous_answer(&so_far, self.round, *agent);
            calls.push(injected(replaced, run_id, spec, previous, text, redactor));
        }
        Ok(calls)
    }
}

/// `call` as the fork `run_id` keeps it: the parent's record, marked as reused from `parent`,
/// with no tokens, time or cache hit of its own.
pub(crate) fn reused(call: &CallRecord, run_id: &str, parent: &str) -> CallRecord {
    CallRecord {
        run_id: run_id.to_string(),
        input_tokens: 0,
        output_tokens: 0,
        processed_input_tokens: call.processed_input_tokens.map(|_| 0),
        cache_write_input_tokens: call.cache_write_input_tokens.map(|_| 0),
        latency_ms: 0,
        cached: false,
        recorded_at: timestamp(),
        reused_from: Some(parent.to_string()),
        ..call.clone()
    }
}

/// The parent's response `replaced` with `text` in its place: the same prompt, the text's
/// answer, no tokens, no token log-probabilities, no re-ask, marked injected. Nothing was sent
/// to a model, so it transferred no context (NComm 0).
fn injected(
    replaced: &CallRecord,
    run_id: &str,
    spec: &DebateSpec,
    previous: Option<&moot_core::Answer>,
    text: &str,
    redactor: &Redactor,
) -> CallRecord {
    let agent = replaced.agent as usize;
    let reading = reading_after_reask(spec, agent, mode_of(replaced), text, previous, None);
    // Notes that no longer read are taken as none: the injection is what matters here.
    let mut notes = CallNotes::from_json(&replaced.notes).unwrap_or_default();
    notes.reask = None;
    notes.contract = reading.note;
    notes.injected = true;
    notes.ncomm = 0;
    CallRecord {
        run_id: run_id.to_string(),
        response_text: Some(redactor.redact(text).into_owned()),
        answer: reading
            .answer
            .map(|a| redactor.redact(a.canonical()).into_owned()),
        recorded_at: timestamp(),
        notes: serde_json::to_value(&notes).unwrap_or_default(),
        ..replaced.asked_only()
    }
}

/// The resample salt of fork `run_id`: stable for the id, so a resumed fork salts as it did.
fn salt_of(run_id: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("moot fork salt\0{run_id}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Never 0: a salt of 0 would leave a seed unchanged by the xor.
    u64::from_le_bytes(first).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_salt_is_stable_per_fork_and_moves_the_seed_of_its_round_only() {
        assert_eq!(salt_of("f1"), salt_of("f1"));
        assert_ne!(salt_of("f1"), salt_of("f2"));
        let fork = Fork {
            parent: "p".into(),
            round: 1,
            intervention: Intervention::Null,
            resample: Some(salt_of("f1")),
            before: vec![],
            later: BTreeMap::new(),
        };
        let params = SamplingParams {
            seed: Some(42),
            ..SamplingParams::default()
        };
        assert_eq!(fork.sampling(0, params.clone()), params);
        assert_eq!(fork.sampling(2, params.clone()), params);
        let salted = fork.sampling(1, params.clone());
        assert_eq!(salted.resample, Some(salt_of("f1")));
        assert_ne!(salted.seed, Some(42));
        assert!(salted.seed.is_some());
    }
}
