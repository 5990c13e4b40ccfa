//! A debate's fixed inputs ([`DebateSpec`]) and what has happened so far ([`Transcript`]).

use serde::{Deserialize, Serialize};

use crate::answer::{Answer, AnswerKind, ExtractContext};
use crate::trajectory::{Cell, Trajectory};

/// One participant as protocols see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub id: String,
    /// Optional persona, prepended to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
}

/// The question and the shape of the debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateSpec {
    pub question: String,
    pub kind: AnswerKind,
    /// Option texts A, B, … for choice questions.
    #[serde(default)]
    pub options: Vec<String>,
    pub agents: Vec<AgentSpec>,
    /// Debate rounds after round 0.
    pub rounds: usize,
    pub seed: u64,
}

impl DebateSpec {
    pub fn extract_context(&self) -> ExtractContext<'_> {
        ExtractContext {
            options: &self.options,
        }
    }

    /// Reads the answer of a response under this debate's answer kind and options.
    pub fn extract(&self, text: &str) -> Option<Answer> {
        Answer::extract(self.kind, text, &self.extract_context())
    }
}

/// What one agent produced in one round.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A response (whose answer may be unreadable: `None`).
    Responded {
        text: String,
        answer: Option<Answer>,
    },
    /// No response: deadline, error or cancellation. Never read as a kept answer.
    Missing { reason: String },
}

impl Outcome {
    pub fn text(&self) -> Option<&str> {
        match self {
            Outcome::Responded { text, .. } => Some(text),
            Outcome::Missing { .. } => None,
        }
    }

    pub fn answer(&self) -> Option<&Answer> {
        match self {
            Outcome::Responded { answer, .. } => answer.as_ref(),
            Outcome::Missing { .. } => None,
        }
    }
}

/// Outcomes per round per agent; `None` = not run yet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    rounds: Vec<Vec<Option<Outcome>>>,
}

impl Transcript {
    pub fn new(agents: usize, rounds: usize) -> Transcript {
        Transcript {
            rounds: vec![vec![None; agents]; rounds + 1],
        }
    }

    /// Number of rounds including round 0.
    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    pub fn agents(&self) -> usize {
        self.rounds.first().map_or(0, Vec::len)
    }

    pub fn get(&self, round: usize, agent: usize) -> Option<&Outcome> {
        self.rounds
            .get(round)
            .and_then(|r| r.get(agent))
            .and_then(Option::as_ref)
    }

    /// Records an outcome. Out-of-range positions are ignored and reported as `false`.
    pub fn set(&mut self, round: usize, agent: usize, outcome: Outcome) -> bool {
        match self.rounds.get_mut(round).and_then(|r| r.get_mut(agent)) {
            Some(slot) => {
                *slot = Some(outcome);
                true
            }
            None => false,
        }
    }

    /// The first round with an agent that has no outcome yet.
    pub fn first_open_round(&self) -> Option<usize> {
        self.rounds
            .iter()
            .position(|r| r.iter().any(Option::is_none))
    }

    /// Agents without an outcome in `round`.
    pub fn open_agents(&self, round: usize) -> Vec<usize> {
        self.rounds
            .get(round)
            .map(|r| {
                r.iter()
                    .enumerate()
                    .filter(|(_, o)| o.is_none())
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn is_complete(&self) -> bool {
        self.first_open_round().is_none()
    }

    /// The answers matrix the decision rules read (not-yet-run cells count as missing).
    pub fn trajectory(&self) -> Option<Trajectory> {
        let agents = self.agents();
        let rows = (0..agents)
            .map(|a| {
                self.rounds
                    .iter()
                    .map(|r| match &r[a] {
                        Some(Outcome::Responded { answer, .. }) => Cell::Answered(answer.clone()),
                        _ => Cell::Missing,
                    })
                    .collect()
            })
            .collect();
        Trajectory::new(rows).ok()
    }
}
