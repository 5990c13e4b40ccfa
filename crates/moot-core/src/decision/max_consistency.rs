//! `max-consistency` (MADC): the answer of the agent that agrees with the most other agents.

use super::majority::votes;
use super::rule::{Action, Decision, DecisionRule, TieBreak};
use crate::trajectory::Trajectory;

pub(super) const NAME: &str = "max-consistency";

/// Per round, an answer's consistency is the number of *other* agents holding it. The answer of
/// the most consistent agent in the last round wins; ties are broken as in `majority-last`. A
/// round in which nobody gave an answer is skipped for the latest one that has answers.
#[derive(Debug, Clone)]
pub struct MaxConsistency {
    tie_break: TieBreak,
}

impl MaxConsistency {
    pub fn new(tie_break: TieBreak) -> MaxConsistency {
        MaxConsistency { tie_break }
    }
}

impl DecisionRule for MaxConsistency {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        let round = (0..trajectory.rounds())
            .rev()
            .find(|&r| trajectory.round(r).any(|c| c.answer().is_some()))
            .unwrap_or(trajectory.last_round());
        let (mut tally, mut events) = votes(trajectory, round, Action::Agreement);
        // Each holder added 1; consistency counts the *other* holders.
        for (_, score) in tally.entries_mut() {
            *score -= 1.0;
        }
        // The explanation shows, per agent, how many others agree with it: its answer's score,
        // read from the tally (one lookup per agent, not a comparison with every other agent).
        let answers: Vec<_> = trajectory.round(round).collect();
        for e in &mut events {
            let Some(agent) = e.agent else { continue };
            e.delta = tally.score(answers[agent].answer()).unwrap_or(0.0);
        }
        tally.decide(NAME, self.tie_break, events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::test_support::{score_of, traj};

    #[test]
    fn most_agreed_answer_of_last_round() {
        let d = MaxConsistency::new(TieBreak::Deterministic).decide(&traj(&[
            &["A", "B"],
            &["A", "B"],
            &["A", "C"],
        ]));
        assert_eq!(d.answer.as_ref().unwrap().canonical(), "b");
        assert_eq!(score_of(&d, Some("b")), Some(1.0));
        assert_eq!(score_of(&d, Some("c")), Some(0.0));
        assert_eq!(d.events.iter().filter(|e| e.delta == 1.0).count(), 2);
    }

    #[test]
    fn falls_back_to_latest_round_with_answers() {
        let d = MaxConsistency::new(TieBreak::Deterministic).decide(&traj(&[
            &["A", "?"],
            &["A", "-"],
            &["B", "?"],
        ]));
        assert_eq!(d.answer.unwrap().canonical(), "a");
    }

    #[test]
    fn ties_as_majority() {
        let d = MaxConsistency::new(TieBreak::Deterministic).decide(&traj(&[&["B"], &["A"]]));
        assert_eq!(d.answer.unwrap().canonical(), "b");
        assert_eq!(d.tie.unwrap().candidates, vec!["b", "a"]);
    }
}
