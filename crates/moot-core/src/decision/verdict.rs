//! `verdict`: the answer of the debate's deciding agents — the judge of `judge`, `assigned` and
//! `consultancy`, the aggregator of `moa`, the chairman of `council` (agents whose role is not
//! debater). Several deciders (a panel) vote, ties broken as configured. When no decider gave a
//! readable answer (it timed out, the protocol skipped it because there was nothing to decide,
//! or the run has no decider at all), the debaters' last-round plurality decides, as
//! `majority-last` over the debaters alone.

use super::majority::votes_of;
use super::rule::{Action, Decision, DecisionRule, Evidence, TieBreak};
use crate::trajectory::Trajectory;

pub(super) const NAME: &str = "verdict";

#[derive(Debug, Clone)]
pub struct Verdict {
    tie_break: TieBreak,
}

impl Verdict {
    pub fn new(tie_break: TieBreak) -> Verdict {
        Verdict { tie_break }
    }
}

impl DecisionRule for Verdict {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        self.decide_with(trajectory, &Evidence::default())
    }

    fn decide_with(&self, trajectory: &Trajectory, evidence: &Evidence) -> Decision {
        let n = trajectory.agents();
        let deciders: Vec<usize> = evidence
            .deciders
            .iter()
            .copied()
            .filter(|&a| a < n)
            .collect();
        // The latest round in which a decider gave an answer: its deciders vote.
        let decided = (0..trajectory.rounds()).rev().find(|&r| {
            deciders
                .iter()
                .any(|&a| trajectory.cell(a, r).answer().is_some())
        });
        let (tally, events) = match decided {
            Some(round) => votes_of(trajectory, round, Action::Verdict, |a| {
                deciders.contains(&a)
            }),
            None => votes_of(trajectory, trajectory.last_round(), Action::Vote, |a| {
                !deciders.contains(&a)
            }),
        };
        tally.decide(NAME, self.tie_break, events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::test_support::traj;

    fn judged(judge: usize) -> Evidence {
        Evidence {
            deciders: vec![judge],
            ..Evidence::default()
        }
    }

    #[test]
    fn the_judge_overrules_a_unanimous_team() {
        // Two debaters agree on A; the judge, silent until the last round, says B.
        let t = traj(&[&["A", "A"], &["A", "A"], &["-", "B"]]);
        let d = Verdict::new(TieBreak::Deterministic).decide_with(&t, &judged(2));
        assert_eq!(d.answer.unwrap().canonical(), "b");
        assert_eq!(d.events.len(), 1);
        assert_eq!(
            (d.events[0].agent, d.events[0].action),
            (Some(2), Action::Verdict)
        );
    }

    #[test]
    fn a_judge_without_an_answer_leaves_the_decision_to_the_debaters_vote() {
        let t = traj(&[&["A", "A"], &["B", "A"], &["-", "?"]]);
        let d = Verdict::new(TieBreak::Deterministic).decide_with(&t, &judged(2));
        assert_eq!(d.answer.unwrap().canonical(), "a");
        assert!(d
            .events
            .iter()
            .all(|e| e.action == Action::Vote && e.agent != Some(2)));
        // A judge that never answered and a run without any decider read the same.
        let missing = traj(&[&["A", "A"], &["B", "A"], &["-", "-"]]);
        let none = Verdict::new(TieBreak::Deterministic).decide(&missing);
        assert_eq!(none.answer.unwrap().canonical(), "a");
    }

    #[test]
    fn a_panel_of_judges_votes() {
        let t = traj(&[&["A", "A"], &["-", "B"], &["-", "C"], &["-", "B"]]);
        let e = Evidence {
            deciders: vec![1, 2, 3],
            ..Evidence::default()
        };
        let d = Verdict::new(TieBreak::Deterministic).decide_with(&t, &e);
        assert_eq!(d.answer.unwrap().canonical(), "b");
    }

    #[test]
    fn deciders_outside_the_trajectory_are_ignored() {
        let t = traj(&[&["A"], &["B"]]);
        let d = Verdict::new(TieBreak::Deterministic).decide_with(&t, &judged(7));
        assert_eq!(d.tie.map(|t| t.candidates.len()), Some(2));
    }
}
