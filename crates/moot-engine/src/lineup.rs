//! Fitting a team to a protocol: which of the team's agents a debate runs, and for how many
//! rounds. The one place outside moot-core that asks a protocol for its shape, so that the
//! configuration's trimming, the size check and the debate's constructor cannot disagree.

use moot_core::debate::AgentRole;
use moot_core::protocol::Protocol;

/// The agents of a team a protocol runs, and its debate rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineup {
    /// Positions in the team of the agents kept, in team order.
    pub kept: Vec<usize>,
    /// Debate rounds after round 0.
    pub rounds: usize,
    /// A debater (by position in the team) given the protocol's deciding role because the team
    /// named nobody for it; see [`Lineup::fit`].
    pub cast: Option<(usize, AgentRole)>,
}

impl Lineup {
    /// Fits a team whose agents have `roles` (in team order) to `protocol`, asked for `rounds`
    /// debate rounds.
    ///
    /// - A protocol with a deciding role (a judge, an aggregator, a chairman: see
    ///   [`Protocol::roles`]) whose team names nobody for it gives the role to the team's last
    ///   debater ([`Lineup::cast`]), so any team runs it: three agents become two debaters and
    ///   a judge.
    /// - An agent with a role the protocol uses is always kept, where it was relative to the
    ///   others kept; one with a role the protocol does not use sits out (a benchmark runs one
    ///   team under several protocols, and `som` has no part for a judge).
    /// - The protocol's shape applies to the debaters: the first ones it runs are kept, the
    ///   rest dropped. A shape asking for more debaters than the team has keeps them all.
    pub fn fit(protocol: &dyn Protocol, roles: &[AgentRole], rounds: usize) -> Lineup {
        let used = protocol.roles();
        let mut roles = roles.to_vec();
        let mut cast = None;
        if let Some(&role) = used.first() {
            if !roles.iter().any(|r| used.contains(r)) {
                if let Some(last) = roles.iter().rposition(AgentRole::is_debater) {
                    roles[last] = role;
                    cast = Some((last, role));
                }
            }
        }
        let debaters = roles.iter().filter(|r| r.is_debater()).count();
        let (runs, rounds) = protocol.shape(debaters, rounds);
        let mut debaters_kept = 0;
        let kept = roles
            .iter()
            .enumerate()
            .filter(|(_, role)| {
                if !role.is_debater() {
                    return used.contains(role);
                }
                debaters_kept += 1;
                debaters_kept <= runs
            })
            .map(|(i, _)| i)
            .collect();
        Lineup { kept, rounds, cast }
    }

    /// `roles` with the cast applied (see [`Lineup::cast`]).
    pub fn cast_roles(&self, roles: &mut [AgentRole]) {
        if let Some((i, role)) = self.cast {
            if let Some(r) = roles.get_mut(i) {
                *r = role;
            }
        }
    }

    /// A team of `agents` debaters (a configuration's agents, which name no roles) fitted to
    /// `protocol`.
    pub fn fit_debaters(protocol: &dyn Protocol, agents: usize, rounds: usize) -> Lineup {
        Lineup::fit(protocol, &vec![AgentRole::Debater; agents], rounds)
    }

