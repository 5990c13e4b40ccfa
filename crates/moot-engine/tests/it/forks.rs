//! Forks through the real engine on a real SQLite store: which calls a fork copies or reuses
//! from its parent (never asked again: the backends count what reaches them), which it asks
//! anew, what an injected response does to later rounds, and what is refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::DebateSpec;
use moot_core::decision::DecisionConfig;
use moot_core::fork::Intervention;
use moot_core::protocol::{build_protocol, CallNotes, ProtocolOptions};
use moot_engine::{DebateResult, DebateSetup, EngineAgent, EngineConfig, ForkSource, NoObserver};
use moot_store::{CallRecord, SqliteStore, Store};

/// A sim agent that counts the requests reaching it and keeps their resample salts.
#[derive(Debug)]
struct Counted {
    inner: SimModel,
    asked: AtomicUsize,
    salts: Mutex<Vec<Option<u64>>>,
}

#[async_trait]
impl LanguageModel for Counted {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn complete(&self, r: CompletionRequest) -> Result<Completion, BackendError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.salts.lock().unwrap().push(r.params.resample);
        self.inner.complete(r).await
    }
}

/// Three agents that are right half the time, each with its own wrong answer.
fn team() -> Vec<Arc<Counted>> {
    (0..3)
        .map(|i| {
            let agent = SimAgent {
                accuracy: 0.5,
                distractors: vec![format!("{}", 500 + i)],
                ..SimAgent::default()
            };
            Arc::new(Counted {
                inner: SimModel::new(agent, "408", AnswerKind::Numeric, 40 + i as u64),
                asked: AtomicUsize::new(0),
                salts: Mutex::new(Vec::new()),
            })
        })
        .collect()
}

fn asked(team: &[Arc<Counted>]) -> usize {
    team.iter().map(|m| m.asked.load(Ordering::SeqCst)).sum()
}

fn config() -> EngineConfig {
    EngineConfig {
        soft_timeout: Duration::from_secs(60),
        hard_timeout: Duration::from_secs(120),
        min_agents: 3,
        max_concurrent_calls: 8,
        cache: true,
        cache_max_entries: None,
        budget: Default::default(),
        reask: true,
    }
}

fn spec() -> DebateSpec {
    DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, 3, 2, 9)
}

fn setup<'a>(
    store: &'a dyn Store,
    id: &str,
    protocol: &str,
    options: &ProtocolOptions,
    team: &[Arc<Counted>],
) -> DebateSetup<'a> {
    DebateSetup {
        run_id: id.into(),
        spec: spec(),
        protocol: build_protocol(protocol, options).unwrap(),
        agents: team
            .iter()
            .map(|m| EngineAgent {
                model: m.clone() as Arc<dyn LanguageModel>,
                params: SamplingParams {
                    seed: Some(5),
                    ..SamplingParams::default()
                },
            })
            .collect(),
        config: config(),
        rule: None,
        store,
    }
}

async fn parent(store: &dyn Store, team: &[Arc<Counted>]) -> DebateResult {
    let mut d = setup(store, "parent", "som", &ProtocolOptions::default(), team)
        .build()
        .unwrap();
    d.create(serde_json::json!({})).await.unwrap();
    d.run(&DecisionConfig::default(), &NoObserver)
        .await
        .unwrap()
}

async fn fork(
    store: &dyn Store,
    team: &[Arc<Counted>],
    id: &str,
    round: usize,
    intervention: Intervention,
) -> DebateResult {
    let mut d = setup(store, id, "som", &ProtocolOptions::default(), team)
        .build()
        .unwrap()
        .with_fork(ForkSource {
            parent: "parent".into(),
            parent_calls: store.calls("parent").await.unwrap(),
            round,
            intervention,
        })
        .unwrap();
    d.create(serde_json::json!({})).await.unwrap();
    d.run(&DecisionConfig::default(), &NoObserver)
        .await
        .unwrap()
}

fn in_round(calls: &[CallRecord], round: u32) -> Vec<&CallRecord> {
    calls.iter().filter(|c| c.round == round).collect()
}

