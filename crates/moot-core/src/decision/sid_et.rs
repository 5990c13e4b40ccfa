//! `sid-et`: SID-ET's decision: when the protocol skipped the debate because one agent's
//! pre-debate min token log-likelihood cleared the threshold, that agent's answer; otherwise the
//! last round's majority. On a run of another protocol (no early stop) it is `majority-last`.

use super::majority::MajorityLast;
use super::rule::{
    key_text, Action, Decision, DecisionRule, Evidence, ScoreEvent, Tally, TieBreak,
};
use crate::trajectory::Trajectory;

pub(super) const NAME: &str = "sid-et";

#[derive(Debug, Clone)]
pub struct SidEt {
    tie_break: TieBreak,
}

impl SidEt {
    pub fn new(tie_break: TieBreak) -> SidEt {
        SidEt { tie_break }
    }
}

impl DecisionRule for SidEt {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        self.decide_with(trajectory, &Evidence::default())
    }

    fn decide_with(&self, trajectory: &Trajectory, evidence: &Evidence) -> Decision {
        match evidence.early_stop.filter(|&a| a < trajectory.agents()) {
            Some(agent) => {
                let key = trajectory.cell(agent, 0).answer();
                let mut tally = Tally::default();
                tally.add(key, 1.0);
                let events = vec![ScoreEvent {
                    round: 0,
                    agent: Some(agent),
                    action: Action::Accept,
                    answer: key_text(key),
                    delta: 1.0,
                }];
                tally.decide(NAME, self.tie_break, events)
            }
            None => {
                let mut d = MajorityLast::new(self.tie_break).decide(trajectory);
                d.rule = NAME;
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::test_support::traj;

    #[test]
    fn early_stop_takes_the_confident_agent() {
        let t = traj(&[&["A", "A"], &["B", "B"], &["B", "B"]]);
        let rule = SidEt::new(TieBreak::Deterministic);
        assert_eq!(rule.decide(&t).answer.unwrap().canonical(), "b");
        let e = Evidence {
            early_stop: Some(0),
            ..Evidence::default()
        };
        let d = rule.decide_with(&t, &e);
        assert_eq!(d.answer.unwrap().canonical(), "a");
        assert_eq!(d.events[0].action, Action::Accept);
    }
}
