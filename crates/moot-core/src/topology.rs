//! Who may read whom (see docs/architecture.md, Protocols; freemad's topologies).
//!
//! A topology maps each agent to the peers whose previous-round responses it may read. It never
//! lists the agent itself. Random choices (`k-reviewers`, `groups`) are drawn once per debate
//! from the debate's seed, so the graph is fixed for the whole debate and the same on resume.
//!
//! Two topologies are freemad's own graphs, for runs of freemad configurations:
//! `next-on-ring` (each agent reads only the next one) and `freemad-k-reviewers` (the peers
//! CPython's `random.Random(seed).sample` draws, seeded per agent from its id). The second lists
//! its peers in the order drawn, which is the order freemad numbers them in (`Peer #1`, …).

use std::fmt;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cpython_random;

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
    /// freemad's `ring`: each agent reads only the next agent, `(i + 1) mod n`; with two agents
    /// each reads the other, alone an agent reads no one.
    NextOnRing,
    /// freemad's `k_reviewers`: each agent reads `k` of the others (in agent order) drawn with
    /// CPython's `random.Random(s).sample(others, k)`, where `s` is the debate seed XOR the
    /// first 8 bytes (big-endian) of SHA-256 of the agent's id; all the others when
    /// `k` ≥ their number. Peers are listed in the order drawn.
    FreemadKReviewers { k: usize },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("k-reviewers needs 1 <= k <= agents - 1 (k = {k}, {})", crate::text::plural(*.agents, "agent"))]
    BadK { k: usize, agents: usize },
    #[error("star hub {hub} is not an agent (agents are numbered 0..{agents})")]
    BadHub { hub: usize, agents: usize },
    #[error("groups needs 1 <= groups <= agents (groups = {groups}, {})", crate::text::plural(*.agents, "agent"))]
    BadGroups { groups: usize, agents: usize },
    #[error("freemad-k-reviewers needs k >= 1 (a k of the agents' number or more gives each agent all the others)")]
    NoReviewers,
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::AllToAll => f.write_str("all-to-all"),
            Topology::Ring => f.write_str("ring"),
            Topology::KReviewers { k } => write!(f, "k-reviewers (k = {k})"),
            Topology::Star { hub } => write!(f, "star (hub = agent {})", hub + 1),
            Topology::Groups { groups } => write!(f, "groups ({groups})"),
            Topology::NextOnRing => f.write_str("ring (next agent only)"),
            Topology::FreemadKReviewers { k } => {
                write!(f, "k-reviewers as freemad draws them (k = {k})")
            }
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
            Topology::FreemadKReviewers { k: 0 } => Err(TopologyError::NoReviewers),
            _ => Ok(()),
        }
    }

    /// Whether the order of [`Self::peers`] is the topology's own (the order freemad numbers
    /// peers in) rather than agent order.
    pub fn orders_peers(&self) -> bool {
        matches!(self, Topology::FreemadKReviewers { .. })
    }

    /// The peers agent `agent` of the agents with ids `ids` reads (in agent order, but for
    /// [`Self::orders_peers`]); never `agent` itself. Only `freemad-k-reviewers` reads the ids.
    pub fn peers<S: AsRef<str>>(&self, agent: usize, ids: &[S], seed: u64) -> Vec<usize> {
        let agents = ids.len();
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
            Topology::NextOnRing => match agents {
                0 | 1 => vec![],
                2 => others.collect(),
                _ => vec![(agent + 1) % agents],
            },
            Topology::FreemadKReviewers { k } => {
                let pool: Vec<usize> = others.collect();
                if k >= pool.len() {
                    return pool;
                }
                let Some(id) = ids.get(agent) else {
                    return vec![];
                };
                let mut rng = cpython_random::Random::new(freemad_seed(seed, id.as_ref()));
                // k < the pool's size, so the sample cannot fail.
                rng.sample(&pool, k).unwrap_or_default()
            }
        }
    }
}

