//! Topology building, in agents per second: every agent's peer list (`Topology::peers`) for a
//! team of 10, 100 and 1000 agents, the graph a round-table protocol reads each round.
//!
//! ```sh
//! cargo bench -p moot-core --bench topology
//! cargo bench -p moot-core --bench topology -- topology/1000   # one team size
//! ```
//!
//! Each group is one team size. The baseline of every group is `all-to-all`, which only lists
//! the other agents; the others are read as ratios to it. `k-reviewers` has k = 3 (or fewer
//! on small teams), `star` has agent 0 as hub and `groups` splits the team into groups of
//! about five, as GroupDebate does.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use moot_core::topology::Topology;

const SIZES: [usize; 3] = [10, 100, 1000];

const SEED: u64 = 7;

/// The topologies timed on `agents` agents, the baseline first.
fn topologies(agents: usize) -> [(&'static str, Topology); 5] {
    [
        ("all-to-all", Topology::AllToAll),
        ("ring", Topology::Ring),
        (
            "k-reviewers",
            Topology::KReviewers {
                k: 3.min(agents - 1),
            },
        ),
        ("star", Topology::Star { hub: 0 }),
        (
            "groups",
            Topology::Groups {
                groups: (agents / 5).max(1),
            },
        ),
    ]
}

fn building(c: &mut Criterion) {
    for agents in SIZES {
        let ids: Vec<String> = (0..agents).map(|i| format!("a{i}")).collect();
        let mut group = c.benchmark_group(format!("topology/{agents}"));
        group.throughput(Throughput::Elements(agents as u64));
        for (name, topology) in topologies(agents) {
            topology
                .validate(agents)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            group.bench_function(name, |b| {
                b.iter(|| {
                    let graph: Vec<Vec<usize>> = (0..agents)
                        .map(|agent| black_box(topology).peers(agent, &ids, SEED))
                        .collect();
                    black_box(graph)
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::quick();
    targets = building
}
criterion_main!(benches);
