//! Single flight (issue 44): debates asking the same request at the same time, on one store
//! with the request cache on, make one model call; the others wait for it and record its answer
//! as a cache hit. A leader that fails or is cancelled leaves the call to one of its followers.
//!
//! Every debate here runs in the test's own task (`tokio::join!`, current-thread runtime), so
//! the order is set by events: a debate starts once the model holds the calls of the one before
//! it, and the model's gate opens (or a debate is dropped) when a later debate's round starts.
//! A round goes from its start to joining its flights without waiting on anything (the store is
//! in memory), so by the time the test task acts on that event the debate is following.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use moot_backends::{
    BackendError, Capabilities, Completion, CompletionRequest, FinishReason, LanguageModel, Usage,
};
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::{DebateSpec, Outcome};
use moot_core::decision::DecisionConfig;
use moot_core::protocol::build_protocol;
use moot_engine::{DebateResult, DebateSetup, EngineAgent, EngineConfig, NoObserver, Observer};
use moot_store::{MemoryStore, Store};
use tokio::sync::watch;

/// How a held call ends once its gate opens.
#[derive(Debug, Clone, Copy)]
enum Held {
    Answer,
    Fail,
}

/// A model that counts its calls. Its `n`th call waits until the gate is opened to the stage
/// `held[n - 1]` gives, then ends as it says; calls past `held` answer at once.
#[derive(Debug)]
struct Gated {
    held: Vec<(usize, Held)>,
    calls: watch::Sender<usize>,
    /// The stage the gate is open to (0: closed).
    gate: watch::Sender<usize>,
    /// Held calls whose future was dropped before they ended.
    dropped: Arc<AtomicUsize>,
}

impl Gated {
    fn new(held: &[(usize, Held)]) -> Arc<Gated> {
        Arc::new(Gated {
            held: held.to_vec(),
            calls: watch::channel(0).0,
            gate: watch::channel(0).0,
            dropped: Arc::default(),
        })
    }

    fn calls(&self) -> usize {
        *self.calls.borrow()
    }

    /// Once the model has been called `n` times.
    async fn called(&self, n: usize) {
        let mut calls = self.calls.subscribe();
        let _ = calls.wait_for(|c| *c >= n).await;
    }

    fn open(&self, stage: usize) {
        self.gate.send_replace(stage);
    }
}

/// Counts a held call dropped before it ended.
struct DropGuard(Arc<AtomicUsize>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn answer() -> Completion {
    Completion {
        text: "17 * 24 = 408.\nFinal answer: 408".into(),
        usage: Usage {
            input_tokens: 20,
            output_tokens: 8,
            ..Usage::default()
        },
        logprobs: None,
        finish: FinishReason::Stop,
        retries: Vec::new(),
    }
}

#[async_trait]
impl LanguageModel for Gated {
    fn name(&self) -> String {
        "gated".into()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn complete(&self, _r: CompletionRequest) -> Result<Completion, BackendError> {
        let mut n = 0;
        self.calls.send_modify(|c| {
            *c += 1;
            n = *c;
        });
        let Some(&(stage, then)) = self.held.get(n - 1) else {
            return Ok(answer());
        };
        let guard = DropGuard(self.dropped.clone());
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open >= stage).await;
        std::mem::forget(guard);
        match then {
            Held::Answer => Ok(answer()),
            Held::Fail => Err(BackendError::Transport("connection reset".into())),
        }
    }
}

/// Signals its receiver when a round starts.
struct RoundStarted(watch::Sender<bool>);

impl Observer for RoundStarted {
    fn round_started(&self, _round: usize, _calls: usize) {
        self.0.send_replace(true);
    }
}

fn round_started() -> (RoundStarted, watch::Receiver<bool>) {
    let (sender, receiver) = watch::channel(false);
    (RoundStarted(sender), receiver)
}

async fn until(mut flag: watch::Receiver<bool>) {
    let _ = flag.wait_for(|set| *set).await;
}

/// A one-round debate (`cot-sc`) of two agents on `model`, run to its end.
async fn debate(
    store: &dyn Store,
    id: &str,
    model: &Arc<Gated>,
    cache: bool,
    observer: &dyn Observer,
) -> DebateResult {
    let agent = || EngineAgent {
        model: model.clone(),
        params: SamplingParams::default(),
    };
    let mut debate = DebateSetup {
        run_id: id.into(),
        spec: DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, 2, 0, 7),
        protocol: build_protocol("cot-sc", &Default::default()).unwrap(),
        agents: vec![agent(), agent()],
        config: EngineConfig {
            cache,
            ..EngineConfig::default()
        },
        rule: Some("majority-last"),
        store,
    }
    .build()
    .unwrap();
    debate.create(serde_json::json!({})).await.unwrap();
    debate
        .run(&DecisionConfig::default(), observer)
        .await
        .unwrap()
}

fn answered(result: &DebateResult) -> usize {
    (0..2)
        .filter(|&a| matches!(result.transcript.get(0, a), Some(Outcome::Responded { .. })))
        .count()
}