    /// The kept members of `team` (any list in team order), in team order.
    pub fn keep<T>(&self, team: Vec<T>) -> Vec<T> {
        let mut keep = vec![false; team.len()];
        for &i in &self.kept {
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
        team.into_iter()
            .zip(keep)
            .filter_map(|(member, kept)| kept.then_some(member))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_core::debate::{DebateSpec, Transcript};
    use moot_core::protocol::{build_protocol, ProtocolOptions, Step, PROTOCOLS};
    use proptest::prelude::*;

    /// A protocol that runs at most `debaters` agents for at most `rounds` rounds.
    struct Capped {
        debaters: usize,
        rounds: usize,
        roles: &'static [AgentRole],
    }

    const DECIDERS: &[AgentRole] = &[AgentRole::Judge, AgentRole::Aggregator, AgentRole::Chairman];

    impl Protocol for Capped {
        fn name(&self) -> &'static str {
            "capped"
        }
        fn default_rule(&self) -> &'static str {
            "majority-last"
        }
        fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
            (agents.min(self.debaters), rounds.min(self.rounds))
        }
        fn roles(&self) -> &'static [AgentRole] {
            self.roles
        }
        fn next(&self, _spec: &DebateSpec, _transcript: &Transcript) -> Step {
            Step::Done
        }
    }

    fn role() -> impl Strategy<Value = AgentRole> {
        prop_oneof![
            3 => Just(AgentRole::Debater),
            1 => Just(AgentRole::Judge),
            1 => Just(AgentRole::Aggregator),
            1 => Just(AgentRole::Chairman),
        ]
    }

    #[test]
    fn a_judge_listed_last_stays_last_when_debaters_are_cut() {
        use AgentRole::{Debater, Judge};
        let one = Capped {
            debaters: 1,
            rounds: 0,
            roles: DECIDERS,
        };
        let lineup = Lineup::fit(&one, &[Debater, Debater, Debater, Judge], 3);
        assert_eq!(lineup.kept, vec![0, 3]);
        assert_eq!(lineup.rounds, 0);
        assert_eq!(
            lineup.keep(vec!["a0", "a1", "a2", "judge"]),
            vec!["a0", "judge"]
        );
    }

    /// A protocol without deciding roles (every protocol of the four papers).
    struct Plain;

    impl Protocol for Plain {
        fn name(&self) -> &'static str {
            "plain"
        }
        fn default_rule(&self) -> &'static str {
            "majority-last"
        }
        fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
            (agents, rounds)
        }
        fn next(&self, _spec: &DebateSpec, _transcript: &Transcript) -> Step {
            Step::Done
        }
    }

    #[test]
    fn a_judge_sits_out_a_protocol_that_gives_it_no_part() {
        use AgentRole::{Debater, Judge};
        let lineup = Lineup::fit(&Plain, &[Debater, Judge, Debater], 2);
        assert_eq!((lineup.kept, lineup.cast), (vec![0, 2], None));
    }

    #[test]
    fn a_team_without_a_judge_gives_the_role_to_its_last_debater() {
        let judge = build_protocol("judge", &ProtocolOptions::default()).unwrap();
        let lineup = Lineup::fit_debaters(&*judge, 3, 2);
        assert_eq!(lineup.kept, vec![0, 1, 2]);
        assert_eq!(lineup.cast, Some((2, AgentRole::Judge)));
        let mut roles = vec![AgentRole::Debater; 3];
        lineup.cast_roles(&mut roles);
        assert_eq!(roles[2], AgentRole::Judge);
        // A configured judge is kept wherever it is listed, and nobody is cast.
        use AgentRole::{Debater, Judge};
        let named = Lineup::fit(&*judge, &[Debater, Debater, Debater, Judge], 1);
        assert_eq!((named.kept, named.cast), (vec![0, 1, 2, 3], None));
    }

    #[test]
    fn a_team_of_debaters_is_cut_to_its_first_agents() {
        let two = Capped {
            debaters: 2,
            rounds: 5,
            roles: &[],
        };
        let lineup = Lineup::fit_debaters(&two, 4, 3);
        assert_eq!(lineup.kept, vec![0, 1]);
        assert_eq!(lineup.rounds, 3);
    }

    #[test]
    fn cot_keeps_one_agent_and_no_round() {
        let cot = build_protocol("cot", &ProtocolOptions::default()).unwrap();
        let lineup = Lineup::fit_debaters(&*cot, 3, 2);
        assert_eq!((lineup.kept, lineup.rounds), (vec![0], 0));
    }

    /// The app fits a configuration's team before it builds the agents, and the debate's
    /// constructor fits the built team again: the second fit must keep everything.
    #[test]
    fn fitting_a_fitted_team_again_keeps_it_whole_for_every_protocol() {
        let mut fitted = 0;
        for entry in PROTOCOLS {
            let Ok(protocol) = (entry.build)(&ProtocolOptions::default()) else {
                continue;
            };
            fitted += 1;
            for (agents, rounds) in [(1, 0), (3, 2), (6, 4)] {
                let first = Lineup::fit_debaters(&*protocol, agents, rounds);
                let again = Lineup::fit_debaters(&*protocol, first.kept.len(), first.rounds);
                assert_eq!(again.kept, (0..first.kept.len()).collect::<Vec<_>>());
                assert_eq!(again.rounds, first.rounds, "{}", entry.name);
            }
        }
        assert!(
            fitted * 2 > PROTOCOLS.len(),
            "most protocols build with default options"
        );
    }

    proptest! {
        #[test]
        fn role_agents_are_never_dropped_and_debaters_are_cut_to_the_shape(
            roles in prop::collection::vec(role(), 0..12),
            debaters in 0usize..8,
            max_rounds in 0usize..4,
            rounds in 0usize..6,
        ) {
            let protocol = Capped { debaters, rounds: max_rounds, roles: DECIDERS };
            let lineup = Lineup::fit(&protocol, &roles, rounds);
            // A team naming no deciding role has its last debater cast as the judge.
            let named_role = roles.iter().any(|r| !r.is_debater());
            let last_debater = roles.iter().rposition(AgentRole::is_debater);
            let expected_cast = if named_role { None } else { last_debater.map(|i| (i, AgentRole::Judge)) };
            prop_assert_eq!(lineup.cast, expected_cast);
            let mut roles = roles;
            lineup.cast_roles(&mut roles);
            let team_debaters = roles.iter().filter(|r| r.is_debater()).count();
            let (runs, shaped_rounds) = protocol.shape(team_debaters, rounds);
            prop_assert_eq!(lineup.rounds, shaped_rounds);
            // Team order is kept.
            prop_assert!(lineup.kept.windows(2).all(|w| w[0] < w[1]));
            for (i, role) in roles.iter().enumerate() {
                if !role.is_debater() {
                    prop_assert!(lineup.kept.contains(&i), "agent {} ({:?}) dropped", i, role);
                }
            }
            let kept_debaters: Vec<usize> =
                lineup.kept.iter().copied().filter(|&i| roles[i].is_debater()).collect();
            let first_debaters: Vec<usize> =
                (0..roles.len()).filter(|&i| roles[i].is_debater()).take(runs).collect();
            prop_assert_eq!(kept_debaters, first_debaters);
            let team: Vec<usize> = (0..roles.len()).collect();
            prop_assert_eq!(lineup.keep(team), lineup.kept.clone());
        }
    }
}