async fn sqlite() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("moot.db"))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test]
async fn a_null_fork_copies_the_rounds_before_it_and_asks_its_round_afresh() {
    let (_dir, store) = sqlite().await;
    let team = team();
    parent(&store, &team).await;
    assert_eq!(asked(&team), 9);
    for m in &team {
        m.salts.lock().unwrap().clear();
    }
    fork(&store, &team, "null", 1, Intervention::Null).await;
    let calls = store.calls("null").await.unwrap();
    let parent_calls = store.calls("parent").await.unwrap();
    // Round 0 is the parent's, copied at no cost and never asked again.
    for (copy, original) in in_round(&calls, 0)
        .into_iter()
        .zip(in_round(&parent_calls, 0))
    {
        assert_eq!(copy.reused_from.as_deref(), Some("parent"));
        assert_eq!((copy.input_tokens, copy.output_tokens), (0, 0));
        assert_eq!(copy.response_text, original.response_text);
    }
    // Round 1 is asked again, salted: fresh samples, not the parent's cached answers.
    let round1 = in_round(&calls, 1);
    assert_eq!(round1.len(), 3);
    for c in &round1 {
        assert_eq!(c.reused_from, None);
        assert!(!c.cached, "a resampled call is never served from the cache");
        assert!(c.output_tokens > 0);
        assert_ne!(
            c.request_key,
            parent_calls
                .iter()
                .find(|p| (p.round, p.agent) == (c.round, c.agent))
                .unwrap()
                .request_key
        );
    }
    // What reached the backends is exactly the fork's calls not reused: round 1 salted, and
    // round 2 (unsalted) wherever its prompt changed.
    let fresh = calls.iter().filter(|c| c.reused_from.is_none()).count();
    assert_eq!(asked(&team), 9 + fresh);
    let salts: Vec<Option<u64>> = team
        .iter()
        .flat_map(|m| m.salts.lock().unwrap().clone())
        .collect();
    assert_eq!(salts.iter().filter(|s| s.is_some()).count(), 3);
    let run = store.run("null").await.unwrap();
    let origin = run.fork.unwrap();
    assert_eq!((origin.parent.as_str(), origin.round), ("parent", 1));
    assert_eq!(origin.intervention, serde_json::json!({"kind": "null"}));
}

#[tokio::test]
async fn a_said_response_replaces_the_agents_answer_and_the_next_round_reads_it() {
    let (_dir, store) = sqlite().await;
    let team = team();
    parent(&store, &team).await;
    let text = "I am sure of it.\nFinal answer: 999";
    let result = fork(
        &store,
        &team,
        "say",
        1,
        Intervention::Say {
            agent: 0,
            text: text.into(),
        },
    )
    .await;
    let calls = store.calls("say").await.unwrap();
    let said = calls.iter().find(|c| (c.round, c.agent) == (1, 0)).unwrap();
    assert_eq!(said.response_text.as_deref(), Some(text));
    assert_eq!(said.answer.as_deref(), Some("999"));
    assert_eq!(
        (said.input_tokens, said.output_tokens, said.logprob_min),
        (0, 0, None)
    );
    assert!(CallNotes::from_json(&said.notes).unwrap().injected);
    // The other agents' round-1 prompts are the parent's: reused, not asked.
    for c in in_round(&calls, 1).into_iter().filter(|c| c.agent != 0) {
        assert_eq!(
            c.reused_from.as_deref(),
            Some("parent"),
            "agent {}",
            c.agent
        );
    }
    // Round 2 reads the injected text, so it is asked: the only calls that reached a model.
    let round2 = in_round(&calls, 2);
    assert_eq!(round2.len(), 3);
    for c in &round2 {
        assert_eq!(c.reused_from, None);
    }
    let peers_of_1 = round2.iter().find(|c| c.agent == 1).unwrap();
    assert!(peers_of_1
        .messages
        .to_string()
        .contains("Final answer: 999"));
    assert_eq!(asked(&team), 9 + 3);
    let t = result.transcript.trajectory().unwrap();
    assert_eq!(
        t.cell(0, 1).answer().map(|a| a.canonical().to_string()),
        Some("999".into())
    );
}

