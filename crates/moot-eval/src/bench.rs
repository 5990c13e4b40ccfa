//! Running a benchmark: every item of a dataset under every protocol, as ordinary stored runs.
//!
//! A benchmark has a name; its debates are runs whose ids are derived from it
//! (`<bench>/<protocol>/<item id>`) and linked to it in the store before they start. Running a
//! benchmark again under the same name resumes it: finished debates are read back, interrupted
//! ones are resumed from their stored calls (no completed call is repeated), missing ones are run.
//! Each debate's seed is derived from the benchmark seed and the item id, so a resumed benchmark
//! asks the same questions with the same seeds as an uninterrupted one.
//!
//! Agents come from an [`AgentSource`], asked per item, because simulated agents need each
//! item's gold answer. Debates run concurrently, at most `concurrency` at a time.

use std::hash::{DefaultHasher, Hash, Hasher};
use tracing::Instrument;

use futures::stream::{self, StreamExt};
use moot_core::answer::{Answer, AnswerKind};
use moot_core::debate::{AgentSpec, DebateSpec};
use moot_core::decision::{DecisionConfig, Evidence, RULES};
use moot_core::layout::Layout;
use moot_core::protocol::Protocol;
use moot_core::validation::{CheckKind, Validation};
use moot_engine::{
    DebateJob, DebateResult, DebateRunner, DebateSetup, EngineAgent, EngineConfig, EngineError,
    NoObserver, Observer, Ran, Start,
};
use moot_store::{
    BenchItemRecord, BenchJobRecord, BenchRecord, RunRecord, RunStatus, Store, StoreError,
};

use crate::item::Item;

/// The agents of one item's debate.
pub trait AgentSource: Send + Sync {
    fn agents(&self, item: &Item) -> Result<(Vec<AgentSpec>, Vec<EngineAgent>), BenchError>;
}

/// Builds a protocol by name for one item (with whatever options the caller applies; the item
/// gives the gold answer the analysis-only orderings read).
pub type ProtocolFactory<'a> =
    &'a (dyn Fn(&str, &Item) -> Result<Box<dyn Protocol>, BenchError> + Send + Sync);

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Transparent: the message is the store's (which names the store) or the engine's, said
    /// once (`{0}` with a source would say it again after a colon in `{:#}`).
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Config(String),
}

/// What to run.
pub struct BenchPlan<'a> {
    pub name: String,
    pub dataset: String,
    pub items: Vec<Item>,
    /// The dataset's items left out because they cannot be scored (`--skip-invalid`), stored
    /// with the benchmark for its reports.
    pub left_out: Option<moot_store::LeftOut>,
    pub protocols: Vec<String>,
    pub limit: Option<u64>,
    pub seed: u64,
    /// Debate rounds requested (each protocol applies its own shape).
    pub rounds: usize,
    /// How debate prompts are laid out (`debate.layout`).
    pub layout: Layout,
    /// Debates in flight at once.
    pub concurrency: usize,
    pub engine: EngineConfig,
    pub decision: DecisionConfig,
    /// Overrides each protocol's default rule.
    pub rule: Option<&'static str>,
    /// Stored with the benchmark, to resume with.
    pub config: serde_json::Value,
    /// Removes secrets from everything the debates store.
    pub redactor: std::sync::Arc<moot_core::redact::Redactor>,
    pub protocol: ProtocolFactory<'a>,
    /// Runs each debate (the application's runner: the sandbox that checks code answers, the
    /// run log); `redactor` is the one it redacts with.
    pub runner: &'a dyn DebateRunner,
}

/// One item's debate under one protocol, as the benchmark saw it.
#[derive(Debug, Clone)]
pub struct ItemResult {
    /// The protocol's label in a report: its registry name, unless several benchmarks reported
    /// together ran it (`som R=2`, `cot-sc (other)`; see `moot_app::bench_report::combine`).
    pub protocol: String,
    /// The protocol's registry name, whatever its label.
    pub protocol_name: String,
    /// The debate's agents as it ran them (the team fitted to the protocol), in trajectory row
    /// order: their ids and roles.
    pub agents: Vec<AgentSpec>,
    pub item_id: String,
    pub position: u32,
    pub gold: String,
    pub run_id: String,
    pub result: DebateResult,
    /// Whether the debate was read back or resumed rather than run from the start.
    pub reused: bool,
}

impl ItemResult {
    /// Whether the chosen answer is right (see [`ItemResult::grade`]).
    pub fn correct(&self, item: &Item) -> bool {
        let gold = item.gold_answer();
        let chosen = self.result.decision().and_then(|d| d.answer.as_ref());
        self.grade(item, gold.as_ref(), chosen)
    }

