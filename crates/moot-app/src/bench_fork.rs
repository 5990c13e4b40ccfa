//! `moot bench --fork-of NAME --round R`: a benchmark each of whose debates is a fork (see
//! [`crate::fork`]) of the parent benchmark's debate of the same item under the same protocol,
//! with the same intervention on every item. Its report pairs each item's outcome with the
//! parent's (`moot_eval::fork_pairs`, added by [`crate::bench_report`]).
//!
//! `--say` takes a template: `{wrong}` is the item's defined wrong answer
//! (`moot_core::fork::wrong_answer`), `{gold}` its gold answer, `{answer}` the agent's own
//! answer of the round in the parent. `--say-wrong` is `--say` with [`SAY_WRONG_TEMPLATE`].
//! Items a fork cannot be made of are left out and listed with the reason: an item without a
//! defined wrong answer, an agent without a response to replace, a parent debate not finished.
//! Protocols that refuse the intervention at the round are left out whole, with their reason.
//! Running the same command again continues the fork benchmark: finished forks are kept,
//! interrupted ones resumed.

use anyhow::{Context, Result};
use futures::stream::{self, StreamExt};
use moot_config::{Config, Field, Via};
use moot_core::answer::{Answer, ExtractContext};
use moot_core::debate::DebateSpec;
use moot_core::fork::InterventionKind;
use moot_store::{
    BenchItemRecord, BenchRecord, ForkOrigin, RunRecord, RunStatus, Store, StoreError,
};
use serde_json::{json, Value};

use crate::error::{bad_input, kind_of, ErrorKind, InputError};
use crate::fork::{Change, ForkRequest};

/// What `--say-wrong` says: the item's defined wrong answer, stated as a final answer.
pub const SAY_WRONG_TEMPLATE: &str = "I have checked this again carefully.\nFinal answer: {wrong}";

/// The intervention made on every item, as the user names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchChange {
    Null,
    /// `template` with `{wrong}`, `{gold}` and `{answer}` filled in per item.
    Say {
        agent: String,
        template: String,
    },
    /// `--say-wrong`: [`SAY_WRONG_TEMPLATE`].
    SayWrong {
        agent: String,
    },
    Model {
        agent: String,
        model: String,
    },
}

impl BenchChange {
    /// The change a front end's arguments ask for: at most one of `say`, `say_wrong` and
    /// `model`, each needing the `agent` it changes (none of them: the null fork, which
    /// resamples the round).
    pub fn from_parts(
        agent: Option<String>,
        say: Option<String>,
        say_wrong: bool,
        model: Option<String>,
        via: Via,
    ) -> Result<BenchChange, InputError> {
        let agent = crate::fork::changed_agent(
            agent,
            &[
                (say.is_some(), Field::ForkSay),
                (say_wrong, Field::SayWrong),
                (model.is_some(), Field::ForkModel),
            ],
            via,
        )?;
        Ok(match (say, say_wrong, model) {
            (Some(template), _, _) => BenchChange::Say { agent, template },
            (None, true, _) => BenchChange::SayWrong { agent },
            (None, false, Some(model)) => BenchChange::Model { agent, model },
            (None, false, None) => BenchChange::Null,
        })
    }
}

impl BenchChange {
    fn kind(&self) -> InterventionKind {
        match self {
            BenchChange::Null => InterventionKind::Null,
            BenchChange::Say { .. } | BenchChange::SayWrong { .. } => InterventionKind::Say,
            BenchChange::Model { .. } => InterventionKind::Model,
        }
    }

    /// How the benchmark records it (its [`ForkOrigin::intervention`]).
    fn json(&self) -> Value {
        match self {
            BenchChange::Null => json!({"kind": "null"}),
            BenchChange::Say { agent, template } => {
                json!({"kind": "say", "agent": agent, "template": template})
            }
            BenchChange::SayWrong { agent } => {
                json!({"kind": "say-wrong", "agent": agent, "template": SAY_WRONG_TEMPLATE})
            }
            BenchChange::Model { agent, model } => {
                json!({"kind": "model", "agent": agent, "model": model})
            }
        }
    }

    /// The name a fork benchmark gets by default.
    fn short(&self) -> &'static str {
        match self {
            BenchChange::Null => "null",
            BenchChange::Say { .. } => "say",
            BenchChange::SayWrong { .. } => "say-wrong",
            BenchChange::Model { .. } => "model",
        }
    }
}

