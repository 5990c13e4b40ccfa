//! What a protocol is to the engine: the [`Protocol`] trait, the calls it plans
//! ([`PlannedCall`], [`Step`]) and its errors. Every protocol module depends on this one; it
//! depends only on the call notes below it, never on a protocol or on the registry.

use serde::Serialize;

use super::notes::CallNotes;
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{AgentRole, CallKey, DebateSpec, Slot, Transcript};
use crate::decision::Evidence;
use crate::faults::FaultsError;
use crate::topology::TopologyError;

/// One call the engine should make, or record as skipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedCall {
    pub round: usize,
    pub agent: usize,
    pub slot: Slot,
    pub mode: CallMode,
    pub messages: Vec<ChatMessage>,
    /// Agents whose responses (or, across GroupDebate groups, answers) are in the prompt, in the
    /// order shown. Never the calling agent itself, except as its own memory under MAD-M²,
    /// which `notes.masks` lists.
    pub peers: Vec<usize>,
    /// Name and hash of the prompt template used for the last user message.
    pub template: &'static str,
    pub template_hash: String,
    /// Masks, orderings, faults, skips and the call's communication count, for the transcript.
    pub notes: CallNotes,
}

impl PlannedCall {
    pub fn key(&self) -> CallKey {
        CallKey {
            round: self.round,
            agent: self.agent,
            slot: self.slot,
        }
    }

    /// Why the protocol records this call without asking the model, if it does.
    pub fn skipped(&self) -> Option<&str> {
        self.notes.skipped.as_deref()
    }

    /// A call the protocol decided not to make.
    pub fn skip(round: usize, agent: usize, reason: String) -> PlannedCall {
        PlannedCall {
            round,
            agent,
            slot: Slot::Answer,
            mode: CallMode::Critique,
            messages: vec![],
            peers: vec![],
            template: "skipped",
            template_hash: String::new(),
            notes: CallNotes {
                skipped: Some(reason),
                ..CallNotes::default()
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Round {
        round: usize,
        calls: Vec<PlannedCall>,
    },
    Done,
}

pub trait Protocol: Send + Sync {
    fn name(&self) -> &'static str;
    /// The decision rule used when the configuration names none.
    fn default_rule(&self) -> &'static str;
    /// The (agents, debate rounds) this protocol runs for a requested shape.
    fn shape(&self, agents: usize, rounds: usize) -> (usize, usize);
    /// The next batch of calls (the open calls of the first unfinished stage), or done.
    fn next(&self, spec: &DebateSpec, transcript: &Transcript) -> Step;
    /// Checks the protocol's settings against the debate (number of agents, gold answer).
    fn validate(&self, _spec: &DebateSpec) -> Result<(), ProtocolError> {
        Ok(())
    }
    /// The roles besides debater this protocol gives a part to (a judge, an aggregator, a
    /// chairman). Agents with any other role sit out its debates; see `moot_engine::Lineup`.
    fn roles(&self) -> &'static [AgentRole] {
        &[]
    }
    /// Why this protocol needs token logprobs from every backend, if it does.
    fn needs_logprobs(&self) -> Option<&'static str> {
        None
    }
    /// What decision rules beyond the trajectory may read (challenges, early stops).
    fn evidence(&self, spec: &DebateSpec, transcript: &Transcript) -> Evidence {
        Evidence::from_transcript(spec, transcript)
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// `expected` lists every protocol's name (the registry fills it in).
    #[error("unknown protocol {name:?} (expected one of {expected})")]
    Unknown { name: String, expected: String },
    #[error("option `{option}` does not apply to protocol {protocol} ({applies})")]
    NotApplicable {
        option: &'static str,
        protocol: &'static str,
        applies: String,
    },
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Faults(#[from] FaultsError),
    #[error("{0}")]
    Invalid(String),
}