    /// Whether the chosen answer is right for its item, found among `items` by id; not when
    /// `items` lacks it.
    pub fn correct_among(&self, items: &[Item]) -> bool {
        items
            .iter()
            .find(|item| item.id == self.item_id)
            .is_some_and(|item| self.correct(item))
    }

    /// Whether `answer` is right for `item` (`gold`: the item's parsed gold answer). A code
    /// item with tests is right when the program's tests ran in the sandbox and every check
    /// passed (pass@1; equality with the reference solution means nothing for code). Anything
    /// else is right when it equals the gold answer.
    pub fn grade(&self, item: &Item, gold: Option<&Answer>, answer: Option<&Answer>) -> bool {
        let Some(a) = answer else {
            return false;
        };
        if item.kind == AnswerKind::Code && item.tests.is_some() {
            return self
                .result
                .validations
                .get(a.canonical())
                .is_some_and(|checks| {
                    checks.iter().any(|c| c.check == CheckKind::Tests)
                        && checks.iter().all(Validation::passed)
                });
        }
        gold.is_some_and(|g| a.equivalent(g))
    }
}

/// The debate seed of an item: the benchmark seed mixed with the item id, stable across runs.
pub fn item_seed(seed: u64, item_id: &str) -> u64 {
    let mut h = DefaultHasher::new();
    item_id.hash(&mut h);
    seed ^ h.finish()
}

/// The run id of an item's debate under a protocol.
pub fn run_id(bench: &str, protocol: &str, item_id: &str) -> String {
    format!("{bench}/{protocol}/{item_id}")
}