/// A fork benchmark to make (or continue).
#[derive(Debug, Clone)]
pub struct BenchForkRequest {
    /// The front end that asked: how messages name what its user set.
    pub via: moot_config::Via,
    /// The parent benchmark's name.
    pub parent: String,
    pub round: usize,
    pub change: BenchChange,
    /// The fork benchmark's name (default: `PARENT-fork-rR-KIND`).
    pub name: Option<String>,
    /// Debates in flight at once.
    pub concurrency: usize,
    /// This machine's configuration (`--config`): what may run, where requests go and the
    /// limits, agents that take the place of the parent's of the same id, and the agents
    /// `--model` may name (see [`crate::fork::ForkRequest::local`]).
    pub local: Option<Config>,
}

/// An item of the parent left out of the fork, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LeftOut {
    pub protocol: String,
    pub item_id: String,
    pub reason: String,
}

/// What making a fork benchmark did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchForked {
    pub name: String,
    pub parent: String,
    /// Protocols of the parent left out whole: (protocol, reason).
    pub refused: Vec<(String, String)>,
    pub left_out: Vec<LeftOut>,
    /// Debates forked now, and those read back finished from an earlier run.
    pub forked: usize,
    pub read_back: usize,
}

impl BenchForked {
    /// The fork benchmark's report, paired with its parent's (what `moot report` gives of it),
    /// as JSON with this run of the fork under `"fork_run"`: what `moot bench --fork-of --json`
    /// prints and Python's `moot.fork_bench` returns.
    pub async fn report_json(&self, store: &dyn Store, via: Via) -> Result<Value> {
        let report = self.report(store, via).await?;
        let mut value = serde_json::to_value(&report).context("serialising the report")?;
        value["fork_run"] = serde_json::to_value(self).context("serialising the report")?;
        Ok(value)
    }

    /// The fork benchmark's report, paired with its parent's.
    pub async fn report(&self, store: &dyn Store, via: Via) -> Result<moot_eval::report::Report> {
        crate::bench_report::report(store, std::slice::from_ref(&self.name), false, via).await
    }
}

/// How one item's fork ended.
enum Outcome {
    Forked,
    ReadBack,
    LeftOut(LeftOut),
}

