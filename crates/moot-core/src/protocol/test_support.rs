//! Helpers for the protocol modules' unit tests: a small spec and a way to record a response.

use crate::answer::AnswerKind;
use crate::debate::{DebateSpec, Outcome, Transcript};

pub fn spec(agents: usize, rounds: usize) -> DebateSpec {
    DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, agents, rounds, 1)
}

pub fn respond(spec: &DebateSpec, t: &mut Transcript, round: usize, agent: usize, text: &str) {
    let answer = spec.extract(text);
    assert!(t.set(round, agent, Outcome::responded(text, answer)));
}
