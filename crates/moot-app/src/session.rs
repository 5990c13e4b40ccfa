//! Running one debate — new or resumed — from a prepared configuration, team and spec: what
//! `moot ask`, `moot resume` and the server share.

use std::sync::Arc;

use anyhow::{Context, Result};
use moot_config::{Config, Field, Via};
use moot_core::debate::DebateSpec;
use moot_core::protocol::Protocol;
use moot_core::redact::Redactor;
use moot_engine::{DebateJob, DebateResult, DebateSetup, ForkSource, Observer, Start};
use moot_store::{CallRecord, Store};

use crate::agents::BuiltAgents;
use crate::error::InputError;
use crate::run_summary::RunSummary;
use crate::runner::{RanHere, Runner};

/// One debate ready to run: new (`restore: None`) or resumed from its stored calls.
pub struct Session<'a> {
    pub store: &'a dyn Store,
    pub run_id: String,
    pub config: Config,
    /// The debate's protocol, built once from `config` when the debate was prepared.
    pub protocol: Box<dyn Protocol>,
    pub spec: DebateSpec,
    pub agents: BuiltAgents,
    /// Stored calls of an interrupted run to resume from; `None` for a new run.
    pub restore: Option<Vec<CallRecord>>,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: Arc<Redactor>,
    /// The stored debate this one is a fork of (`moot fork`): new, or resumed with its calls
    /// in `restore`.
    pub fork: Option<ForkSource>,
    /// The front end that asked: how messages name what its user set.
    pub via: Via,
}

/// A debate that ran to its decision.
pub struct Finished {
    pub result: DebateResult,
    pub protocol: &'static str,
    pub agent_ids: Vec<String>,
    pub wall: std::time::Duration,
    /// The embedded model's throughput, when local agents ran.
    pub throughput: Option<String>,
    /// Where its transcript was saved (`[output] transcript_dir`), or why it could not be: the
    /// debate is stored either way, and each front end says so in its own place.
    pub transcript: Option<Result<std::path::PathBuf>>,
}

impl Finished {
    /// The summary as JSON (what `moot ask --json` prints), with where the transcript went:
    /// `"transcript_path"`, or why it could not be written, `"transcript_error"`.
    pub fn json(&self) -> serde_json::Value {
        let mut value = self.summary().json();
        match &self.transcript {
            Some(Ok(path)) => {
                value["transcript_path"] = serde_json::json!(path.display().to_string())
            }
            Some(Err(e)) => value["transcript_error"] = serde_json::json!(format!("{e:#}")),
            None => {}
        }
        value
    }

    /// The summary `moot ask` prints (as text or JSON).
    pub fn summary(&self) -> RunSummary<'_> {
        RunSummary {
            result: &self.result,
            protocol: self.protocol,
            agent_ids: self.agent_ids.clone(),
            wall: self.wall,
            throughput: self.throughput.clone(),
            lasting: true,
        }
    }
}

/// Runs (or resumes) a debate to its decision through the [`Runner`] its configuration asks
/// for (the sandbox when answers are code, the run log), and saves the transcript when the
/// configuration asks for one. `observer` hears every round and call; `on_created` is told the
/// run id once its row is stored (new runs) or its calls are folded back (resumed ones).
pub async fn run(
    s: Session<'_>,
    observer: &dyn Observer,
    on_created: &mut (dyn FnMut(&str) + Send),
) -> Result<Finished> {
    let protocol = s.protocol;
    let (rule, decision) = s.config.decision().map_err(InputError::from)?;
    let protocol_name = protocol.name();
    // What the summary shows: a deciding agent is named with its role.
    let shown_ids: Vec<String> = s
        .spec
        .agents
        .iter()
        .map(|a| match a.role {
            moot_core::debate::AgentRole::Debater => a.id.clone(),
            role => format!("{} [{}]", a.id, role.name()),
        })
        .collect();
    let start = match s.restore {
        Some(calls) => Start::Resume { calls },
        None => Start::New {
            config: serde_json::to_value(&s.config).context("serialising the configuration")?,
        },
    };
    let runner = Runner::for_config(
        &s.config,
        s.redactor.clone(),
        s.spec.kind == moot_core::answer::AnswerKind::Code,
        s.spec
            .tests
            .as_ref()
            .map(|_| s.via.name(Field::Tests))
            .as_deref(),
        s.via,
    )
    .await?;
    let job = DebateJob {
        setup: DebateSetup {
            run_id: s.run_id.clone(),
            spec: s.spec.clone(),
            protocol,
            agents: s.agents.engine.clone(),
            config: s.config.engine(),
            rule,
            store: s.store,
        },
        start,
        fork: s.fork,
        decision,
        bench_item: None,
    };
    // A configuration the engine refuses (a protocol that needs logprobs on a backend without
    // them, a topology that does not fit the agents) is bad input, not a failure; a protocol
    // that planned something impossible is a bug in moot (exit 1, its message says so).
    let RanHere { ran, wall } =
        runner
            .run_debate(job, observer, on_created)
            .await
            .map_err(|err| match err {
                moot_engine::EngineError::Config(m) => anyhow::Error::new(InputError(m)),
                other => other.into(),
            })?;
    let result = ran.result;
    let throughput = s.agents.throughput();
    let transcript = match &s.config.output.transcript_dir {
        Some(dir) => Some(
            save_transcript(
                s.store,
                dir,
                s.config.output.transcript_format,
                &result.run_id,
            )
            .await,
        ),
        None => None,
    };
    Ok(Finished {
        result,
        protocol: protocol_name,
        agent_ids: shown_ids,
        wall,
        throughput,
        transcript,
    })
}

/// Writes the stored run's transcript in freemad's format into `dir` (`[output]`).
async fn save_transcript(
    store: &dyn Store,
    dir: &std::path::Path,
    format: moot_config::TranscriptFormat,
    run_id: &str,
) -> Result<std::path::PathBuf> {
    let (run, calls, checks) = (
        store.run(run_id).await?,
        store.calls(run_id).await?,
        store.validations(run_id).await?,
    );
    let validations = moot_engine::validations_from(&checks);
    crate::transcript::write(dir, format, &run, &calls, &validations)
}
