//! Who may read whom (see docs/architecture.md, Protocols; freemad's topologies).
//!
//! A topology maps each agent to the peers whose previous-round responses it may read. It never
//! lists the agent itself. Random choices (`k-reviewers`, `groups`) are drawn once per debate
//! from the debate's seed, so the graph is fixed for the whole debate and the same on resume.

use std::fmt;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A communication topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Topology {
    /// Everyone reads everyone.
    #[default]
    AllToAll,
    /// Each agent reads its two neighbours on a ring (one when there are two agents).
    Ring,
    /// Each agent reads `k` peers drawn at random (seeded) once per debate.
    KReviewers { k: usize },
    /// The hub reads everyone; every other agent reads only the hub.
    Star { hub: usize },
    /// Agents are split at random (seeded) into `groups` groups of near-equal size; each reads
    /// only its own group.
    Groups { groups: usize },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("k-reviewers needs 1 <= k <= agents - 1 (k = {k}, {})", crate::text::plural(*.agents, "agent"))]
    BadK { k: usize, agents: usize },
    #[error("star hub {hub} is not an agent (agents are numbered 0..{agents})")]
    BadHub { hub: usize, agents: usize },
    #[error("groups needs 1 <= groups <= agents (groups = {groups}, {})", crate::text::plural(*.agents, "agent"))]
    BadGroups { groups: usize, agents: usize },
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::AllToAll => f.write_str("all-to-all"),
            Topology::Ring => f.write_str("ring"),
            Topology::KReviewers { k } => write!(f, "k-reviewers (k = {k})"),
            Topology::Star { hub } => write!(f, "star (hub = agent {})", hub + 1),
            Topology::Groups { groups } => write!(f, "groups ({groups})"),
        }
    }
}

impl Topology {
    /// Checks the topology's parameters against the number of agents.
    pub fn validate(&self, agents: usize) -> Result<(), TopologyError> {
        match *self {
            Topology::KReviewers { k } if k == 0 || k >= agents.max(1) => {
                Err(TopologyError::BadK { k, agents })
            }
            Topology::Star { hub } if hub >= agents => Err(TopologyError::BadHub { hub, agents }),
            Topology::Groups { groups } if groups == 0 || groups > agents => {
                Err(TopologyError::BadGroups { groups, agents })
            }
            _ => Ok(()),
        }
    }

    /// The peers `agent` reads, in agent order; never `agent` itself.
    pub fn peers(&self, agent: usize, agents: usize, seed: u64) -> Vec<usize> {
        let others = (0..agents).filter(|&p| p != agent);
        match *self {
            Topology::AllToAll => others.collect(),
            Topology::Ring => {
                if agents < 2 {
                    return vec![];
                }
                let mut v = vec![(agent + agents - 1) % agents, (agent + 1) % agents];
                v.sort_unstable();
                v.dedup();
                v.retain(|&p| p != agent);
                v
            }
            Topology::KReviewers { k } => {
                let mut pool: Vec<usize> = others.collect();
                let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, 0x6b72_6576, agent as u64));
                pool.shuffle(&mut rng);
                let mut v: Vec<usize> = pool.into_iter().take(k).collect();
                v.sort_unstable();
                v
            }
            Topology::Star { hub } => {
                if agent == hub {
                    others.collect()
                } else if hub < agents {
                    vec![hub]
                } else {
                    vec![]
                }
            }
            Topology::Groups { groups } => {
                let of = group_of(agents, groups, seed);
                others.filter(|&p| of[p] == of[agent]).collect()
            }
        }
    }
}

/// Each agent's group when `agents` are split at random (seeded) into `groups` groups whose
/// sizes differ by at most one.
pub fn group_of(agents: usize, groups: usize, seed: u64) -> Vec<usize> {
    let groups = groups.clamp(1, agents.max(1));
    let mut order: Vec<usize> = (0..agents).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, 0x6772_6f75, 0));
    order.shuffle(&mut rng);
    let mut of = vec![0; agents];
    for (position, &agent) in order.iter().enumerate() {
        of[agent] = position % groups;
    }
    of
}

/// A 64-bit mix of a seed with a purpose tag and an index (splitmix64 finaliser), so each use
/// of the debate seed draws from its own stream.
pub(crate) fn mix(seed: u64, tag: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(tag.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(index.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) from a mixed seed.
pub(crate) fn unit(seed: u64, tag: u64, index: u64) -> f64 {
    (mix(seed, tag, index) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shapes() {
        assert_eq!(Topology::AllToAll.peers(1, 4, 0), vec![0, 2, 3]);
        assert_eq!(Topology::Ring.peers(0, 4, 0), vec![1, 3]);
        assert_eq!(Topology::Ring.peers(0, 2, 0), vec![1]);
        assert_eq!(Topology::Star { hub: 2 }.peers(2, 4, 0), vec![0, 1, 3]);
        assert_eq!(Topology::Star { hub: 2 }.peers(0, 4, 0), vec![2]);
        let g = group_of(6, 2, 7);
        assert_eq!(g.iter().filter(|&&x| x == 0).count(), 3);
        assert!(Topology::KReviewers { k: 3 }.validate(3).is_err());
        assert!(Topology::Groups { groups: 0 }.validate(3).is_err());
        assert!(Topology::Star { hub: 3 }.validate(3).is_err());
    }

    fn topologies() -> impl Strategy<Value = (Topology, usize)> {
        (2usize..12).prop_flat_map(|n| {
            prop_oneof![
                Just(Topology::AllToAll),
                Just(Topology::Ring),
                (1..n).prop_map(|k| Topology::KReviewers { k }),
                (0..n).prop_map(|hub| Topology::Star { hub }),
                (1..=n).prop_map(|groups| Topology::Groups { groups }),
            ]
            .prop_map(move |t| (t, n))
        })
    }

    proptest! {
        #[test]
        fn never_self_never_duplicate_and_k_exact((t, n) in topologies(), seed in any::<u64>()) {
            prop_assert!(t.validate(n).is_ok());
            for a in 0..n {
                let peers = t.peers(a, n, seed);
                prop_assert!(!peers.contains(&a), "{t} shows agent {a} itself");
                let mut sorted = peers.clone();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), peers.len());
                prop_assert!(peers.iter().all(|&p| p < n));
                if let Topology::KReviewers { k } = t {
                    prop_assert_eq!(peers.len(), k);
                }
                prop_assert_eq!(&peers, &t.peers(a, n, seed), "seeded: same graph twice");
            }
        }
    }
}
