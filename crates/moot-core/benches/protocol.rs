//! Protocol planning, in rounds planned per second: `Protocol::next` on a transcript whose
//! earlier rounds are filled in, planning the debate's last round (every call's messages,
//! peers, masks, orderings and notes), as the engine asks before each round and on resume.
//!
//! ```sh
//! cargo bench -p moot-core --bench protocol
//! cargo bench -p moot-core --bench protocol -- plan/5-agents/madc   # one protocol
//! ```
//!
//! Each group is one team size: 5 agents for every protocol; 25 for `som` and the two
//! protocols whose planning compares every pair of agents' answers (MADC, S2-MAD). Debates have
//! two debate rounds after round 0, except SVR-MAD, whose iterations are extra calls. The
//! transcript is made by driving the protocol to its end with scripted responses
//! (chain-of-thought texts of a few hundred bytes, judges' labels, challenge answers); the bench
//! times the last step on the transcript just before it. The baseline of every group is `som`,
//! the plainest round table (all-to-all, the history of the conversation); the others are read
//! as ratios to it.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use moot_core::answer::AnswerKind;
use moot_core::chat::LogprobSummary;
use moot_core::debate::{DebateSpec, Outcome, Slot, Transcript};
use moot_core::protocol::{build_protocol, PlannedCall, Protocol, ProtocolOptions, Step};

const QUESTION: &str = "A warehouse packs 17 boxes of screws on each of its shelves. \
    Each shelf is restocked once a day, and the warehouse has 24 shelves in its east wing. \
    How many boxes of screws does the east wing hold after a restock?";

/// Debate rounds after round 0 for the round-table protocols.
const ROUNDS: usize = 2;

/// The protocols timed with 5 agents, `som` (the baseline) first.
const FIVE: &[&str] = &[
    "som",
    "free-mad-n",
    "mad-m2",
    "madc",
    "sparse",
    "s2-mad",
    "svr-mad",
];

/// The protocols timed with 25 agents: the baseline, and those whose planning reads every
/// pair of agents (MADC's path consistency, S2-MAD's agreement pruning).
const TWENTY_FIVE: &[&str] = &["som", "madc", "s2-mad"];

/// The answer agent `agent` holds in `round`: a split round 0 that mostly converges on 408,
/// with a dissenting 418 that moves around the team, so no protocol runs out of disagreement.
fn held(round: usize, agent: usize) -> &'static str {
    if round == 0 {
        ["408", "418", "408", "400", "408"][agent % 5]
    } else if (agent + round) % 4 == 1 {
        "418"
    } else {
        "408"
    }
}

/// A chain-of-thought response in the style of a small instruct model, ending in `answer`.
fn response_text(round: usize, answer: &str) -> String {
    if round == 0 {
        format!(
            "Each shelf holds 17 boxes and there are 24 shelves, so we multiply.\n\n\
             17 × 20 = 340 and 17 × 4 = 68, so 17 × 24 = 340 + 68 = 408 if the partial \
             products are right. Checking another way: 24 × 17 = 240 + 168 = 408.\n\n\
             The restock fills every shelf, so the east wing holds this many boxes.\n\n\
             Final answer: {answer}"
        )
    } else {
        format!(
            "I compared my solution with the other agents'. One of them computed 17 × 4 as 78, \
             which gives 418; 17 × 4 is 68, so that step is wrong. Another multiplied 17 by \
             23 shelves instead of 24. Recomputing: 17 × 24 = 17 × 25 − 17 = 408.\n\n\
             Weighing the arguments rather than the number of agents, I settle on my answer.\n\n\
             Final answer: {answer}"
        )
    }
}

/// Round-0 token statistics: agent 1 (holding 418 at first) is the most confident, so SVR-MAD
/// challenges a wrong receiver first and has to move on.
fn logprobs(agent: usize) -> LogprobSummary {
    let min = if agent == 1 {
        -0.2
    } else {
        -1.0 - 0.3 * agent as f64
    };
    LogprobSummary {
        tokens: 120,
        mean: -0.25,
        min,
        perplexity: 0.25f64.exp(),
    }
}

/// The scripted outcome of one planned call.
fn outcome(spec: &DebateSpec, t: &Transcript, call: &PlannedCall) -> Outcome {
    if let Some(reason) = call.skipped() {
        return Outcome::Skipped {
            reason: reason.to_string(),
        };
    }
    let text = match call.slot {
        Slot::Answer => response_text(call.round, held(call.round, call.agent)),
        // MAD-M²: a judge accepts the memories that hold 408.
        Slot::Judge(author) => {
            let holds_408 = t
                .effective(call.round, author)
                .and_then(Outcome::answer)
                .is_some_and(|a| a.canonical() == "408");
            let label = if holds_408 { "YES" } else { "NO" };
            format!("The multiplication checks out as far as I can tell.\n<label>{label}</label>")
        }
        // SVR-MAD: a receiver holding 408 keeps it; one holding another answer yields.
        Slot::Challenge(_) => response_text(1, "408"),
    };
    let logprobs = (call.round == 0 && call.slot == Slot::Answer).then(|| logprobs(call.agent));
    Outcome::Responded {
        answer: spec.extract(&text),
        text,
        logprobs,
    }
}

/// Drives `protocol` to its end and returns the transcript just before its last step.
fn before_last_step(protocol: &dyn Protocol, spec: &DebateSpec) -> Transcript {
    let mut t = Transcript::new(spec.agents.len(), spec.rounds);
    let mut before = t.clone();
    loop {
        let Step::Round { calls, .. } = protocol.next(spec, &t) else {
            return before;
        };
        before = t.clone();
        for call in &calls {
            let (key, o) = (call.key(), outcome(spec, &t, call));
            assert!(t.set_call(key, o), "{key:?} outside the debate");
        }
    }
}

fn planning(c: &mut Criterion) {
    for (agents, names) in [(5, FIVE), (25, TWENTY_FIVE)] {
        let mut group = c.benchmark_group(format!("plan/{agents}-agents"));
        group.throughput(Throughput::Elements(1));
        for &name in names {
            let protocol = build_protocol(name, &ProtocolOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (agents, rounds) = protocol.shape(agents, ROUNDS);
            let spec = DebateSpec::with_agents(QUESTION, AnswerKind::Numeric, agents, rounds, 7);
            protocol
                .validate(&spec)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let t = before_last_step(&*protocol, &spec);
            let Step::Round { calls, .. } = protocol.next(&spec, &t) else {
                panic!("{name} has no step to time");
            };
            assert!(!calls.is_empty(), "{name} plans no call on its last step");
            group.bench_function(name, |b| {
                b.iter(|| black_box(protocol.next(black_box(&spec), black_box(&t))))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::quick();
    targets = planning
}
criterion_main!(benches);