/// Creates the benchmark's record, or checks that the stored one has the same dataset,
/// protocols, limit and seed (a benchmark is resumed with the settings it was started with).
pub async fn ensure_bench(plan: &BenchPlan<'_>, store: &dyn Store) -> Result<(), BenchError> {
    match store.bench(&plan.name).await {
        Ok(existing) => {
            if existing.dataset != plan.dataset
                || existing.protocols != plan.protocols
                || existing.limit != plan.limit
                || existing.seed != plan.seed
            {
                return Err(BenchError::Config(format!(
                    "benchmark {:?} already exists with dataset {}, protocols {}, limit {} and seed {}; resume it with the same ones or choose another name",
                    plan.name,
                    existing.dataset,
                    existing.protocols.join(","),
                    existing.limit.map_or("none".to_string(), |l| l.to_string()),
                    existing.seed
                )));
            }
        }
        Err(StoreError::BenchNotFound(_)) => {
            // `/` separates a debate id's parts (see [`run_id`]); item ids hold it, so a name
            // holding it too could make two benchmarks' debates one id.
            if plan.name.contains('/') || plan.name.trim().is_empty() {
                return Err(BenchError::Config(format!(
                    "benchmark name {:?}: it must not be empty nor contain '/' (debate ids are NAME/PROTOCOL/ITEM)",
                    plan.name
                )));
            }
            store
                .create_bench(&BenchRecord {
                    name: plan.name.clone(),
                    created_at: moot_engine::timestamp(),
                    dataset: plan.dataset.clone(),
                    protocols: plan.protocols.clone(),
                    limit: plan.limit,
                    seed: plan.seed,
                    config: plan.config.clone(),
                    fork: None,
                    left_out: plan.left_out.clone(),
                })
                .await
                .map_err(|e| match e {
                    // Two started together: the other made it first, and runs it.
                    StoreError::BenchExists(_) => BenchError::Config(format!(
                        "benchmark {:?} was started by another process at the same moment; one process runs a benchmark (moot bench status shows it, moot resume continues it once that process has ended)",
                        plan.name
                    )),
                    e => e.into(),
                })?;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// The jobs of a benchmark worked by many processes: one per item and protocol, in the order
/// [`run_bench`] runs them (every protocol of an item before the next item).
pub fn plan_jobs(plan: &BenchPlan<'_>) -> Result<Vec<BenchJobRecord>, BenchError> {
    let mut jobs = Vec::with_capacity(plan.items.len() * plan.protocols.len());
    for (position, item) in plan.items.iter().enumerate() {
        let value = serde_json::to_value(item)
            .map_err(|e| BenchError::Config(format!("item {}: {e}", item.id)))?;
        for protocol in &plan.protocols {
            jobs.push(BenchJobRecord::pending(
                &plan.name,
                protocol,
                &item.id,
                position as u32,
                jobs.len() as u64,
                value.clone(),
            ));
        }
    }
    Ok(jobs)
}

/// Records a benchmark and its jobs without running any (`moot bench --detach`): workers
/// ([`crate::work::work`]) then claim them. Planning the same benchmark again adds only what
/// is missing. Returns (jobs in the plan, jobs added now).
pub async fn plan_bench(plan: &BenchPlan<'_>, store: &dyn Store) -> Result<(u64, u64), BenchError> {
    ensure_bench(plan, store).await?;
    let jobs = plan_jobs(plan)?;
    let added = store.plan_jobs(&jobs).await?;
    Ok((jobs.len() as u64, added))
}

/// Runs (or resumes) a benchmark; results in protocol order, then item order.
pub async fn run_bench(
    plan: &BenchPlan<'_>,
    store: &dyn Store,
    agents: &dyn AgentSource,
    mut on_result: impl FnMut(&ItemResult),
) -> Result<Vec<ItemResult>, BenchError> {
    ensure_bench(plan, store).await?;
    // Item by item, every protocol on one item before the next: an interrupted benchmark has
    // compared its protocols on the same items so far.
    let jobs: Vec<(&str, u32, &Item)> = plan
        .items
        .iter()
        .enumerate()
        .flat_map(|(i, item)| {
            plan.protocols
                .iter()
                .map(move |p| (p.as_str(), i as u32, item))
        })
        .collect();
    let mut results: Vec<ItemResult> = Vec::with_capacity(jobs.len());
    // The benchmark's span: its items' debates run inside it, so their spans are its children.
    let span = tracing::info_span!(
        target: moot_core::semconv::TARGET,
        moot_core::semconv::SPAN_BENCH,
        otel.name = %format_args!("bench {}", plan.name),
        otel.kind = "internal",
        { moot_core::semconv::MOOT_BENCH_NAME } = plan.name.as_str(),
    );
    async {
        let mut running = stream::iter(jobs.into_iter().map(|(protocol, position, item)| {
            run_item(plan, store, agents, protocol, position, item, &NoObserver)
        }))
        .buffer_unordered(plan.concurrency.max(1));
        while let Some(result) = running.next().await {
            let result = result?;
            on_result(&result);
            results.push(result);
        }
        Ok::<(), BenchError>(())
    }
    .instrument(span)
    .await?;
    let rank = |p: &str| plan.protocols.iter().position(|x| x == p);
    results.sort_by_key(|r| (rank(&r.protocol), r.position));
    Ok(results)
}

/// Runs one item's debate under one protocol: a new debate, or the stored one continued from
/// its recorded calls (a finished one is read back). `observer` hears every call.
pub(crate) async fn run_item(
    plan: &BenchPlan<'_>,
    store: &dyn Store,
    source: &dyn AgentSource,
    protocol_name: &str,
    position: u32,
    item: &Item,
    observer: &dyn Observer,
) -> Result<ItemResult, BenchError> {
    let protocol = (plan.protocol)(protocol_name, item)?;
    let (specs, engine_agents) = source.agents(item)?;
    // The whole team and the requested rounds: the debate's constructor fits them to the
    // protocol.
    let spec = DebateSpec {
        question: item.question.clone(),
        kind: item.kind,
        choices: item.choices.clone(),
        agents: specs,
        rounds: plan.rounds,
        seed: item_seed(plan.seed, &item.id),
        tests: item.tests.clone(),
        layout: plan.layout,
        passage: item.passage.clone(),
    };
    let id = run_id(&plan.name, protocol_name, &item.id);
    let stored = match store.run(&id).await {
        Ok(run) => Some(run),
        Err(StoreError::RunNotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    // A stored run under this id must be this item's debate (same question and seed): a
    // benchmark never reads back a debate it did not plan, whatever made the ids meet.
    if let Some(run) = &stored {
        // The stored question went through the redactor.
        let question = plan.redactor.redact(&spec.question);
        let found = (
            run.spec.get("question").and_then(|q| q.as_str()),
            run.spec.get("seed").and_then(|s| s.as_u64()),
        );
        if found != (Some(question.as_ref()), Some(spec.seed)) {
            return Err(BenchError::Config(format!(
                "run {id} is stored but is not this benchmark's debate of item {}: another run has its id; choose another benchmark name",
                item.id
            )));
        }
    }
    let reused = stored.is_some();
    // Finished or interrupted: its stored calls are folded back; a finished debate plans no
    // call.
    let start = match &stored {
        Some(run) if run.status == RunStatus::Failed => {
            return Err(BenchError::Config(format!("run {id} failed earlier")));
        }
        Some(_) => Start::Resume {
            calls: store.calls(&id).await?,
        },
        None => Start::New {
            config: plan.config.clone(),
        },
    };
    let job = DebateJob {
        setup: DebateSetup {
            run_id: id.clone(),
            spec,
            protocol,
            agents: engine_agents,
            config: plan.engine,
            rule: plan.rule,
            store,
        },
        start,
        fork: None,
        decision: plan.decision.clone(),
        bench_item: Some(BenchItemRecord {
            bench: plan.name.clone(),
            protocol: protocol_name.to_string(),
            item_id: item.id.clone(),
            position,
            gold: item.gold.clone(),
            run_id: id.clone(),
        }),
    };
    let Ran { result, agents } = plan.runner.run(job, observer, &mut |_| {}).await?;
    Ok(ItemResult {
        protocol: protocol_name.to_string(),
        protocol_name: protocol_name.to_string(),
        agents,
        item_id: item.id.clone(),
        position,
        gold: item.gold.clone(),
        run_id: id,
        result,
        reused,
    })
}

/// A stored benchmark read back: its record, the items its finished debates asked, and those
/// debates as results (protocol order, then item order).
#[derive(Debug, Clone)]
pub struct LoadedBench {
    pub record: BenchRecord,
    pub items: Vec<Item>,
    pub results: Vec<ItemResult>,
    /// Debates linked to the benchmark that have not finished (still running, interrupted or
    /// failed); they are left out of `results`.
    pub unfinished: usize,
}

/// Reads a stored benchmark back without running anything: every finished debate's calls are
/// folded into its transcript and every decision rule is re-applied with the evidence of the
/// run's protocol, which `protocol_of` rebuilds from the run's record (`None`: the evidence a
/// transcript carries by itself). The gold and question of each item come from the store, so
/// the dataset files are not needed.
pub async fn load_bench(
    store: &dyn Store,
    name: &str,
    protocol_of: &(dyn Fn(&RunRecord) -> Option<Box<dyn Protocol>> + Sync),
    decision: &DecisionConfig,
) -> Result<LoadedBench, BenchError> {
    let record = store.bench(name).await?;
    let mut linked = store.bench_runs(name).await?;
    let rank = |p: &str| record.protocols.iter().position(|x| x == p);
    linked.sort_by_key(|(b, _)| (rank(&b.protocol), b.position));
    let (mut items, mut results, mut unfinished) = (Vec::<Item>::new(), Vec::new(), 0);
    for (link, run) in linked {
        if run.status != RunStatus::Done {
            unfinished += 1;
            continue;
        }
        let spec: DebateSpec = serde_json::from_value(run.spec.clone()).map_err(|e| {
            BenchError::Config(format!(
                "run {}: the stored debate spec is unreadable: {e}",
                run.id
            ))
        })?;
        let calls = store.calls(&link.run_id).await?;
        let transcript = moot_engine::transcript_of(&spec, &calls);
        let validations = moot_engine::stored_validations(store, &link.run_id).await?;
        let decisions = match protocol_of(&run) {
            Some(p) => {
                moot_engine::decide_all(p.as_ref(), &spec, &transcript, &validations, decision)
            }
            None => moot_engine::decide_all_with(
                &transcript,
                &Evidence::from_transcript(&spec, &transcript.decided_part()),
                &validations,
                decision,
            ),
        };
        let chosen = RULES
            .iter()
            .find(|r| r.name == run.rule)
            .map_or("majority-last", |r| r.name);
        if !items.iter().any(|i| i.id == link.item_id) {
            items.push(Item {
                id: link.item_id.clone(),
                question: spec.question.clone(),
                choices: spec.choices.clone(),
                gold: link.gold.clone(),
                kind: spec.kind,
                tests: spec.tests.clone(),
                passage: spec.passage.clone(),
            });
        }
        results.push(ItemResult {
            protocol_name: link.protocol.clone(),
            protocol: link.protocol,
            agents: spec.agents,
            item_id: link.item_id,
            position: link.position,
            gold: link.gold,
            run_id: link.run_id,
            result: DebateResult {
                run_id: run.id,
                transcript,
                records: calls,
                decisions,
                chosen,
                validations,
            },
            reused: true,
        });
    }
    // A worked benchmark's jobs not yet run have no debate linked to them yet.
    let jobs = store.job_counts(name).await?.total() as usize;
    if jobs > 0 {
        unfinished = jobs.saturating_sub(results.len());
    }
    Ok(LoadedBench {
        record,
        items,
        results,
        unfinished,
    })
}

#[cfg(test)]
mod error_tests {
    use super::*;

    /// The chain `{:#}` prints: each error's message, then its source's, and so on.
    fn chain(e: &dyn std::error::Error) -> Vec<String> {
        let mut links = vec![e.to_string()];
        let mut source = e.source();
        while let Some(s) = source {
            links.push(s.to_string());
            source = s.source();
        }
        links
    }

    #[test]
    fn a_lost_store_is_said_once_through_the_engine_and_the_benchmark() {
        let lost = StoreError::Unreachable {
            store: "postgres://moot@db/bench".into(),
            reason: "no connection within 10 s".into(),
        };
        let e = BenchError::from(EngineError::from(lost));
        let links = chain(&e);
        let said = links.join(": ");
        assert_eq!(said.matches("cannot be reached").count(), 1, "{said}");
        for pair in links.windows(2) {
            assert!(!pair[0].contains(&pair[1]), "{links:?}");
        }
    }
}
