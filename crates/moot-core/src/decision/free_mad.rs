//! FREE-MAD score-based decision (FREE-MAD Algorithm 1).
//!
//! With f = 1/(k+1) for round k and weights W = [w1, w2, w3, w4]:
//! - round 0: each agent's answer gains w1·f;
//! - round k ≥ 1: an agent whose answer changed from p to r takes w2·f from p (if p is a key)
//!   and gives w3·f to r; an agent that kept r gives w4·f to r.
//!
//! "No answer" (`None`) is a key like any other while scoring and is removed before the argmax.
//! "Changed" means "not equivalent under the answer kind". Choices the paper leaves open:
//! an agent with no response in a round contributes nothing that round and its last observed
//! answer stays its previous one; an agent whose first response comes after round 0 scores it as
//! an initial answer (w1·f of that round), since it changed no earlier opinion.

use std::fmt;
use std::str::FromStr;

use super::rule::{key_text, Action, Decision, DecisionRule, ScoreEvent, Tally, TieBreak};
use crate::answer::Answer;
use crate::trajectory::{Cell, Trajectory};

pub(super) const NAME: &str = "free-mad";

/// FREE-MAD weights [initial, change-penalty, change-bonus, keep].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FreeMadWeights {
    pub initial: f64,
    pub abandon: f64,
    pub adopt: f64,
    pub keep: f64,
}

impl Default for FreeMadWeights {
    /// The paper's W = [20, 25, 30, 20].
    fn default() -> Self {
        FreeMadWeights {
            initial: 20.0,
            abandon: 25.0,
            adopt: 30.0,
            keep: 20.0,
        }
    }
}

impl fmt::Display for FreeMadWeights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.initial, self.abandon, self.adopt, self.keep
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightsError {
    #[error(
        "weights need exactly 4 comma-separated numbers (initial,abandon,adopt,keep), got {0}"
    )]
    Count(usize),
    #[error("weight {position} ({text:?}) is not a number")]
    NotANumber { position: usize, text: String },
    #[error("weight {position} ({value}) must be a finite number >= 0")]
    OutOfRange { position: usize, value: String },
}

impl FreeMadWeights {
    pub fn new(w: [f64; 4]) -> Result<FreeMadWeights, WeightsError> {
        for (i, v) in w.iter().enumerate() {
            if !v.is_finite() || *v < 0.0 {
                return Err(WeightsError::OutOfRange {
                    position: i + 1,
                    value: v.to_string(),
                });
            }
        }
        Ok(FreeMadWeights {
            initial: w[0],
            abandon: w[1],
            adopt: w[2],
            keep: w[3],
        })
    }
}

impl FromStr for FreeMadWeights {
    type Err = WeightsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 4 {
            return Err(WeightsError::Count(parts.len()));
        }
        let mut w = [0.0; 4];
        for (i, p) in parts.iter().enumerate() {
            w[i] = p.parse().map_err(|_| WeightsError::NotANumber {
                position: i + 1,
                text: (*p).to_string(),
            })?;
        }
        FreeMadWeights::new(w)
    }
}

/// The FREE-MAD rule.
#[derive(Debug, Clone)]
pub struct FreeMad {
    weights: FreeMadWeights,
    tie_break: TieBreak,
    normalize: bool,
}

impl FreeMad {
    pub fn new(weights: FreeMadWeights, tie_break: TieBreak, normalize: bool) -> FreeMad {
        FreeMad {
            weights,
            tie_break,
            normalize,
        }
    }
}

