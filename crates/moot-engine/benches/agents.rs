//! How a debate's cost grows with its number of agents, when its communication does not: `som`
//! with no debate round (round 0 only: N independent calls) and `sparse` on a ring with one
//! debate round (each agent reads 2 peers). Both make O(N) calls with O(N) prompt text in
//! total, so time and memory should grow linearly in N.
//!
//! Each configuration runs once per size on simulated agents (`moot_backends::sim`) and the
//! in-memory store, through the real engine (`Debate::run`: planning, prompts, calls, the
//! transcript, every decision rule). It prints the wall time and peak heap (counted by this
//! benchmark's allocator) per size, and each size's cost per agent divided by the smallest
//! size's, measured in the same run: 1.0 is linear, 4.0 at 4× the agents is quadratic.
//!
//! Settings: `MOOT_BENCH_AGENTS` (default `1000,4000,16000`).
//! Run: `cargo bench -p moot-engine --bench agents`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::LanguageModel;
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::DebateSpec;
use moot_core::decision::DecisionConfig;
use moot_core::protocol::build_protocol;
use moot_engine::{DebateSetup, EngineAgent, EngineConfig, NoObserver};
use moot_store::MemoryStore;

/// The system allocator, counting the bytes live now and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            if new_size >= layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One configuration: a protocol and the debate rounds it runs.
struct Case {
    protocol: &'static str,
    rounds: usize,
}

const CASES: [Case; 2] = [
    Case {
        protocol: "som",
        rounds: 0,
    },
    Case {
        protocol: "sparse",
        rounds: 1,
    },
];

fn sizes() -> Vec<usize> {
    std::env::var("MOOT_BENCH_AGENTS")
        .unwrap_or_else(|_| "1000,4000,16000".into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("MOOT_BENCH_AGENTS: {n:?} is not a number"))
        })
        .collect()
}

fn agents(n: usize) -> Vec<EngineAgent> {
    (0..n)
        .map(|i| {
            let sim = SimAgent {
                accuracy: 0.6,
                distractors: vec!["418".into(), "398".into()],
                ..SimAgent::default()
            };
            EngineAgent {
                model: Arc::new(SimModel::new(sim, "408", AnswerKind::Numeric, i as u64))
                    as Arc<dyn LanguageModel>,
                params: SamplingParams::default(),
            }
        })
        .collect()
}

fn config(n: usize) -> EngineConfig {
    EngineConfig {
        soft_timeout: Duration::from_secs(3600),
        hard_timeout: Duration::from_secs(3600),
        min_agents: n,
        max_concurrent_calls: n,
        cache: false,
        cache_max_entries: None,
        budget: Default::default(),
        reask: false,
    }
}

/// Runs one debate; returns its wall time, the heap it peaked at above what was live before,
/// and its number of calls.
fn run(rt: &tokio::runtime::Runtime, case: &Case, n: usize) -> (Duration, usize, usize) {
    let store = MemoryStore::default();
    let spec = DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, n, case.rounds, 7);
    let protocol = build_protocol(case.protocol, &Default::default()).expect("protocol");
    let team = agents(n);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let started = Instant::now();
    let calls = rt.block_on(async {
        let mut debate = DebateSetup {
            run_id: "scale".into(),
            spec,
            protocol,
            agents: team,
            config: config(n),
            rule: Some("majority-last"),
            store: &store,
        }
        .build()
        .expect("debate");
        debate.create(serde_json::json!({})).await.expect("create");
        let result = debate
            .run(&DecisionConfig::default(), &NoObserver)
            .await
            .expect("run");
        assert!(
            result.records.iter().all(|r| r.answer.is_some()),
            "every simulated call answered"
        );
        result.records.len()
    });
    let took = started.elapsed();
    (took, PEAK.load(Ordering::Relaxed) - base, calls)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let sizes = sizes();
    println!(
        "{:<8} {:>6} {:>7} {:>9} {:>10} {:>11} {:>12} {:>12}",
        "protocol", "rounds", "agents", "calls", "wall ms", "peak MB", "time/agent×", "heap/agent×"
    );
    for case in &CASES {
        let mut first: Option<(f64, f64)> = None;
        for &n in &sizes {
            let (took, peak, calls) = run(&rt, case, n);
            let expected = n * (case.rounds + 1);
            assert_eq!(calls, expected, "{} calls for {n} agents", case.protocol);
            let per_agent = (took.as_secs_f64() / n as f64, peak as f64 / n as f64);
            let (t0, m0) = *first.get_or_insert(per_agent);
            println!(
                "{:<8} {:>6} {:>7} {:>9} {:>10.0} {:>11.1} {:>12.2} {:>12.2}",
                case.protocol,
                case.rounds,
                n,
                calls,
                took.as_secs_f64() * 1000.0,
                peak as f64 / 1e6,
                per_agent.0 / t0,
                per_agent.1 / m0
            );
        }
    }
}
