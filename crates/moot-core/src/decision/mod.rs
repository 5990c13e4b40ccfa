//! Decision rules: pure functions from a trajectory to the final answer (see
//! docs/architecture.md, Decision rules).
//!
//! Because rules are pure, any stored debate can be re-decided under every rule at no token
//! cost. Each rule explains itself: per-answer scores and the list of score changes
//! (round, agent, action, delta) that produced them. Adding a rule is one module here and one
//! line in [`RULES`].

mod free_mad;
mod majority;
mod max_consistency;
mod sid_et;
mod svr;

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::answer::Answer;
use crate::debate::{DebateSpec, Outcome, Slot, Transcript};
use crate::trajectory::Trajectory;

pub use free_mad::{FreeMad, FreeMadWeights, WeightsError};
pub use majority::MajorityLast;
pub use max_consistency::MaxConsistency;
pub use sid_et::SidEt;
pub use svr::Svr;

/// How a tie between equally scored answers is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// The tied answer seen first, in the order the rule documents.
    #[default]
    Deterministic,
    /// A seeded uniform choice among the tied answers (FREE-MAD's "randomly choose").
    Random { seed: u64 },
}

impl fmt::Display for TieBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TieBreak::Deterministic => f.write_str("deterministic"),
            TieBreak::Random { seed } => write!(f, "random (seed {seed})"),
        }
    }
}

/// Settings shared by the rules; each rule reads what applies to it.
#[derive(Debug, Clone, Default)]
pub struct DecisionConfig {
    pub tie_break: TieBreak,
    pub weights: FreeMadWeights,
    /// freemad's "normalize by contributor count" (FREE-MAD rule only).
    pub normalize: bool,
}

/// What happened to an answer's score, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The agent's first answer (FREE-MAD w1).
    Initial,
    /// The agent left this answer (FREE-MAD −w2).
    Abandon,
    /// The agent moved to this answer (FREE-MAD +w3).
    Adopt,
    /// The agent kept this answer (FREE-MAD +w4).
    Keep,
    /// One vote in the decided round (majority-last).
    Vote,
    /// Agreement with other agents in the decided round (max-consistency).
    Agreement,
    /// Division by the number of agents that ever held the answer (FREE-MAD normalize).
    Normalize,
    /// The receiver kept its answer through a challenge (SVR-MAD).
    Survive,
    /// The receiver changed its answer under a challenge (SVR-MAD).
    Yield,
    /// The receiver reached SVR = 1 over enough challengers (SVR-MAD), or the debate stopped
    /// early on one agent's answer (SID-ET).
    Accept,
}

/// One change of one answer's score. `agent` is `None` for changes not due to one agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreEvent {
    pub round: usize,
    pub agent: Option<usize>,
    pub action: Action,
    /// Canonical answer text; `None` is the no-answer key.
    pub answer: Option<String>,
    pub delta: f64,
}

/// A tie among top-scored answers and how it was broken.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tie {
    pub candidates: Vec<String>,
    pub broken_by: String,
}

/// The outcome of one rule on one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub rule: &'static str,
    pub answer: Option<Answer>,
    /// Final score per answer key, in order of first appearance; the `None` key (responses
    /// without an answer) is kept here for transparency but can never win.
    pub scores: Vec<(Option<Answer>, f64)>,
    pub events: Vec<ScoreEvent>,
    pub tie: Option<Tie>,
}

/// What some rules read beyond the trajectory, derived purely from a transcript by its protocol.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// SVR-MAD's pairwise debates, in the order they were planned.
    pub challenges: Vec<ChallengeEvidence>,
    /// Challenges a receiver must survive, all of them, to be accepted (SVR-MAD's C).
    pub accept_after: Option<usize>,
    /// The agent whose answer ended the debate early (SID-ET).
    pub early_stop: Option<usize>,
}

/// One pairwise debate: the receiver's pre-debate answer and its answer after reading the
/// challenger (`None` when the call got no response).
#[derive(Debug, Clone, PartialEq)]
pub struct ChallengeEvidence {
    pub iteration: usize,
    pub receiver: usize,
    pub challenger: usize,
    pub before: Option<Answer>,
    pub after: Option<Option<Answer>>,
}

impl Evidence {
    /// The challenges recorded in a transcript (any protocol's; empty for most).
    pub fn from_transcript(_spec: &DebateSpec, t: &Transcript) -> Evidence {
        let challenges = t
            .extra_calls()
            .filter_map(|(key, outcome)| match key.slot {
                Slot::Challenge(challenger) => Some(ChallengeEvidence {
                    iteration: key.round,
                    receiver: key.agent,
                    challenger,
                    before: t.get(0, key.agent).and_then(Outcome::answer).cloned(),
                    after: match outcome {
                        Outcome::Responded { answer, .. } => Some(answer.clone()),
                        _ => None,
                    },
                }),
                _ => None,
            })
            .collect();
        Evidence {
            challenges,
            ..Evidence::default()
        }
    }
}

/// A decision rule.
pub trait DecisionRule {
    fn name(&self) -> &'static str;
    fn decide(&self, trajectory: &Trajectory) -> Decision;
    /// The decision when the protocol's evidence is known too; rules that only read the
    /// trajectory ignore it.
    fn decide_with(&self, trajectory: &Trajectory, _evidence: &Evidence) -> Decision {
        self.decide(trajectory)
    }
}

/// One registered rule: its name and how to build it from the shared settings.
pub struct RuleEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: fn(&DecisionConfig) -> Box<dyn DecisionRule>,
}