/// Makes (or continues) the fork benchmark `request` asks for; `on_item` hears each debate as
/// it ends (protocol, whether it was forked or read back), `on_notice` each stored limit that
/// this machine's bounds. Refused when the first debate of a protocol has a stored
/// configuration this machine does not admit ([`crate::stored::admit`]); a later debate that
/// is not admitted is left out with the reason.
pub async fn run(
    store: &dyn Store,
    request: &BenchForkRequest,
    on_item: &mut dyn FnMut(&str, bool),
    on_notice: &mut dyn FnMut(&str),
) -> Result<BenchForked> {
    let parent = match store.bench(&request.parent).await {
        Ok(b) => b,
        Err(StoreError::BenchNotFound(_)) => {
            return bad_input(format!(
                "no benchmark named {:?} in the store to fork",
                request.parent
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let name = request.name.clone().unwrap_or_else(|| {
        format!(
            "{}-fork-r{}-{}",
            parent.name,
            request.round,
            request.change.short()
        )
    });
    if name.contains('/') || name.trim().is_empty() {
        return bad_input(format!(
            "benchmark name {name:?}: it must not be empty nor contain '/' (debate ids are NAME/PROTOCOL/ITEM)"
        ));
    }
    let origin = ForkOrigin {
        parent: parent.name.clone(),
        round: request.round as u32,
        intervention: request.change.json(),
    };
    let links = store.bench_runs(&parent.name).await?;
    // Each protocol is checked once, on its first debate: the declaration and the round.
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut protocols: Vec<String> = Vec::new();
    let local = request.local.clone().unwrap_or_default();
    for p in &parent.protocols {
        let Some((_, run)) = links.iter().find(|(l, _)| &l.protocol == p) else {
            continue;
        };
        crate::stored::admit(
            crate::stored::Stored::Run(run),
            &local,
            crate::stored::Work::Debate,
            request.via,
            on_notice,
        )?;
        match crate::fork::refusal(run, request.round, request.change.kind())? {
            Some(reason) => refused.push((p.clone(), reason)),
            None => protocols.push(p.clone()),
        }
    }
    if protocols.is_empty() {
        let reasons: Vec<String> = refused.iter().map(|(_, r)| r.clone()).collect();
        return bad_input(format!(
            "no protocol of benchmark {} can be forked so: {}",
            parent.name,
            if reasons.is_empty() {
                "it has no debates".to_string()
            } else {
                reasons.join("; ")
            }
        ));
    }
    ensure_fork_bench(store, &parent, &name, &protocols, origin, request.via).await?;
    let jobs: Vec<&(BenchItemRecord, RunRecord)> = links
        .iter()
        .filter(|(l, _)| protocols.contains(&l.protocol))
        .collect();
    let mut running = stream::iter(
        jobs.into_iter()
            .map(|(link, run)| fork_item(store, request, &name, link, run)),
    )
    .buffer_unordered(request.concurrency.max(1));
    let mut done = BenchForked {
        name: name.clone(),
        parent: parent.name.clone(),
        refused,
        left_out: Vec::new(),
        forked: 0,
        read_back: 0,
    };
    while let Some(outcome) = running.next().await {
        let (protocol, outcome): (String, Outcome) = outcome?;
        match (protocol, outcome) {
            (protocol, Outcome::Forked) => {
                done.forked += 1;
                on_item(&protocol, true);
            }
            (protocol, Outcome::ReadBack) => {
                done.read_back += 1;
                on_item(&protocol, false);
            }
            (_, Outcome::LeftOut(l)) => done.left_out.push(l),
        }
    }
    done.left_out
        .sort_by(|a, b| (&a.protocol, &a.item_id).cmp(&(&b.protocol, &b.item_id)));
    Ok(done)
}

/// Creates the fork benchmark, or checks that the one stored under `name` is this fork.
async fn ensure_fork_bench(
    store: &dyn Store,
    parent: &BenchRecord,
    name: &str,
    protocols: &[String],
    origin: ForkOrigin,
    via: moot_config::Via,
) -> Result<()> {
    match store.bench(name).await {
        Ok(existing) if existing.fork.as_ref() == Some(&origin) && existing.protocols == protocols => {
            Ok(())
        }
        Ok(existing) if existing.fork.as_ref() == Some(&origin) => bad_input(format!(
            "benchmark {name:?} already exists as this fork of {} under protocols {}, not {}: one name holds one benchmark; choose another name ({})",
            parent.name,
            existing.protocols.join(","),
            protocols.join(","),
            via.name(moot_config::Field::BenchName)
        )),
        Ok(_) => bad_input(format!(
            "benchmark {name:?} already exists and is not this fork of {}: choose another name ({})",
            parent.name,
            via.name(moot_config::Field::BenchName)
        )),
        Err(StoreError::BenchNotFound(_)) => {
            store
                .create_bench(&BenchRecord {
                    name: name.to_string(),
                    created_at: moot_engine::timestamp(),
                    dataset: parent.dataset.clone(),
                    protocols: protocols.to_vec(),
                    limit: parent.limit,
                    seed: parent.seed,
                    config: parent.config.clone(),
                    fork: Some(origin),
                    left_out: parent.left_out.clone(),
                })
                .await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// The fork of one parent debate: read back when it finished earlier, resumed when it was
/// interrupted, else made and run; then linked to the fork benchmark.
async fn fork_item(
    store: &dyn Store,
    request: &BenchForkRequest,
    name: &str,
    link: &BenchItemRecord,
    parent_run: &RunRecord,
) -> Result<(String, Outcome)> {
    let id = moot_eval::bench::run_id(name, &link.protocol, &link.item_id);
    let left_out = |reason: String| {
        Ok((
            link.protocol.clone(),
            Outcome::LeftOut(LeftOut {
                protocol: link.protocol.clone(),
                item_id: link.item_id.clone(),
                reason,
            }),
        ))
    };
    let outcome = match store.run(&id).await {
        Ok(run) if run.status == RunStatus::Done => Outcome::ReadBack,
        Ok(run) if run.status == RunStatus::Failed => {
            return left_out(format!("its fork {id} failed earlier"))
        }
        Ok(run) if !run.interrupted() => {
            return left_out(format!("its fork {id} is still running in another process"))
        }
        Ok(_) => {
            let options = crate::resume::ResumeOptions {
                via: request.via,
                concurrency: 1,
                data_dir: None,
                no_cache: false,
                progress: false,
                force: false,
                local: request.local.clone().unwrap_or_default(),
            };
            let crate::resume::Resumption::Run(resumed) =
                crate::resume::resume(store, &id, options, &mut |_| {}).await?
            else {
                return left_out(format!("{id} is not a debate"));
            };
            let session = resumed.session(store, &mut |_| {})?;
            crate::session::run(session, &moot_engine::NoObserver, &mut |_| {}).await?;
            Outcome::Forked
        }
        Err(StoreError::RunNotFound(_)) => {
            if parent_run.status != RunStatus::Done {
                return left_out(format!(
                    "the parent debate {} is {}",
                    parent_run.id,
                    parent_run.shown_status()
                ));
            }
            let change = match item_change(
                store,
                &request.change,
                request.round,
                parent_run,
                &link.gold,
                request.via,
            )
            .await?
            {
                Ok(change) => change,
                Err(reason) => return left_out(reason),
            };
            let fork = ForkRequest {
                via: request.via,
                parent: parent_run.id.clone(),
                round: request.round,
                change,
                local: request.local.clone(),
                run_id: Some(id.clone()),
            };
            let made = async {
                let forked = crate::fork::prepare(store, fork, &mut |_| {}).await?;
                crate::session::run(forked.session, &moot_engine::NoObserver, &mut |_| {}).await
            };
            match made.await {
                Ok(_) => Outcome::Forked,
                // What the user could fix about this item is said, and the item left out.
                Err(e) if kind_of(&e) == ErrorKind::Input => return left_out(format!("{e:#}")),
                Err(e) => return Err(e.context(format!("forking {}", parent_run.id))),
            }
        }
        Err(e) => return Err(e.into()),
    };
    store
        .record_bench_item(&BenchItemRecord {
            bench: name.to_string(),
            protocol: link.protocol.clone(),
            item_id: link.item_id.clone(),
            position: link.position,
            gold: link.gold.clone(),
            run_id: id,
        })
        .await?;
    Ok((link.protocol.clone(), outcome))
}

/// The change for one item's debate: the template filled in for `say`; `Err(reason)` when the
/// item has no value for one of its placeholders.
async fn item_change(
    store: &dyn Store,
    change: &BenchChange,
    round: usize,
    parent_run: &RunRecord,
    gold: &str,
    via: moot_config::Via,
) -> Result<Result<Change, String>> {
    let (agent, template) = match change {
        BenchChange::Null => return Ok(Ok(Change::Null)),
        BenchChange::Model { agent, model } => {
            return Ok(Ok(Change::Model {
                agent: agent.clone(),
                model: model.clone(),
            }))
        }
        BenchChange::Say { agent, template } => (agent, template.as_str()),
        BenchChange::SayWrong { agent } => (agent, SAY_WRONG_TEMPLATE),
    };
    let spec: DebateSpec = serde_json::from_value(parent_run.spec.clone()).with_context(|| {
        format!(
            "run {}: the stored debate spec is unreadable",
            parent_run.id
        )
    })?;
    let at = crate::fork::agent_index(&spec, agent, via).map_err(anyhow::Error::new)?;
    let calls = store.calls(&parent_run.id).await?;
    let ctx = ExtractContext {
        choices: &spec.choices,
    };
    let mut text = template.to_string();
    if text.contains("{wrong}") {
        let Some(gold_answer) = Answer::parse(spec.kind, gold, &ctx) else {
            return Ok(Err(format!("its gold answer {gold:?} does not read")));
        };
        let round0: Vec<Answer> = calls
            .iter()
            .filter(|c| c.round == 0 && c.slot == "answer")
            .filter_map(|c| c.answer.as_deref())
            .filter_map(|a| Answer::parse(spec.kind, a, &ctx))
            .collect();
        match moot_core::fork::wrong_answer(spec.kind, &gold_answer, &spec.choices, &round0) {
            Some(wrong) => text = text.replace("{wrong}", wrong.canonical()),
            None if spec.kind == moot_core::AnswerKind::Code => {
                return Ok(Err(
                    "a code item has no defined wrong answer: a program is no value to say".into(),
                ))
            }
            None => {
                return Ok(Err(
                    "it has no defined wrong answer (no wrong round-0 answer to take)".into(),
                ))
            }
        }
    }
    if text.contains("{answer}") {
        let own = calls
            .iter()
            .find(|c| c.round as usize == round && c.agent as usize == at && c.slot == "answer")
            .and_then(|c| c.answer.clone())
            .unwrap_or_default();
        text = text.replace("{answer}", &own);
    }
    text = text.replace("{gold}", gold);
    Ok(Ok(Change::Say {
        agent: agent.clone(),
        text,
    }))
}