impl DecisionRule for FreeMad {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        let w = self.weights;
        let mut score = Scoring::default();
        // Last observed answer per agent: None = never responded yet; Some(None) = responded
        // without an answer.
        let mut previous: Vec<Option<Option<&Answer>>> = vec![None; trajectory.agents()];
        // Agents that ever held each key, for `normalize`.
        let mut holders: Vec<(Option<&Answer>, Vec<usize>)> = Vec::new();
        for round in 0..trajectory.rounds() {
            let f = 1.0 / (round as f64 + 1.0);
            for (agent, (cell, prev)) in
                trajectory.round(round).zip(previous.iter_mut()).enumerate()
            {
                let Cell::Answered(current) = cell else {
                    continue;
                };
                let current = current.as_ref();
                note_holder(&mut holders, current, agent);
                match *prev {
                    None => score.record(round, agent, Action::Initial, current, w.initial * f),
                    Some(p) if same(p, current) => {
                        score.record(round, agent, Action::Keep, current, w.keep * f)
                    }
                    Some(p) => {
                        if score.tally.contains(p) {
                            score.leave(round, agent, p, -w.abandon * f);
                        }
                        score.record(round, agent, Action::Adopt, current, w.adopt * f);
                    }
                }
                *prev = Some(current);
            }
        }
        let Scoring {
            mut tally,
            mut events,
        } = score;
        if self.normalize {
            let last = trajectory.last_round();
            for (key, score) in tally.entries_mut() {
                let count = holders
                    .iter()
                    .find(|(k, _)| same(*k, key.as_ref()))
                    .map_or(1, |(_, agents)| agents.len().max(1));
                let normalized = *score / count as f64;
                events.push(ScoreEvent {
                    round: last,
                    agent: None,
                    action: Action::Normalize,
                    answer: key_text(key.as_ref()),
                    delta: normalized - *score,
                });
                *score = normalized;
            }
        }
        tally.decide(NAME, self.tie_break, events)
    }
}

/// The running tally and its explanation.
#[derive(Default)]
struct Scoring {
    tally: Tally,
    events: Vec<ScoreEvent>,
}

impl Scoring {
    fn record(
        &mut self,
        round: usize,
        agent: usize,
        action: Action,
        key: Option<&Answer>,
        delta: f64,
    ) {
        self.tally.add(key, delta);
        self.events.push(ScoreEvent {
            round,
            agent: Some(agent),
            action,
            answer: key_text(key),
            delta,
        });
    }

    /// The agent left `key`: its score changes, but the answer was not given again.
    fn leave(&mut self, round: usize, agent: usize, key: Option<&Answer>, delta: f64) {
        self.tally.adjust(key, delta);
        self.events.push(ScoreEvent {
            round,
            agent: Some(agent),
            action: Action::Abandon,
            answer: key_text(key),
            delta,
        });
    }
}

fn same(a: Option<&Answer>, b: Option<&Answer>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.equivalent(y),
        _ => false,
    }
}

