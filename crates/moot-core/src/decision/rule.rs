//! What every decision rule shares: the [`DecisionRule`] trait, its settings and outcome
//! ([`Decision`], [`ScoreEvent`], [`TieBreak`]), the [`Evidence`] some rules read beyond the
//! trajectory, and the score tally the rules count with. The rules depend on this module; it
//! depends on none of them nor on the registry (which holds the rules' settings, since they
//! name rule-specific types such as `FreeMadWeights`).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::answer::Answer;
use crate::debate::{DebateSpec, Outcome, Slot, Transcript};
use crate::trajectory::Trajectory;

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
    /// A judge's, aggregator's or chairman's answer (the `verdict` rule).
    Verdict,
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
    /// Final score per answer key, in order of first appearance, each group of equivalent
    /// answers named by its representative text (see `Tally`); the `None` key (responses
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
    /// Agents whose role is to decide (judges, aggregators, chairmen), from the spec.
    pub deciders: Vec<usize>,
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
    pub fn from_transcript(spec: &DebateSpec, t: &Transcript) -> Evidence {
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
            deciders: spec.deciders(),
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

/// Scores per answer key, keys grouped by answer equivalence and kept in first-seen order.
///
/// Equivalent answers can differ in text (two formattings of one program, `0.5` and
/// `\frac{1}{2}`). The text that represents a group in the decision — its answer, scores, tie
/// and explanation alike — is the one given most often ([`Tally::add`] counts one giving), ties
/// going to the shortest text and then to the smallest bytes: it never depends on agent order
/// alone.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    entries: Vec<(Option<Answer>, f64)>,
    /// Each exact text given: its entry's index, the answer, how many times it was given.
    texts: Vec<(usize, Answer, usize)>,
    /// Where each (entry, text) is in `texts`.
    text_index: HashMap<(usize, String), usize>,
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

    /// The key's score, if it has one.
    pub(crate) fn score(&self, key: Option<&Answer>) -> Option<f64> {
        self.position(key).map(|i| self.entries[i].1)
    }

    /// An answer given (a vote, a held answer): adds `delta` to its key, creating the key
    /// (with score 0) if it is new, and counts its text once.
    pub(crate) fn add(&mut self, key: Option<&Answer>, delta: f64) {
        self.change(key, delta, 1);
    }

    /// Adds `delta` to the key's score (creating it if it is new) without counting the answer
    /// as given: an answer left, not given (FREE-MAD's abandon).
    pub(crate) fn adjust(&mut self, key: Option<&Answer>, delta: f64) {
        self.change(key, delta, 0);
    }

    fn change(&mut self, key: Option<&Answer>, delta: f64, given: usize) {
        let i = match self.position(key) {
            Some(i) => {
                self.entries[i].1 += delta;
                i
            }
            None => {
                self.entries.push((key.cloned(), delta));
                self.entries.len() - 1
            }
        };
        if let Some(a) = key {
            match self.text_index.get(&(i, a.canonical().to_string())) {
                Some(&j) => self.texts[j].2 += given,
                None => {
                    self.text_index
                        .insert((i, a.canonical().to_string()), self.texts.len());
                    self.texts.push((i, a.clone(), given));
                }
            }
        }
    }

    pub(crate) fn entries_mut(&mut self) -> &mut [(Option<Answer>, f64)] {
        &mut self.entries
    }

    /// Puts each group's representative text (see [`Tally`]) in place of its first-seen one,
    /// in the entries and in the explanation.
    fn represent(&mut self, events: &mut [ScoreEvent]) {
        let mut best: Vec<Option<&(usize, Answer, usize)>> = vec![None; self.entries.len()];
        for t in &self.texts {
            let slot = &mut best[t.0];
            let better = slot.is_none_or(|b| rank(t) > rank(b));
            if better {
                *slot = Some(t);
            }
        }
        // The group each text names; a text two groups share (answers of different kinds)
        // names neither.
        let mut group_of: HashMap<&str, Option<usize>> = HashMap::new();
        for (i, a, _) in &self.texts {
            group_of
                .entry(a.canonical())
                .and_modify(|g| {
                    if *g != Some(*i) {
                        *g = None;
                    }
                })
                .or_insert(Some(*i));
        }
        for e in events.iter_mut() {
            let Some(text) = &e.answer else { continue };
            let group = group_of.get(text.as_str()).copied().flatten();
            if let Some((_, a, _)) = group.and_then(|g| best[g]) {
                if a.canonical() != text {
                    e.answer = Some(a.canonical().to_string());
                }
            }
        }
        for ((key, _), b) in self.entries.iter_mut().zip(best) {
            if let (Some(key), Some((_, a, _))) = (key.as_mut(), b) {
                *key = a.clone();
            }
        }
    }

    /// Removes the `None` key, takes the argmax, breaks ties, and assembles the decision.
    pub(crate) fn decide(
        mut self,
        rule: &'static str,
        tie_break: TieBreak,
        mut events: Vec<ScoreEvent>,
    ) -> Decision {
        self.represent(&mut events);
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

/// How well a given text represents its group: more often given, then shorter, then smaller.
fn rank(t: &(usize, Answer, usize)) -> (usize, Reverse<usize>, Reverse<&[u8]>) {
    let text = t.1.canonical();
    (t.2, Reverse(text.len()), Reverse(text.as_bytes()))
}

pub(crate) fn key_text(a: Option<&Answer>) -> Option<String> {
    a.map(|a| a.canonical().to_string())
}