#[tokio::test]
async fn forks_are_refused_by_the_protocol_round_and_agent_with_reasons() {
    let (_dir, store) = sqlite().await;
    let team = team();
    parent(&store, &team).await;
    let refused = |protocol: &'static str, round: usize, intervention: Intervention| {
        let store = &store;
        let team = &team;
        async move {
            let options = ProtocolOptions::default();
            let calls = store.calls("parent").await.unwrap();
            match setup(store, "refused", protocol, &options, team)
                .build()
                .unwrap()
                .with_fork(ForkSource {
                    parent: "parent".into(),
                    parent_calls: calls,
                    round,
                    intervention,
                }) {
                Ok(_) => panic!("{protocol} at round {round} was not refused"),
                Err(e) => e.to_string(),
            }
        }
    };
    let e = refused("svr-mad", 1, Intervention::Null).await;
    assert!(e.contains("challenge steps"), "{e}");
    let e = refused("som", 3, Intervention::Null).await;
    assert!(e.contains("rounds are 0 to 2"), "{e}");
    let e = refused(
        "sid-et",
        1,
        Intervention::Say {
            agent: 0,
            text: "Final answer: 1".into(),
        },
    )
    .await;
    assert!(e.contains("log-likelihoods"), "{e}");
    let e = refused(
        "som",
        1,
        Intervention::Say {
            agent: 7,
            text: "x".into(),
        },
    )
    .await;
    assert!(e.contains("agent 8 is not in the debate"), "{e}");
    assert_eq!(asked(&team), 9, "a refused fork asks nothing");
    assert!(matches!(
        store.run("refused").await,
        Err(moot_store::StoreError::RunNotFound(_))
    ));
}

/// A fork whose process died after its run was written is resumed with the same source: its
/// copied calls are not asked, its round is still salted (fresh samples, the same salt), and
/// nothing is asked twice.
#[tokio::test]
async fn a_resumed_fork_reuses_and_resamples_as_it_started() {
    let (_dir, store) = sqlite().await;
    let team = team();
    parent(&store, &team).await;
    let source = || async {
        ForkSource {
            parent: "parent".into(),
            parent_calls: store.calls("parent").await.unwrap(),
            round: 1,
            intervention: Intervention::Null,
        }
    };
    // Created (run and copied round 0 written), then the process dies before asking anything.
    let mut first = setup(&store, "resumed", "som", &ProtocolOptions::default(), &team)
        .build()
        .unwrap()
        .with_fork(source().await)
        .unwrap();
    first.create(serde_json::json!({})).await.unwrap();
    drop(first);
    assert_eq!(asked(&team), 9);
    for m in &team {
        m.salts.lock().unwrap().clear();
    }
    let mut resumed = setup(&store, "resumed", "som", &ProtocolOptions::default(), &team)
        .build()
        .unwrap()
        .with_fork(source().await)
        .unwrap();
    resumed.restore(store.calls("resumed").await.unwrap());
    resumed
        .run(&DecisionConfig::default(), &NoObserver)
        .await
        .unwrap();
    let calls = store.calls("resumed").await.unwrap();
    assert_eq!(calls.len(), 9);
    let fresh = calls.iter().filter(|c| c.reused_from.is_none()).count();
    assert_eq!(asked(&team), 9 + fresh, "nothing asked twice");
    let salts: Vec<u64> = team
        .iter()
        .flat_map(|m| m.salts.lock().unwrap().clone())
        .flatten()
        .collect();
    assert_eq!(salts.len(), 3, "round 1 salted again");
    assert!(salts.windows(2).all(|w| w[0] == w[1]), "one salt per fork");
    for c in calls.iter().filter(|c| c.round == 0) {
        assert_eq!(c.reused_from.as_deref(), Some("parent"));
    }
}
