//! Debate protocols as pure state machines (DESIGN §2, §7).
//!
//! Given the spec and the transcript so far, a protocol says which calls the next round needs
//! ([`Step::Round`]) or that the debate is over ([`Step::Done`]). The engine executes the calls and
//! records outcomes; asking again after a crash plans only the calls without an outcome, so resume
//! repeats no completed call. Adding a protocol is one module here and one line in [`PROTOCOLS`].

mod group_debate;
mod independent;
mod mad_m2;
mod madc;
mod options;
mod round_table;
mod s2_mad;
mod sid_et;
mod svr_mad;

use serde::Serialize;

use crate::chat::{CallMode, ChatMessage};
use crate::debate::{CallKey, DebateSpec, Slot, Transcript};
use crate::decision::Evidence;
use crate::faults::{Delivery, Faults, FaultsError};
use crate::topology::{Topology, TopologyError};

pub use independent::Independent;
pub use mad_m2::{parse_label, JudgeLabel, MaskPlan};
pub use madc::speaking_order;
pub use options::{
    Judging, Masking, ObjectiveKeep, Ordering, Prior, ProtocolOptions, TopologyName,
};
pub use round_table::{Context, PromptStyle, RoundTable};
pub use svr_mad::{parse_confidence, SvrMad};

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

/// What the transcript records about how a call's prompt was assembled.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct CallNotes {
    /// Pairwise context transfers: peer messages placed in this prompt (SVR-MAD's NComm).
    pub ncomm: usize,
    /// Peer messages a fault changed or removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultNote>,
    /// The wrong answer this agent was instructed to argue for (the `malicious` fault).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malicious: Option<String>,
    /// MAD-M²: each candidate memory and whether it was kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<MaskNote>,
    /// MADC (and any protocol with an ordering): the speaking order of the round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering: Option<OrderNote>,
    /// GroupDebate: peers from other groups, of whom only the final answer was shown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers_only: Vec<usize>,
    /// S2-MAD: peers not shown because they hold the agent's own answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<usize>,
    /// SVR-MAD: the challenge this call answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub challenge: Option<ChallengeNote>,
    /// The protocol recorded this call without asking the model, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The prompt was cut to fit the prompt budget (estimated tokens before and after).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cut: Option<PromptCut>,
    /// The response had no readable answer, so the agent was asked once more for just its final
    /// line: what it said then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reask: Option<ReaskNote>,
}

/// The one re-ask of a response without a readable answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReaskNote {
    /// The reply to the format reminder, when there was one.
    pub reply: Option<String>,
    /// Why there was no reply.
    pub error: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those the backend really processed (the rest came from its prompt
    /// cache), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed_input_tokens: Option<u64>,
}

/// A prompt cut to fit the engine's prompt budget: the middle of its longest message was
/// replaced by a marker saying how much was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PromptCut {
    pub from_tokens: u64,
    pub to_tokens: u64,
}

impl CallNotes {
    /// Notes for a call of `agent`, with the malicious fault's target when it applies.
    pub(crate) fn for_agent(spec: &DebateSpec, faults: &Faults, agent: usize) -> CallNotes {
        CallNotes {
            malicious: faults
                .malicious_target(agent, spec.agents.len(), spec.seed)
                .map(str::to_string),
            ..CallNotes::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultNote {
    pub peer: usize,
    #[serde(flatten)]
    pub delivery: Delivery,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaskNote {
    /// The memory's author (the calling agent itself for its own memory).
    pub author: usize,
    pub kept: bool,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderNote {
    pub policy: Ordering,
    /// Every agent in speaking order (earliest first).
    pub order: Vec<usize>,
    /// Path consistency per agent (agreeing peers), when the policy uses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Vec<usize>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChallengeNote {
    pub receiver: usize,
    pub challenger: usize,
    /// The receiver's correctness score when it was chosen.
    pub receiver_score: f64,
    /// Communication budget left before this iteration.
    pub budget_left: usize,
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
    #[error("unknown protocol {0:?} (expected one of {names})", names = PROTOCOLS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))]
    Unknown(String),
    #[error("option `{option}` does not apply to protocol {protocol} ({applies})")]
    NotApplicable {
        option: &'static str,
        protocol: &'static str,
        applies: String,
    },
    #[error("{0}")]
    Topology(#[from] TopologyError),
    #[error("{0}")]
    Faults(#[from] FaultsError),
    #[error("{0}")]
    Invalid(String),
}

pub struct ProtocolEntry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Options this protocol reads (`faults` applies to every protocol).
    pub options: &'static [&'static str],
    pub build: fn(&ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError>,
}

const ROUND_TABLE_OPTIONS: &[&str] = &["topology", "k", "hub", "groups", "ordering", "gold"];

/// Every protocol, by name.
pub const PROTOCOLS: &[ProtocolEntry] = &[
    ProtocolEntry {
        name: "cot",
        summary: "one agent, one chain-of-thought call",
        options: &[],
        build: |o| Ok(Box::new(Independent::single(o))),
    },
    ProtocolEntry {
        name: "cot-sc",
        summary: "self-consistency: N independent samples, majority vote",
        options: &[],
        build: |o| Ok(Box::new(Independent::self_consistency(o))),
    },
    ProtocolEntry {
        name: "som",
        summary: "Society of Mind (Du et al.): rounds of reading the others' solutions",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("som", PromptStyle::Conformity, "majority-last").configured(o, Topology::AllToAll)
        },
    },
    ProtocolEntry {
        name: "free-mad-n",
        summary: "FREE-MAD with the anti-conformity critique prompt, FREE-MAD score decision",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("free-mad-n", PromptStyle::AntiConformity, "free-mad").configured(o, Topology::AllToAll)
        },
    },
    ProtocolEntry {
        name: "free-mad-c",
        summary: "FREE-MAD with the conformity prompt, FREE-MAD score decision",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("free-mad-c", PromptStyle::Conformity, "free-mad").configured(o, Topology::AllToAll)
        },
    },
    ProtocolEntry {
        name: "mad-m2",
        summary: "MAD-M²: previous-round memories judged and masked before every debate round",
        options: mad_m2::OPTIONS,
        build: mad_m2::build,
    },
    ProtocolEntry {
        name: "madc",
        summary: "MADC: peers' responses in path-consistency order, most agreed-with last",
        options: ROUND_TABLE_OPTIONS,
        build: madc::build,
    },
    ProtocolEntry {
        name: "svr-mad",
        summary: "SVR-MAD: pairwise challenges to the likeliest-correct agent, survival-rate acceptance",
        options: svr_mad::OPTIONS,
        build: svr_mad::build,
    },
    ProtocolEntry {
        name: "sparse",
        summary: "Sparse MAD (Li et al.): som on a sparse topology (ring by default)",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("sparse", PromptStyle::Conformity, "majority-last").configured(o, Topology::Ring)
        },
    },
    ProtocolEntry {
        name: "group-debate",
        summary: "GroupDebate: full solutions inside a group, only final answers across groups",
        options: group_debate::OPTIONS,
        build: group_debate::build,
    },
    ProtocolEntry {
        name: "s2-mad",
        summary: "S2-MAD: no message between agents holding the same answer; agreed agents skip",
        options: ROUND_TABLE_OPTIONS,
        build: s2_mad::build,
    },
    ProtocolEntry {
        name: "sid-et",
        summary: "SID-ET: skip the debate when the best agent's min token log-likelihood clears a threshold",
        options: sid_et::OPTIONS,
        build: sid_et::build,
    },
];

pub fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|p| p.name).collect()
}

