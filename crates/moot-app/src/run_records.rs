//! Everything the store holds of one run — the run, its calls, its decisions and the sandbox's
//! checks — read at once, for `moot show` and anything else that shows a whole run.

use anyhow::Result;
use moot_store::{
    BenchItemRecord, CallRecord, DecisionRecord, RunRecord, Store, StoreError, ValidationRecord,
};
use serde_json::{json, Value};

/// A run record as JSON, with the status it is shown with (`interrupted` for a running run
/// whose process is gone) rather than the one stored.
pub fn run_json(run: &RunRecord) -> Value {
    let mut shown = serde_json::to_value(run).unwrap_or_default();
    shown["status"] = json!(run.shown_status());
    shown
}

/// The most forks of one run that are read with it (`moot show`, the run page): far more
/// than anyone forks one debate by hand; a benchmark fork makes one per debate.
pub const MAX_FORKS_SHOWN: u32 = 1_000;

/// A fork of a run as it is listed beside its parent: its id, round, intervention, status and
/// answer.
pub fn fork_json(fork: &RunRecord) -> Value {
    json!({
        "id": fork.id,
        "round": fork.fork.as_ref().map(|f| f.round),
        "intervention": fork.fork.as_ref().map(|f| &f.intervention),
        "status": fork.shown_status(),
        "answer": fork.answer,
    })
}

/// A stored call as JSON: its record, and of its input tokens those read from a prompt cache
/// (`cached_input_tokens`: the input less the processed tokens, when the backend said what it
/// processed).
fn call_json(call: &CallRecord) -> Value {
    let mut shown = serde_json::to_value(call).unwrap_or_default();
    if let Some(fields) = shown.as_object_mut() {
        fields.insert(
            "cached_input_tokens".into(),
            json!(call.cached_input_tokens()),
        );
    }
    shown
}

/// One stored run with everything recorded about it.
#[derive(Debug, Clone)]
pub struct RunRecords {
    pub run: RunRecord,
    pub calls: Vec<CallRecord>,
    pub decisions: Vec<DecisionRecord>,
    pub validations: Vec<ValidationRecord>,
    /// The runs forked from this one (`moot fork`), oldest first, at most
    /// [`MAX_FORKS_SHOWN`].
    pub forks: Vec<RunRecord>,
    /// The benchmark item the run debated, when it is a benchmark's debate: its gold answer.
    pub bench_item: Option<BenchItemRecord>,
}

/// A benchmark debate's gold answer, and whether the run's decision is right: equivalent to
/// the gold under the run's answer kind; for a program, one that passed every check and its
/// tests (pass@1, as the benchmark grades it).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Graded {
    pub bench: String,
    pub item: String,
    pub gold: String,
    pub correct: bool,
}

impl RunRecords {
    /// The run `run_id` as stored; a run the store does not hold is a
    /// [`NotFound`](crate::not_found::NotFound).
    pub async fn load(store: &dyn Store, run_id: &str) -> Result<RunRecords> {
        let read = async {
            Ok::<_, StoreError>(RunRecords {
                run: store.run(run_id).await?,
                calls: store.calls(run_id).await?,
                decisions: store.decisions(run_id).await?,
                validations: store.validations(run_id).await?,
                forks: store.forks_of(run_id, MAX_FORKS_SHOWN).await?,
                bench_item: bench_item(store, run_id).await?,
            })
        };
        read.await.map_err(|e| match e {
            StoreError::RunNotFound(_) => {
                anyhow::Error::new(crate::not_found::NotFound::run(run_id))
            }
            other => other.into(),
        })
    }

    /// The gold answer of a benchmark debate, and whether its decision is right.
    pub fn graded(&self) -> Option<Graded> {
        let item = self.bench_item.as_ref()?;
        let spec: moot_core::debate::DebateSpec =
            serde_json::from_value(self.run.spec.clone()).ok()?;
        let correct = match (spec.kind, self.run.answer.as_deref()) {
            (_, None) => false,
            (moot_core::answer::AnswerKind::Code, Some(answer)) => {
                let mine: Vec<&ValidationRecord> = self
                    .validations
                    .iter()
                    .filter(|v| v.answer == answer)
                    .collect();
                mine.iter().any(|v| v.check == "tests")
                    && mine.iter().all(|v| v.verdict == "passed")
            }
            (kind, Some(answer)) => {
                let ctx = moot_core::answer::ExtractContext {
                    choices: &spec.choices,
                };
                let parse = |s: &str| moot_core::Answer::parse(kind, s, &ctx);
                parse(&item.gold).is_some_and(|gold| {
                    moot_core::answer::is_correct(parse(answer).as_ref(), &gold)
                })
            }
        };
        Some(Graded {
            bench: item.bench.clone(),
            item: item.item_id.clone(),
            gold: item.gold.clone(),
            correct,
        })
    }

    /// The run as one JSON document (`moot show --format json`): the run with the status it is
    /// shown with (and, for a fork, where it comes from: `run.fork`), its calls, each rule's
    /// decision, the checks, and the runs forked from it.
    pub fn json(&self) -> Value {
        let ids: Vec<String> =
            serde_json::from_value::<moot_core::debate::DebateSpec>(self.run.spec.clone())
                .map(|spec| spec.agents.into_iter().map(|a| a.id).collect())
                .unwrap_or_default();
        json!({
            "run": run_json(&self.run),
            "calls": self.calls.iter().map(call_json).collect::<Vec<_>>(),
            // Agents numbered as `moot decide` and `moot show` number them: from 1, with ids.
            "decisions": self.decisions.iter().map(|d| {
                let mut decision = d.decision.value();
                crate::decide::number_agents(&mut decision, &ids);
                decision
            }).collect::<Vec<_>>(),
            "validations": self.validations,
            "forks": self.forks.iter().map(fork_json).collect::<Vec<_>>(),
            "benchmark": self.graded(),
        })
    }

    /// The run as freemad's transcript JSON (`moot show --format freemad`).
    pub fn freemad(&self) -> Result<Value> {
        crate::transcript::json(
            &self.run,
            &self.calls,
            &moot_engine::validations_from(&self.validations),
        )
    }
}

/// The benchmark item run `run_id` debated: a benchmark's debates are named
/// `NAME/PROTOCOL/ITEM`, and the benchmark's items list each with its run. None for any other
/// run.
async fn bench_item(
    store: &dyn Store,
    run_id: &str,
) -> Result<Option<BenchItemRecord>, StoreError> {
    let Some((name, _)) = run_id.split_once('/') else {
        return Ok(None);
    };
    match store.bench_items(name).await {
        Ok(items) => Ok(items.into_iter().find(|i| i.run_id == run_id)),
        Err(StoreError::BenchNotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