/// freemad's per-agent seed for `k_reviewers`: `seed` XOR the first 8 bytes of SHA-256 of the
/// agent id's UTF-8, read big-endian.
pub fn freemad_seed(seed: u64, id: &str) -> u64 {
    let digest = Sha256::digest(id.as_bytes());
    let mut salt = [0u8; 8];
    salt.copy_from_slice(&digest[..8]);
    seed ^ u64::from_be_bytes(salt)
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

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("a{i}")).collect()
    }

    #[test]
    fn shapes() {
        let four = ids(4);
        assert_eq!(Topology::AllToAll.peers(1, &four, 0), vec![0, 2, 3]);
        assert_eq!(Topology::Ring.peers(0, &four, 0), vec![1, 3]);
        assert_eq!(Topology::Ring.peers(0, &ids(2), 0), vec![1]);
        assert_eq!(Topology::Star { hub: 2 }.peers(2, &four, 0), vec![0, 1, 3]);
        assert_eq!(Topology::Star { hub: 2 }.peers(0, &four, 0), vec![2]);
        let g = group_of(6, 2, 7);
        assert_eq!(g.iter().filter(|&&x| x == 0).count(), 3);
        assert!(Topology::KReviewers { k: 3 }.validate(3).is_err());
        assert!(Topology::Groups { groups: 0 }.validate(3).is_err());
        assert!(Topology::Star { hub: 3 }.validate(3).is_err());
    }

    #[test]
    fn next_on_ring_is_freemads_ring() {
        let next = |n: usize| -> Vec<Vec<usize>> {
            let ids = ids(n);
            (0..n)
                .map(|a| Topology::NextOnRing.peers(a, &ids, 9))
                .collect()
        };
        assert_eq!(next(1), vec![Vec::<usize>::new()]);
        assert_eq!(next(2), vec![vec![1], vec![0]]);
        assert_eq!(next(3), vec![vec![1], vec![2], vec![0]]);
        assert_eq!(next(4), vec![vec![1], vec![2], vec![3], vec![0]]);
    }

    /// Each agent's peers by id, as freemad prints `assign_peers`.
    fn freemad_graph(k: usize, seed: u64, ids: &[&str]) -> Vec<Vec<String>> {
        let t = Topology::FreemadKReviewers { k };
        (0..ids.len())
            .map(|a| {
                t.peers(a, ids, seed)
                    .into_iter()
                    .map(|p| ids[p].to_string())
                    .collect()
            })
            .collect()
    }

    fn graph(expected: &[&[&str]]) -> Vec<Vec<String>> {
        expected
            .iter()
            .map(|peers| peers.iter().map(|p| p.to_string()).collect())
            .collect()
    }

    /// Expected graphs were printed by freemad 2.0.0's `KReviewers(k, seed).assign_peers(ids)`
    /// under CPython 3.11.7.
    #[test]
    fn freemad_k_reviewers_match_freemad() {
        assert_eq!(freemad_seed(12345, "a"), 14598278634844950003);
        assert_eq!(
            freemad_graph(2, 12345, &["a", "b", "c", "d", "e"]),
            graph(&[
                &["b", "c"],
                &["c", "d"],
                &["e", "d"],
                &["c", "b"],
                &["a", "b"]
            ])
        );
        assert_eq!(
            freemad_graph(1, 1, &["a", "b", "c"]),
            graph(&[&["c"], &["c"], &["a"]])
        );
        let five = ["a0", "a1", "a2", "a3", "a4"];
        assert_eq!(
            freemad_graph(2, 0, &five),
            graph(&[
                &["a4", "a1"],
                &["a0", "a3"],
                &["a4", "a0"],
                &["a2", "a4"],
                &["a2", "a3"]
            ])
        );
        assert_eq!(
            freemad_graph(1, 12345, &five),
            graph(&[&["a1"], &["a2"], &["a0"], &["a0"], &["a0"]])
        );
        assert_eq!(
            freemad_graph(2, 12345, &five),
            graph(&[
                &["a1", "a3"],
                &["a2", "a3"],
                &["a0", "a4"],
                &["a0", "a4"],
                &["a0", "a3"]
            ])
        );
        assert_eq!(
            freemad_graph(3, u64::MAX, &["x", "y", "zeta", "w", "v", "u"]),
            graph(&[
                &["zeta", "v", "u"],
                &["zeta", "v", "u"],
                &["y", "x", "v"],
                &["zeta", "x", "u"],
                &["x", "zeta", "w"],
                &["w", "zeta", "y"]
            ])
        );
        let thirty: Vec<String> = (0..30).map(|i| format!("agent-{i}")).collect();
        let t = Topology::FreemadKReviewers { k: 10 };
        let drawn: Vec<usize> = t.peers(3, &thirty, 7);
        assert_eq!(drawn, vec![25, 7, 12, 29, 23, 10, 15, 6, 22, 17]);
        // k at least the others' number: all of them, in agent order.
        assert_eq!(
            freemad_graph(5, 3, &["a", "b", "c"]),
            graph(&[&["b", "c"], &["a", "c"], &["a", "b"]])
        );
        assert_eq!(
            Topology::FreemadKReviewers { k: 0 }.validate(3),
            Err(TopologyError::NoReviewers)
        );
        assert!(Topology::FreemadKReviewers { k: 9 }.validate(3).is_ok());
        assert!(Topology::FreemadKReviewers { k: 1 }.orders_peers());
        assert!(!Topology::KReviewers { k: 1 }.orders_peers());
    }

    /// Stored runs name their topology by `kind`: the old names read as they always did.
    #[test]
    fn serialised_names_are_stable() {
        let cases = [
            (Topology::AllToAll, r#"{"kind":"all-to-all"}"#),
            (Topology::Ring, r#"{"kind":"ring"}"#),
            (
                Topology::KReviewers { k: 2 },
                r#"{"kind":"k-reviewers","k":2}"#,
            ),
            (Topology::Star { hub: 1 }, r#"{"kind":"star","hub":1}"#),
            (
                Topology::Groups { groups: 2 },
                r#"{"kind":"groups","groups":2}"#,
            ),
            (Topology::NextOnRing, r#"{"kind":"next-on-ring"}"#),
            (
                Topology::FreemadKReviewers { k: 2 },
                r#"{"kind":"freemad-k-reviewers","k":2}"#,
            ),
        ];
        for (t, json) in cases {
            assert_eq!(serde_json::to_string(&t).unwrap(), json);
            assert_eq!(serde_json::from_str::<Topology>(json).unwrap(), t);
        }
    }

    fn topologies() -> impl Strategy<Value = (Topology, usize)> {
        (2usize..12).prop_flat_map(|n| {
            prop_oneof![
                Just(Topology::AllToAll),
                Just(Topology::Ring),
                Just(Topology::NextOnRing),
                (1..n).prop_map(|k| Topology::KReviewers { k }),
                (1..n + 2).prop_map(|k| Topology::FreemadKReviewers { k }),
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
            let ids = ids(n);
            for a in 0..n {
                let peers = t.peers(a, &ids, seed);
                prop_assert!(!peers.contains(&a), "{t} shows agent {a} itself");
                let mut sorted = peers.clone();
                sorted.sort_unstable();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), peers.len());
                prop_assert!(peers.iter().all(|&p| p < n));
                match t {
                    Topology::KReviewers { k } => prop_assert_eq!(peers.len(), k),
                    Topology::FreemadKReviewers { k } => prop_assert_eq!(peers.len(), k.min(n - 1)),
                    Topology::NextOnRing => prop_assert_eq!(peers.len(), 1),
                    _ => {}
                }
                prop_assert_eq!(&peers, &t.peers(a, &ids, seed), "seeded: same graph twice");
            }
        }

    }
}
