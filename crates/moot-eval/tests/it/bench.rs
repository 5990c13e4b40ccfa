//! A benchmark of simulated agents through the real engine and store: results per item, and a
//! benchmark interrupted part-way and run again under its name ends exactly where an
//! uninterrupted one does, without repeating any finished debate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;
use moot_core::debate::AgentSpec;
use moot_core::decision::DecisionConfig;
use moot_core::protocol::{build_protocol, Protocol};
use moot_engine::{EngineAgent, EngineConfig};
use moot_eval::bench::{
    item_seed, load_bench, run_bench, AgentSource, BenchError, BenchPlan, ItemResult,
};
use moot_eval::{AnswerKind, Item};
use moot_store::{MemoryStore, Store};

fn items(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| Item {
            id: format!("toy/{i}"),
            question: format!("What is {i} * 17?"),
            choices: vec![],
            gold: (i * 17).to_string(),
            kind: AnswerKind::Numeric,
            tests: None,
            passage: None,
        })
        .collect()
}

/// Five simulated agents per item; fails for the item named in `fail_on` (an interruption).
/// `calls` counts every request that reaches a model.
struct Sims {
    fail_on: Option<String>,
    calls: Arc<AtomicUsize>,
}

impl Sims {
    fn new(fail_on: Option<&str>) -> Sims {
        Sims {
            fail_on: fail_on.map(str::to_string),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A model that counts the requests it gets.
#[derive(Debug)]
struct Counting {
    inner: SimModel,
    calls: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl LanguageModel for Counting {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn capabilities(&self) -> moot_backends::Capabilities {
        self.inner.capabilities()
    }

    async fn complete(
        &self,
        request: moot_backends::CompletionRequest,
    ) -> Result<moot_backends::Completion, moot_backends::BackendError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.complete(request).await
    }
}

impl AgentSource for Sims {
    fn agents(&self, item: &Item) -> Result<(Vec<AgentSpec>, Vec<EngineAgent>), BenchError> {
        if self.fail_on.as_deref() == Some(item.id.as_str()) {
            return Err(BenchError::Config("interrupted".into()));
        }
        let seed = item_seed(1, &item.id);
        let specs = (0..5).map(|i| AgentSpec::named(format!("s{i}"))).collect();
        let agents = (0..5)
            .map(|i| EngineAgent {
                model: Arc::new(Counting {
                    inner: SimModel::new(
                        SimAgent {
                            accuracy: 0.6,
                            ..SimAgent::default()
                        },
                        item.gold.clone(),
                        item.kind,
                        seed.wrapping_add(i),
                    ),
                    calls: self.calls.clone(),
                }) as Arc<dyn LanguageModel>,
                params: SamplingParams::default(),
            })
            .collect();
        Ok((specs, agents))
    }
}

fn protocol(name: &str, _item: &Item) -> Result<Box<dyn Protocol>, BenchError> {
    build_protocol(name, &Default::default()).map_err(|e| BenchError::Config(e.to_string()))
}

fn plan(name: &str, items: Vec<Item>, concurrency: usize) -> BenchPlan<'static> {
    BenchPlan {
        name: name.into(),
        dataset: "toy".into(),
        items,
        left_out: None,
        protocols: vec!["som".into(), "svr-mad".into()],
        limit: None,
        seed: 1,
        rounds: 1,
        layout: Default::default(),
        concurrency,
        engine: EngineConfig {
            soft_timeout: Duration::from_secs(60),
            hard_timeout: Duration::from_secs(120),
            min_agents: 5,
            max_concurrent_calls: 8,
            cache: false,
            cache_max_entries: None,
            budget: Default::default(),
            reask: true,
        },
        decision: Default::default(),
        rule: None,
        config: serde_json::json!({}),
        redactor: Default::default(),
        protocol: &protocol,
        runner: &*RUNNER,
    }
}

/// The engine's runner: the default redactor, no sandbox, no log.
static RUNNER: std::sync::LazyLock<moot_engine::Surroundings> =
    std::sync::LazyLock::new(moot_engine::Surroundings::default);

/// What a report would read of each result.
fn summary(results: &[ItemResult]) -> Vec<(String, String, Option<String>, u64, u64)> {
    results
        .iter()
        .map(|r| {
            let answer = r
                .result
                .decision()
                .and_then(|d| d.answer.as_ref())
                .map(|a| a.canonical().to_string());
            let usage = r.result.usage();
            (
                r.protocol.clone(),
                r.item_id.clone(),
                answer,
                usage.output_tokens,
                r.result.ncomm(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_item_under_every_protocol_is_a_stored_run() {
    let store = MemoryStore::default();
    let source = Sims::new(None);
    let data = items(8);
    let mut seen = 0;
    let results = run_bench(&plan("b", data.clone(), 3), &store, &source, |_| seen += 1)
        .await
        .unwrap();
    assert_eq!((results.len(), seen), (16, 16));
    assert!(results[..8].iter().all(|r| r.protocol == "som"));
    assert_eq!(
        results[..8].iter().map(|r| r.position).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    let right = results
        .iter()
        .zip(data.iter().chain(data.iter()))
        .filter(|(r, item)| r.correct(item))
        .count();
    assert!(right >= 8, "{right} of 16 right with 0.6-accurate agents");
    let links = store.bench_items("b").await.unwrap();
    assert_eq!(links.len(), 16);
    assert_eq!(links[0].run_id, "b/som/toy/0");
    assert_eq!(
        store.run("b/svr-mad/toy/7").await.unwrap().protocol,
        "svr-mad"
    );
}

#[tokio::test]
async fn an_interrupted_benchmark_resumes_to_the_uninterrupted_result() {
    let data = items(8);
    let reference_store = MemoryStore::default();
    let whole = Sims::new(None);
    let reference = run_bench(
        &plan("whole", data.clone(), 1),
        &reference_store,
        &whole,
        |_| {},
    )
    .await
    .unwrap();

    let store = MemoryStore::default();
    let first = Sims::new(Some("toy/5"));
    let interrupted = run_bench(&plan("parts", data.clone(), 1), &store, &first, |_| {}).await;
    assert!(interrupted.is_err());
    let done_before = store.bench_items("parts").await.unwrap().len();
    assert_eq!(
        done_before, 10,
        "items 0–4 ran under both protocols before the interruption"
    );

    let again = Sims::new(None);
    let resumed = run_bench(&plan("parts", data.clone(), 1), &store, &again, |_| {})
        .await
        .unwrap();
    assert_eq!(summary(&resumed), summary(&reference));
    assert_eq!(resumed.iter().filter(|r| r.reused).count(), 10);
    assert_eq!(
        first.calls() + again.calls(),
        whole.calls(),
        "no call was made twice"
    );
    // A finished benchmark run again asks no model anything: every result is read back.
    let idle = Sims::new(None);
    let third = run_bench(&plan("parts", data.clone(), 1), &store, &idle, |_| {})
        .await
        .unwrap();
    assert!(third.iter().all(|r| r.reused));
    assert_eq!(summary(&third), summary(&reference));
    assert_eq!(idle.calls(), 0);
    // Read back without running: the same debates, items and decisions.
    let rebuild = |run: &moot_store::RunRecord| {
        build_protocol(
            &run.protocol,
            &moot_core::protocol::ProtocolOptions::default(),
        )
        .ok()
    };
    let loaded = load_bench(&store, "parts", &rebuild, &DecisionConfig::default())
        .await
        .unwrap();
    assert_eq!(loaded.unfinished, 0);
    assert_eq!(summary(&loaded.results), summary(&reference));
    assert_eq!(
        loaded.items.iter().map(|i| &i.id).collect::<Vec<_>>(),
        data.iter().map(|i| &i.id).collect::<Vec<_>>()
    );
    assert_eq!(loaded.items[3].gold, data[3].gold);
    assert_eq!(loaded.record.protocols, ["som", "svr-mad"]);
}

#[tokio::test]
async fn a_name_is_not_reused_for_another_benchmark() {
    let store = MemoryStore::default();
    let source = Sims::new(None);
    run_bench(&plan("b", items(2), 2), &store, &source, |_| {})
        .await
        .unwrap();
    let mut other = plan("b", items(2), 2);
    other.protocols = vec!["cot".into()];
    let err = run_bench(&other, &store, &source, |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}

#[tokio::test]
async fn summaries_agree_with_the_debates() {
    use moot_eval::protocol_totals::{paired, summarize};
    let store = MemoryStore::default();
    let data = items(12);
    let results = run_bench(
        &plan("s", data.clone(), 4),
        &store,
        &Sims::new(None),
        |_| {},
    )
    .await
    .unwrap();
    let summaries = summarize(&results, &data);
    assert_eq!(summaries.len(), 2);
    let (som, svr) = (&summaries[0], &summaries[1]);
    assert_eq!(
        (som.protocol.as_str(), svr.protocol.as_str()),
        ("som", "svr-mad")
    );
    assert_eq!(som.items, 12);
    // The chosen rule's accuracy is the protocol's; every rule is there.
    let rule = |s: &moot_eval::protocol_totals::ProtocolSummary, name: &str| {
        s.rules.iter().find(|r| r.rule == name).map(|r| r.correct)
    };
    assert_eq!(rule(som, "majority-last"), Some(som.correct));
    assert_eq!(rule(svr, "svr"), Some(svr.correct));
    assert_eq!(som.rules.len(), moot_core::RULES.len());
    // som has rounds 0 and 1; svr-mad only round 0 in its grid.
    assert_eq!(som.round_accuracy.len(), 2);
    assert_eq!(svr.round_accuracy.len(), 1);
    assert!(som.round_accuracy.iter().all(|a| (0.0..=1.0).contains(a)));
    // Round 1's plurality is majority-last's answer.
    assert!((som.round_accuracy[1] - som.accuracy).abs() < 1e-12);
    // Both protocols start from the same round-0 answers for an item (same seeds and prompt).
    assert!((som.round_accuracy[0] - svr.round_accuracy[0]).abs() < 1e-12);
    // Five agents: entropy lies between 0 and log2(5) bits.
    assert!(som
        .round_entropy
        .iter()
        .all(|&e| (0.0..=5f64.log2() + 1e-9).contains(&e)));
    let p = paired(&results, &data, "som", "svr-mad");
    assert_eq!(p.both_correct + p.only_a + p.only_b + p.both_wrong, 12);
    assert_eq!(p.both_correct + p.only_a, som.correct);
    assert_eq!(p.both_correct + p.only_b, svr.correct);
    assert!((0.0..=1.0).contains(&p.p_value));
}
