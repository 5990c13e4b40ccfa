//! Debate protocols as pure state machines (DESIGN §2, §7).
//!
//! Given the spec and the transcript so far, a protocol says which calls the next round needs
//! ([`Step::Round`]) or that the debate is over ([`Step::Done`]). The engine executes the calls and
//! records outcomes; asking again after a crash plans only the calls without an outcome, so resume
//! repeats no completed call. Adding a protocol is one module here and one line in [`PROTOCOLS`].

mod independent;
mod round_table;

use serde::Serialize;

use crate::chat::{CallMode, ChatMessage};
use crate::debate::{DebateSpec, Transcript};

pub use independent::Independent;
pub use round_table::{PromptStyle, RoundTable};

/// One call the engine should make.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedCall {
    pub round: usize,
    pub agent: usize,
    pub mode: CallMode,
    pub messages: Vec<ChatMessage>,
    /// Agents whose previous-round responses are in the prompt, in the order shown.
    pub peers: Vec<usize>,
    /// Name and hash of the prompt template used for the last user message.
    pub template: &'static str,
    pub template_hash: String,
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
    /// The call for one agent in one round.
    fn plan_call(
        &self,
        spec: &DebateSpec,
        transcript: &Transcript,
        round: usize,
        agent: usize,
    ) -> PlannedCall;

    /// The next round's calls for every agent without an outcome in the first open round.
    fn next(&self, spec: &DebateSpec, transcript: &Transcript) -> Step {
        match transcript.first_open_round() {
            None => Step::Done,
            Some(round) => Step::Round {
                round,
                calls: transcript
                    .open_agents(round)
                    .into_iter()
                    .map(|agent| self.plan_call(spec, transcript, round, agent))
                    .collect(),
            },
        }
    }
}

pub struct ProtocolEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: fn() -> Box<dyn Protocol>,
}

/// Every protocol, by name.
pub const PROTOCOLS: &[ProtocolEntry] = &[
    ProtocolEntry {
        name: "cot",
        summary: "one agent, one chain-of-thought call",
        build: || Box::new(Independent::single()),
    },
    ProtocolEntry {
        name: "cot-sc",
        summary: "self-consistency: N independent samples, majority vote",
        build: || Box::new(Independent::self_consistency()),
    },
    ProtocolEntry {
        name: "som",
        summary: "Society of Mind (Du et al.): all-to-all rounds, use the others' solutions",
        build: || {
            Box::new(RoundTable::new(
                "som",
                PromptStyle::Conformity,
                "majority-last",
            ))
        },
    },
    ProtocolEntry {
        name: "free-mad-n",
        summary: "FREE-MAD with the anti-conformity critique prompt, FREE-MAD score decision",
        build: || {
            Box::new(RoundTable::new(
                "free-mad-n",
                PromptStyle::AntiConformity,
                "free-mad",
            ))
        },
    },
    ProtocolEntry {
        name: "free-mad-c",
        summary: "FREE-MAD with the conformity prompt, FREE-MAD score decision",
        build: || {
            Box::new(RoundTable::new(
                "free-mad-c",
                PromptStyle::Conformity,
                "free-mad",
            ))
        },
    },
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?} (expected one of {names})", names = PROTOCOLS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))]
pub struct UnknownProtocol(pub String);

pub fn build_protocol(name: &str) -> Result<Box<dyn Protocol>, UnknownProtocol> {
    PROTOCOLS
        .iter()
        .find(|p| p.name == name)
        .map(|p| (p.build)())
        .ok_or_else(|| UnknownProtocol(name.to_string()))
}

/// System message: the agent's persona, if any, then the default instructions.
pub(crate) fn system_message(spec: &DebateSpec, agent: usize) -> ChatMessage {
    let persona = spec.agents.get(agent).and_then(|a| a.persona.as_deref());
    match persona {
        Some(p) => ChatMessage::system(format!("{p}\n\n{}", crate::prompts::SYSTEM_DEFAULT)),
        None => ChatMessage::system(crate::prompts::SYSTEM_DEFAULT),
    }
}

/// The round-0 user prompt.
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

#[cfg(test)]
pub(crate) mod test_support {
    use crate::answer::AnswerKind;
    use crate::debate::{AgentSpec, DebateSpec, Outcome, Transcript};

    pub fn spec(agents: usize, rounds: usize) -> DebateSpec {
        DebateSpec {
            question: "What is 17 * 24?".into(),
            kind: AnswerKind::Numeric,
            options: vec![],
            agents: (0..agents)
                .map(|i| AgentSpec {
                    id: format!("a{i}"),
                    persona: None,
                })
                .collect(),
            rounds,
            seed: 1,
        }
    }

    pub fn respond(spec: &DebateSpec, t: &mut Transcript, round: usize, agent: usize, text: &str) {
        let answer = spec.extract(text);
        assert!(t.set(
            round,
            agent,
            Outcome::Responded {
                text: text.into(),
                answer
            }
        ));
    }
}
