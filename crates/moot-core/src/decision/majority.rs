//! `majority-last`: plurality of the last round's answers.

use super::rule::{key_text, Action, Decision, DecisionRule, ScoreEvent, Tally, TieBreak};
use crate::trajectory::Trajectory;

pub(super) const NAME: &str = "majority-last";

/// Plurality of the last round. Agents without a response do not vote; responses without an
/// answer vote for the `None` key, which never wins. Deterministic ties go to the tied answer
/// given first in agent order.
#[derive(Debug, Clone)]
pub struct MajorityLast {
    tie_break: TieBreak,
}

impl MajorityLast {
    pub fn new(tie_break: TieBreak) -> MajorityLast {
        MajorityLast { tie_break }
    }
}

impl DecisionRule for MajorityLast {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        let round = trajectory.last_round();
        let (tally, events) = votes(trajectory, round, Action::Vote);
        tally.decide(NAME, self.tie_break, events)
    }
}

/// One vote per responding agent in `round`, recorded as `action`.
pub(super) fn votes(
    trajectory: &Trajectory,
    round: usize,
    action: Action,
) -> (Tally, Vec<ScoreEvent>) {
    votes_of(trajectory, round, action, |_| true)
}

/// One vote per responding agent in `round` that `voter` admits, recorded as `action`.
pub(super) fn votes_of(
    trajectory: &Trajectory,
    round: usize,
    action: Action,
    voter: impl Fn(usize) -> bool,
) -> (Tally, Vec<ScoreEvent>) {
    let mut tally = Tally::default();
    let mut events = Vec::new();
    for (agent, cell) in trajectory.round(round).enumerate() {
        if !cell.responded() || !voter(agent) {
            continue;
        }
        let key = cell.answer();
        tally.add(key, 1.0);
        events.push(ScoreEvent {
            round,
            agent: Some(agent),
            action,
            answer: key_text(key),
            delta: 1.0,
        });
    }
    (tally, events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::AnswerKind;
    use crate::decision::test_support::{score_of, traj, traj_kind};

    fn decide(rows: &[&[&str]]) -> Option<String> {
        MajorityLast::new(TieBreak::Deterministic)
            .decide(&traj(rows))
            .answer
            .map(|a| a.canonical().to_string())
    }

    #[test]
    fn plurality_of_last_round_only() {
        assert_eq!(
            decide(&[&["A", "B"], &["A", "B"], &["A", "C"]]),
            Some("b".into())
        );
    }

    #[test]
    fn none_never_wins() {
        assert_eq!(decide(&[&["?"], &["?"], &["A"]]), Some("a".into()));
        assert_eq!(decide(&[&["?"], &["?"]]), None);
    }

    #[test]
    fn missing_agents_do_not_vote() {
        let d = MajorityLast::new(TieBreak::Deterministic).decide(&traj(&[
            &["B", "-"],
            &["B", "-"],
            &["A", "A"],
        ]));
        assert_eq!(d.answer.as_ref().unwrap().canonical(), "a");
        assert_eq!(score_of(&d, Some("b")), None);
    }

    fn decide_code(team: &[&str]) -> crate::decision::Decision {
        let rows: Vec<&[&str]> = team.iter().map(std::slice::from_ref).collect();
        MajorityLast::new(TieBreak::Deterministic).decide(&traj_kind(AnswerKind::Code, &rows))
    }

    #[test]
    fn the_majority_program_wins_even_when_its_operator_opens_a_line() {
        // Issue 41: `// 3` / `// 2` on a continuation line are floor division; two agents
        // of three wrote the `// 2` program, so it is the team's answer.
        let three = "def f(x):\n    return (x\n            // 3)";
        let two = "def f(x):\n    return (x\n            // 2)";
        let d = decide_code(&[three, two, two]);
        assert_eq!(d.answer.as_ref().map(|a| a.canonical()), Some(two));
        assert_eq!(score_of(&d, Some(two)), Some(2.0));
        assert_eq!(score_of(&d, Some(three)), Some(1.0));
    }

    #[test]
    fn the_text_given_most_often_represents_a_program_in_any_agent_order() {
        let commented = "def f(x):\n    # double it\n    return 2 * x";
        let plain = "def f(x):\n    return 2 * x";
        let spaced = "def f(x):\n\n    return 2 * x";
        for team in [
            [commented, plain, plain],
            [plain, commented, plain],
            [plain, plain, commented],
        ] {
            let d = decide_code(&team);
            assert_eq!(d.answer.as_ref().map(|a| a.canonical()), Some(plain));
            // The scores and the explanation name it as the answer does.
            assert_eq!(score_of(&d, Some(plain)), Some(3.0));
            assert!(d.events.iter().all(|e| e.answer.as_deref() == Some(plain)));
        }
        // Texts given equally often: the shortest, then the smallest.
        for team in [[commented, spaced], [spaced, commented]] {
            let d = decide_code(&team);
            assert_eq!(d.answer.as_ref().map(|a| a.canonical()), Some(spaced));
        }
        let a = "def f(x):\n    return 2 * x  # a";
        let b = "def f(x):\n    return 2 * x  # b";
        for team in [[a, b], [b, a]] {
            let d = decide_code(&team);
            assert_eq!(d.answer.as_ref().map(|a| a.canonical()), Some(a));
        }
    }

    #[test]
    fn deterministic_tie_goes_to_first_agent_order() {
        assert_eq!(
            decide(&[&["A", "C"], &["A", "B"], &["B", "B"], &["B", "C"]]),
            Some("c".into())
        );
    }
}
