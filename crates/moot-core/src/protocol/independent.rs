//! `cot` and `cot-sc`: independent answers without debate.

use super::opening::initial_call;
use super::options::ProtocolOptions;
use super::plan::{PlannedCall, Protocol, Step};
use crate::debate::{DebateSpec, Transcript};
use crate::faults::Faults;

/// Round 0 only. `cot` uses one agent; `cot-sc` (self-consistency) samples every agent once and
/// takes the majority.
#[derive(Debug, Clone)]
pub struct Independent {
    name: &'static str,
    single: bool,
    faults: Faults,
}

impl Independent {
    pub fn single(options: &ProtocolOptions) -> Independent {
        Independent {
            name: "cot",
            single: true,
            faults: options.faults.clone(),
        }
    }

    pub fn self_consistency(options: &ProtocolOptions) -> Independent {
        Independent {
            name: "cot-sc",
            single: false,
            faults: options.faults.clone(),
        }
    }
}

impl Protocol for Independent {
    fn name(&self) -> &'static str {
        self.name
    }

    fn default_rule(&self) -> &'static str {
        "majority-last"
    }

    fn shape(&self, agents: usize, _rounds: usize) -> (usize, usize) {
        (if self.single { 1 } else { agents }, 0)
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        match t.first_open_round() {
            None => Step::Done,
            Some(round) => Step::Round {
                round,
                calls: t
                    .open_agents(round)
                    .into_iter()
                    .map(|agent| -> PlannedCall { initial_call(spec, &self.faults, agent, None) })
                    .collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::CallMode;
    use crate::debate::Transcript;
    use crate::protocol::test_support::{respond, spec};
    use crate::protocol::Step;

    #[test]
    fn cot_is_one_call_and_cot_sc_is_n() {
        assert_eq!(
            Independent::single(&ProtocolOptions::default()).shape(3, 2),
            (1, 0)
        );
        let p = Independent::self_consistency(&ProtocolOptions::default());
        assert_eq!(p.shape(3, 2), (3, 0));
        let s = spec(3, 0);
        let mut t = Transcript::new(3, 0);
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!("a round")
        };
        assert_eq!((round, calls.len()), (0, 3));
        assert!(calls
            .iter()
            .all(|c| c.peers.is_empty() && c.mode == CallMode::Generate));
        assert!(calls[0].messages[1].content.contains("What is 17 * 24?"));
        for a in 0..3 {
            respond(&s, &mut t, 0, a, "Final answer: 408");
        }
        assert_eq!(p.next(&s, &t), Step::Done);
    }
}