/// Builds the protocol called `name` with `options`, refusing options it does not read.
pub fn build_protocol(
    name: &str,
    options: &ProtocolOptions,
) -> Result<Box<dyn Protocol>, ProtocolError> {
    let entry = PROTOCOLS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ProtocolError::Unknown(name.to_string()))?;
    for option in options.set_names() {
        if !entry.options.contains(&option) {
            let readers: Vec<&str> = PROTOCOLS
                .iter()
                .filter(|p| p.options.contains(&option))
                .map(|p| p.name)
                .collect();
            let applies = if readers.is_empty() {
                "no protocol reads it".to_string()
            } else {
                format!("it applies to {}", readers.join(", "))
            };
            return Err(ProtocolError::NotApplicable {
                option,
                protocol: entry.name,
                applies,
            });
        }
    }
    options.faults.validate()?;
    if options.hub == Some(0) {
        return Err(ProtocolError::Invalid(
            "hub is an agent number, counted from 1".into(),
        ));
    }
    (entry.build)(options)
}

/// System message: the agent's persona, if any, then the default instructions, then the
/// saboteur's instruction when the `malicious` fault turned this agent.
pub(crate) fn system_message(spec: &DebateSpec, faults: &Faults, agent: usize) -> ChatMessage {
    let persona = spec.agents.get(agent).and_then(|a| a.persona.as_deref());
    let mut text = match persona {
        Some(p) => format!("{p}\n\n{}", crate::prompts::SYSTEM_DEFAULT),
        None => crate::prompts::SYSTEM_DEFAULT.to_string(),
    };
    if let Some(answer) = faults.malicious_target(agent, spec.agents.len(), spec.seed) {
        text.push_str("\n\n");
        text.push_str(&crate::prompts::render(
            crate::prompts::MALICIOUS,
            &[("answer", answer)],
        ));
    }
    ChatMessage::system(text)
}

/// The round-0 user prompt (with a confidence request when `confidence` is set).
pub(crate) fn initial_prompt(spec: &DebateSpec) -> String {
    crate::prompts::render(
        crate::prompts::INITIAL,
        &[
            ("question", &spec.question),
            ("options", &crate::prompts::options_block(&spec.options)),
            ("format", crate::prompts::format_instruction(spec.kind)),
        ],
    )
}

/// The round-0 call every protocol starts with.
pub(crate) fn initial_call(
    spec: &DebateSpec,
    faults: &Faults,
    agent: usize,
    extra_instruction: Option<&str>,
) -> PlannedCall {
    let mut prompt = initial_prompt(spec);
    if let Some(extra) = extra_instruction {
        prompt.push(' ');
        prompt.push_str(extra);
    }
    PlannedCall {
        round: 0,
        agent,
        slot: Slot::Answer,
        mode: CallMode::Generate,
        messages: vec![
            system_message(spec, faults, agent),
            ChatMessage::user(prompt),
        ],
        peers: vec![],
        template: "initial",
        template_hash: crate::prompts::template_hash(crate::prompts::INITIAL),
        notes: CallNotes::for_agent(spec, faults, agent),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::answer::AnswerKind;
    use crate::debate::{DebateSpec, Outcome, Transcript};

    pub fn spec(agents: usize, rounds: usize) -> DebateSpec {
        DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, agents, rounds, 1)
    }

    pub fn respond(spec: &DebateSpec, t: &mut Transcript, round: usize, agent: usize, text: &str) {
        let answer = spec.extract(text);
        assert!(t.set(round, agent, Outcome::responded(text, answer)));
    }
}