/// Every decision rule, by name.
pub const RULES: &[RuleEntry] = &[
    RuleEntry {
        name: majority::NAME,
        summary: "plurality of the last round; no-answer never wins",
        build: |c| Box::new(MajorityLast::new(c.tie_break)),
    },
    RuleEntry {
        name: free_mad::NAME,
        summary: "FREE-MAD score over the whole trajectory (Algorithm 1)",
        build: |c| Box::new(FreeMad::new(c.weights, c.tie_break, c.normalize)),
    },
    RuleEntry {
        name: max_consistency::NAME,
        summary: "MADC: the answer of the agent that agrees with the most others",
        build: |c| Box::new(MaxConsistency::new(c.tie_break)),
    },
    RuleEntry {
        name: svr::NAME,
        summary:
            "SVR-MAD: a receiver that survived every challenge (at least C); else the fallback vote",
        build: |c| Box::new(Svr::new(c.tie_break)),
    },
    RuleEntry {
        name: sid_et::NAME,
        summary:
            "SID-ET: the confident agent's answer when the debate was skipped; else majority-last",
        build: |c| Box::new(SidEt::new(c.tie_break)),
    },
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown decision rule {0:?} (expected one of {names})", names = rule_names().join(", "))]
pub struct UnknownRule(pub String);

pub fn rule_names() -> Vec<&'static str> {
    RULES.iter().map(|r| r.name).collect()
}

/// Builds the rule called `name`.
pub fn build_rule(
    name: &str,
    config: &DecisionConfig,
) -> Result<Box<dyn DecisionRule>, UnknownRule> {
    RULES
        .iter()
        .find(|r| r.name == name)
        .map(|r| (r.build)(config))
        .ok_or_else(|| UnknownRule(name.to_string()))
}

/// Scores per answer key, keys grouped by answer equivalence and kept in first-seen order.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    entries: Vec<(Option<Answer>, f64)>,
}

impl Tally {
    fn position(&self, key: Option<&Answer>) -> Option<usize> {
        self.entries.iter().position(|(k, _)| match (k, key) {
            (None, None) => true,
            (Some(a), Some(b)) => a.equivalent(b),
            _ => false,
        })
    }

    pub(crate) fn contains(&self, key: Option<&Answer>) -> bool {
        self.position(key).is_some()
    }

    /// Adds `delta` to the key, creating it (with score 0) if it is new.
    pub(crate) fn add(&mut self, key: Option<&Answer>, delta: f64) {
        match self.position(key) {
            Some(i) => self.entries[i].1 += delta,
            None => self.entries.push((key.cloned(), delta)),
        }
    }

    pub(crate) fn entries_mut(&mut self) -> &mut [(Option<Answer>, f64)] {
        &mut self.entries
    }

    /// Removes the `None` key, takes the argmax, breaks ties, and assembles the decision.
    pub(crate) fn decide(
        self,
        rule: &'static str,
        tie_break: TieBreak,
        events: Vec<ScoreEvent>,
    ) -> Decision {
        let candidates: Vec<(&Answer, f64)> = self
            .entries
            .iter()
            .filter_map(|(k, s)| k.as_ref().map(|a| (a, *s)))
            .collect();
        let best = candidates
            .iter()
            .map(|&(_, s)| s)
            .fold(f64::NEG_INFINITY, f64::max);
        // Scores are sums of a few float terms; equal-by-construction scores can differ in the
        // last bits depending on summation order, so ties use a small tolerance.
        let tied: Vec<&Answer> = candidates
            .iter()
            .filter(|&&(_, s)| (best - s).abs() <= 1e-9 * best.abs().max(1.0))
            .map(|&(a, _)| a)
            .collect();
        let (answer, tie) = match tied.as_slice() {
            [] => (None, None),
            [one] => (Some((*one).clone()), None),
            many => {
                let pick = match tie_break {
                    TieBreak::Deterministic => 0,
                    TieBreak::Random { seed } => {
                        ChaCha8Rng::seed_from_u64(seed).random_range(0..many.len())
                    }
                };
                let tie = Tie {
                    candidates: many.iter().map(|a| a.canonical().to_string()).collect(),
                    broken_by: tie_break.to_string(),
                };
                (Some(many[pick].clone()), Some(tie))
            }
        };
        Decision {
            rule,
            answer,
            scores: self.entries,
            events,
            tie,
        }
    }
}

pub(crate) fn key_text(a: Option<&Answer>) -> Option<String> {
    a.map(|a| a.canonical().to_string())
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::answer::{Answer, AnswerKind, ExtractContext};
    use crate::trajectory::{Cell, Trajectory};

    /// A trajectory from rows of text answers: `"-"` is a missing response, `"?"` a response
    /// without an answer.
    pub fn traj(rows: &[&[&str]]) -> Trajectory {
        traj_kind(AnswerKind::Text, rows)
    }

    pub fn traj_kind(kind: AnswerKind, rows: &[&[&str]]) -> Trajectory {
        Trajectory::new(
            rows.iter()
                .map(|r| {
                    r.iter()
                        .map(|&s| match s {
                            "-" => Cell::Missing,
                            "?" => Cell::Answered(None),
                            s => Cell::Answered(Answer::parse(kind, s, &ExtractContext::default())),
                        })
                        .collect()
                })
                .collect(),
        )
        .expect("rectangular test trajectory")
    }

    pub fn score_of(d: &crate::decision::Decision, key: Option<&str>) -> Option<f64> {
        d.scores
            .iter()
            .find(|(k, _)| k.as_ref().map(|a| a.canonical()) == key)
            .map(|&(_, s)| s)
    }
}