fn note_holder<'a>(
    holders: &mut Vec<(Option<&'a Answer>, Vec<usize>)>,
    key: Option<&'a Answer>,
    agent: usize,
) {
    match holders.iter_mut().find(|(k, _)| same(*k, key)) {
        Some((_, agents)) => {
            if !agents.contains(&agent) {
                agents.push(agent);
            }
        }
        None => holders.push((key, vec![agent])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::AnswerKind;
    use crate::decision::majority::MajorityLast;
    use crate::decision::test_support::{score_of, traj, traj_kind};

    fn rule() -> FreeMad {
        FreeMad::new(FreeMadWeights::default(), TieBreak::Deterministic, false)
    }

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("score present");
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn weights_parse_and_validate() {
        assert_eq!("20,25,30,20".parse(), Ok(FreeMadWeights::default()));
        assert_eq!(
            " 1, 2 ,3,4".parse::<FreeMadWeights>().map(|w| w.adopt),
            Ok(3.0)
        );
        assert_eq!(
            "1,2,3".parse::<FreeMadWeights>(),
            Err(WeightsError::Count(3))
        );
        assert!(matches!(
            "1,x,3,4".parse::<FreeMadWeights>(),
            Err(WeightsError::NotANumber { position: 2, .. })
        ));
        assert!(matches!(
            "1,2,-3,4".parse::<FreeMadWeights>(),
            Err(WeightsError::OutOfRange { position: 3, .. })
        ));
        assert!(matches!(
            "1,2,3,inf".parse::<FreeMadWeights>(),
            Err(WeightsError::OutOfRange { position: 4, .. })
        ));
    }

    // Hand computed, R = 2. Round 0: A,A,A (3×20 = 60). Round 1 (f=1/2): all keep (+3×10).
    // Round 2 (f=1/3): agent 0 keeps (+20/3); agents 1, 2 move A→B (A −2×25/3, B +2×30/3).
    // A = 60 + 30 + 20/3 − 50/3 = 80; B = 20. Majority of the last round says B.
    #[test]
    fn late_defection_loses_to_the_trajectory() {
        let t = traj(&[&["A", "A", "A"], &["A", "A", "B"], &["A", "A", "B"]]);
        let d = rule().decide(&t);
        close(score_of(&d, Some("a")), 80.0);
        close(score_of(&d, Some("b")), 20.0);
        assert_eq!(d.answer.as_ref().map(|a| a.canonical()), Some("a"));
        let m = MajorityLast::new(TieBreak::Deterministic).decide(&t);
        assert_eq!(m.answer.as_ref().map(|a| a.canonical()), Some("b"));
    }

    // R = 1. Round 0: A, A, B → A 40, B 20. Round 1 (f=1/2): agent 0 A→B (A −12.5, B +15),
    // agent 1 A→B (A −12.5, B +15), agent 2 keeps B (+10). A = 15, B = 60.
    #[test]
    fn adopted_answer_gains() {
        let t = traj(&[&["A", "B"], &["A", "B"], &["B", "B"]]);
        let d = rule().decide(&t);
        close(score_of(&d, Some("a")), 15.0);
        close(score_of(&d, Some("b")), 60.0);
        assert_eq!(d.answer.unwrap().canonical(), "b");
        assert_eq!(d.events.len(), 3 + 2 * 2 + 1);
    }

    // None takes part as a key. Round 0: None, A, B (20 each). Round 1: agent 0 None→A
    // (None −12.5, A +15), agent 1 A→None (A −12.5, None +15), agent 2 keeps B (+10).
    // None = 22.5, A = 22.5, B = 30 → B.
    #[test]
    fn none_is_scored_then_removed() {
        let t = traj(&[&["?", "A"], &["A", "?"], &["B", "B"]]);
        let d = rule().decide(&t);
        close(score_of(&d, None), 22.5);
        close(score_of(&d, Some("a")), 22.5);
        close(score_of(&d, Some("b")), 30.0);
        assert_eq!(d.answer.unwrap().canonical(), "b");
    }

    // None would have won on score (40 + 20 = 60 vs A 30) but can never be chosen.
    #[test]
    fn none_never_wins_even_with_top_score() {
        let t = traj(&[&["?", "?"], &["?", "?"], &["A", "A"]]);
        let d = rule().decide(&t);
        close(score_of(&d, None), 60.0);
        assert_eq!(d.answer.unwrap().canonical(), "a");
    }

    #[test]
    fn all_none_decides_nothing() {
        let t = traj(&[&["?", "?"], &["?", "?"]]);
        let d = rule().decide(&t);
        assert!(d.answer.is_none());
        assert!(d.tie.is_none());
        close(score_of(&d, None), 60.0);
    }

    // None in the last position only: agent 0 A→None loses A's points to the None key.
    // Round 0: A, B (20 each). Round 1: agent 0 A→None (A −12.5, None +15), agent 1 keeps B (+10).
    #[test]
    fn none_in_last_round() {
        let t = traj(&[&["A", "?"], &["B", "B"]]);
        let d = rule().decide(&t);
        close(score_of(&d, Some("a")), 7.5);
        close(score_of(&d, Some("b")), 30.0);
        close(score_of(&d, None), 15.0);
    }

    // A missing response contributes nothing; the last observed answer stays "previous".
    // Agent 0: A, —, B: round 0 +20 to A; round 2 (f=1/3) A→B: A −25/3, B +10.
    // Agent 1: B, B, B: 20 + 10 + 20/3. Agent 2: —, C, C: first answer in round 1 is initial
    // (20/2 = 10), then keep (+20/3).
    #[test]
    fn missing_responses_contribute_nothing() {
        let t = traj(&[&["A", "-", "B"], &["B", "B", "B"], &["-", "C", "C"]]);
        let d = rule().decide(&t);
        close(score_of(&d, Some("a")), 20.0 - 25.0 / 3.0);
        close(score_of(&d, Some("b")), 10.0 + 20.0 + 10.0 + 20.0 / 3.0);
        close(score_of(&d, Some("c")), 10.0 + 20.0 / 3.0);
        assert!(d
            .events
            .iter()
            .all(|e| !(e.agent == Some(0) && e.round == 1)));
    }

    // Two agents that never move: A 30, B 30. Deterministic picks the one first seen in round 0.
    #[test]
    fn ties_deterministic_follow_round0_order() {
        let d = rule().decide(&traj(&[&["A", "A"], &["B", "B"]]));
        assert_eq!(d.answer.unwrap().canonical(), "a");
        let tie = d.tie.expect("tie recorded");
        assert_eq!(tie.candidates, vec!["a", "b"]);
        let d = rule().decide(&traj(&[&["B", "B"], &["A", "A"]]));
        assert_eq!(d.answer.unwrap().canonical(), "b");
    }

    #[test]
    fn ties_random_are_seeded_and_fair_enough() {
        let t = traj(&[&["A", "A"], &["B", "B"]]);
        let pick = |seed| {
            FreeMad::new(FreeMadWeights::default(), TieBreak::Random { seed }, false)
                .decide(&t)
                .answer
                .unwrap()
                .canonical()
                .to_string()
        };
        assert_eq!(pick(7), pick(7));
        let picks: Vec<String> = (0..64).map(pick).collect();
        assert!(picks.iter().any(|p| p == "a") && picks.iter().any(|p| p == "b"));
    }

    // Without normalize: A = 20 + 10 = 30; B = 20 + 20 + 10 − 12.5 = 37.5; C = 15 → B.
    // With normalize (agents that ever held it): A 30/1, B 37.5/2 = 18.75, C 15/1 → A.
    #[test]
    fn normalize_divides_by_holders() {
        let t = traj(&[&["A", "A"], &["B", "B"], &["B", "C"]]);
        assert_eq!(rule().decide(&t).answer.unwrap().canonical(), "b");
        let d = FreeMad::new(FreeMadWeights::default(), TieBreak::Deterministic, true).decide(&t);
        close(score_of(&d, Some("b")), 18.75);
        assert_eq!(d.answer.unwrap().canonical(), "a");
    }

    // "Changed" is judged by answer equivalence: 0.5 → 1/2 is a keep, not a change.
    #[test]
    fn equivalent_answers_are_kept_not_changed() {
        let t = traj_kind(AnswerKind::Numeric, &[&["0.5", "1/2"], &["3", "3"]]);
        let d = rule().decide(&t);
        close(score_of(&d, Some("0.5")), 30.0);
        assert!(d.events.iter().all(|e| e.action != Action::Adopt));
    }

    #[test]
    fn custom_weights_apply() {
        let w = FreeMadWeights::new([1.0, 0.0, 0.0, 0.0]).unwrap();
        let d = FreeMad::new(w, TieBreak::Deterministic, false).decide(&traj(&[
            &["A", "B"],
            &["A", "B"],
            &["B", "B"],
        ]));
        close(score_of(&d, Some("a")), 2.0);
        close(score_of(&d, Some("b")), 1.0);
    }
}
