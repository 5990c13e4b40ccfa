//! Decision rules, in trajectories decided per second: every rule of `RULES` on the same batch
//! of debates, as `moot decide` and the bench runner re-decide stored runs.
//!
//! ```sh
//! cargo bench -p moot-core --bench decision
//! cargo bench -p moot-core --bench decision -- numeric-50x5   # one group
//! ```
//!
//! Each group is one batch of 64 trajectories of one shape (agents × rounds, round 0 included)
//! and answer kind: `numeric-5x3` (a typical debate), `numeric-50x5` (a large team) and
//! `math-5x3` (LaTeX answers, whose equivalence evaluates both sides). The baseline of every
//! group is `majority-last`, the simplest rule: one pass over the last round. The others are read
//! as ratios to it. Rules get the evidence of a round-table run (no challenges, no early stop),
//! so `svr` takes its fallback vote and `sid-et` defers to majority-last.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use moot_core::answer::{Answer, AnswerKind, ExtractContext};
use moot_core::decision::{DecisionConfig, Evidence, RULES};
use moot_core::trajectory::{Cell, Trajectory};

/// Trajectories per batch: enough debates that one odd trajectory does not dominate.
const BATCH: usize = 64;

/// A batch of debates: its name, shape and the answers agents give.
struct Batch {
    name: &'static str,
    kind: AnswerKind,
    agents: usize,
    rounds: usize,
    /// The gold answer first, then wrong answers agents commonly give; math answers include
    /// equivalent spellings so that equivalence has to evaluate them.
    answers: &'static [&'static str],
}

const BATCHES: &[Batch] = &[
    Batch {
        name: "numeric-5x3",
        kind: AnswerKind::Numeric,
        agents: 5,
        rounds: 3,
        answers: &["408", "418", "400", "398", "4080", "24"],
    },
    Batch {
        name: "numeric-50x5",
        kind: AnswerKind::Numeric,
        agents: 50,
        rounds: 5,
        answers: &["408", "418", "400", "398", "4080", "24"],
    },
    Batch {
        name: "math-5x3",
        kind: AnswerKind::Math,
        agents: 5,
        rounds: 3,
        answers: &[
            r"\frac{14}{3}",
            r"\dfrac{28}{6}",
            r"4\frac{2}{3}",
            r"\frac{7}{3}",
            r"\sqrt{2}",
            r"\left( 3, \frac{\pi}{2} \right)",
        ],
    },
];

/// splitmix64: a small deterministic stream, so every run decides the same trajectories.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Debates that converge as real ones do: each trajectory has an answer the team drifts to
/// (the gold one three times in four); in round 0 half the agents hold it and the others
/// scatter; later an agent keeps its answer (60%), moves to the drift answer (30%) or to another
/// (10%). 4% of responses have no readable answer and 2% of cells are missing (timeouts).
fn batch(b: &Batch) -> Vec<Trajectory> {
    let ctx = ExtractContext::default();
    let pool: Vec<Answer> = b
        .answers
        .iter()
        .map(|s| Answer::parse(b.kind, s, &ctx).expect("a readable answer"))
        .collect();
    let mut draws = Draws(0x6d6f_6f74);
    (0..BATCH)
        .map(|_| {
            let drift = if draws.unit() < 0.75 {
                0
            } else {
                1 + draws.below(pool.len() - 1)
            };
            let rows = (0..b.agents)
                .map(|_| {
                    let mut held = if draws.unit() < 0.5 {
                        drift
                    } else {
                        draws.below(pool.len())
                    };
                    (0..b.rounds)
                        .map(|round| {
                            if round > 0 {
                                let u = draws.unit();
                                if u >= 0.9 {
                                    held = draws.below(pool.len());
                                } else if u >= 0.6 {
                                    held = drift;
                                }
                            }
                            let u = draws.unit();
                            if u < 0.02 {
                                Cell::Missing
                            } else if u < 0.06 {
                                Cell::Answered(None)
                            } else {
                                Cell::Answered(Some(pool[held].clone()))
                            }
                        })
                        .collect()
                })
                .collect();
            Trajectory::new(rows).expect("a rectangular trajectory")
        })
        .collect()
}

fn decision_rules(c: &mut Criterion) {
    let config = DecisionConfig::default();
    let evidence = Evidence::default();
    for b in BATCHES {
        let trajectories = batch(b);
        let mut group = c.benchmark_group(format!("decide/{}", b.name));
        group.throughput(Throughput::Elements(trajectories.len() as u64));
        // RULES lists majority-last, the baseline, first.
        for entry in RULES {
            let rule = (entry.build)(&config);
            group.bench_function(entry.name, |bench| {
                bench.iter(|| {
                    for t in &trajectories {
                        black_box(rule.decide_with(black_box(t), &evidence));
                    }
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::quick();
    targets = decision_rules
}
criterion_main!(benches);