#[tokio::test]
async fn a_debate_asking_what_another_is_asking_waits_for_it_and_records_cache_hits() {
    let store = MemoryStore::default();
    let model = Gated::new(&[(1, Held::Answer); 2]);
    let (opens, b_started) = round_started();
    let a = debate(&store, "a", &model, true, &NoObserver);
    let b = async {
        model.called(2).await;
        debate(&store, "b", &model, true, &opens).await
    };
    let opener = async {
        until(b_started).await;
        model.open(1);
    };
    let (a, b, ()) = tokio::join!(a, b, opener);
    assert_eq!(model.calls(), 2, "one model call per request");
    assert_eq!((a.cache_hits(), b.cache_hits()), (0, 2));
    assert_eq!((answered(&a), answered(&b)), (2, 2));
    assert_eq!(b.transcript, a.transcript);
    assert_eq!(b.spent_usage().output_tokens, 0);
    assert_eq!(b.usage(), a.usage());
    let stored = store.calls("b").await.unwrap();
    assert!(stored.iter().all(|c| c.cached && c.error.is_none()));
}

#[tokio::test]
async fn with_the_cache_off_each_debate_sends_its_own_requests() {
    let store = MemoryStore::default();
    let model = Gated::new(&[(1, Held::Answer); 2]);
    let (opens, b_started) = round_started();
    let a = debate(&store, "a", &model, false, &NoObserver);
    let b = async {
        model.called(2).await;
        debate(&store, "b", &model, false, &opens).await
    };
    let opener = async {
        until(b_started).await;
        model.open(1);
    };
    let (a, b, ()) = tokio::join!(a, b, opener);
    assert_eq!(model.calls(), 4);
    assert_eq!((a.cache_hits(), b.cache_hits()), (0, 0));
}

/// The leader's calls fail: its two followers do not fail with it, and they do not both call
/// either: one of them calls (held until the others had their chance to), the other waits for
/// it.
#[tokio::test]
async fn when_the_leader_fails_one_follower_calls_and_the_other_waits_for_it() {
    let store = MemoryStore::default();
    let model = Gated::new(&[
        (1, Held::Fail),
        (1, Held::Fail),
        (2, Held::Answer),
        (2, Held::Answer),
    ]);
    let (b_observer, b_started) = round_started();
    let (c_observer, c_started) = round_started();
    let a = debate(&store, "a", &model, true, &NoObserver);
    let b = async {
        model.called(2).await;
        debate(&store, "b", &model, true, &b_observer).await
    };
    let c = async {
        until(b_started).await;
        debate(&store, "c", &model, true, &c_observer).await
    };
    let opener = async {
        until(c_started).await;
        model.open(1);
        model.called(4).await;
        model.open(2);
    };
    let (a, b, c, ()) = tokio::join!(a, b, c, opener);
    assert_eq!(answered(&a), 0);
    assert_eq!((answered(&b), answered(&c)), (2, 2));
    assert_eq!(
        model.calls(),
        4,
        "the leader's two failed calls, then one each"
    );
    assert_eq!(b.cache_hits() + c.cache_hits(), 2);
    assert_eq!(b.transcript, c.transcript);
}

/// The leader's debate is dropped while its calls are at the model: the calls are cancelled,
/// and the follower calls for itself instead of waiting for ever.
#[tokio::test]
async fn when_the_leader_is_cancelled_its_follower_calls_for_itself() {
    let store = MemoryStore::default();
    // The gate never opens: the leader's calls would hang.
    let model = Gated::new(&[(1, Held::Answer); 2]);
    let (b_observer, b_started) = round_started();
    let a = debate(&store, "a", &model, true, &NoObserver);
    let a_until_b_follows = async {
        tokio::select! {
            _ = a => panic!("the leader's calls never end"),
            () = until(b_started) => {}
        }
    };
    let b = async {
        model.called(2).await;
        debate(&store, "b", &model, true, &b_observer).await
    };
    let ((), b) = tokio::join!(a_until_b_follows, b);
    assert_eq!(model.dropped.load(Ordering::SeqCst), 2, "cancelled");
    assert_eq!(model.calls(), 4);
    assert_eq!((answered(&b), b.cache_hits()), (2, 0));
}

/// A follower's debate is dropped: the leader's calls go on and answer.
#[tokio::test]
async fn a_cancelled_follower_leaves_the_leader_to_answer() {
    let store = MemoryStore::default();
    let model = Gated::new(&[(1, Held::Answer); 2]);
    let (b_observer, b_started) = round_started();
    let a = debate(&store, "a", &model, true, &NoObserver);
    let b_dropped_then_open = async {
        model.called(2).await;
        let b = debate(&store, "b", &model, true, &b_observer);
        tokio::select! {
            _ = b => panic!("the follower cannot answer before the gate opens"),
            () = until(b_started) => {}
        }
        model.open(1);
    };
    let (a, ()) = tokio::join!(a, b_dropped_then_open);
    assert_eq!((answered(&a), a.cache_hits()), (2, 0));
    assert_eq!(model.calls(), 2);
    assert_eq!(model.dropped.load(Ordering::SeqCst), 0);
}
