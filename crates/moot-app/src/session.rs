//! Running one debate — new or resumed — from a prepared configuration, team and spec: what
//! `moot ask`, `moot resume` and the server share.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use moot_config::{Config, LogLevel};
use moot_core::debate::DebateSpec;
use moot_core::redact::Redactor;
use moot_engine::{DebateResult, DebateSetup, ForkSource, Observer};
use moot_store::{CallRecord, Store};

use crate::agents::BuiltAgents;
use crate::error::InputError;
use crate::run_log::RunLog;
use crate::summary::RunSummary;

/// One debate ready to run: new (`restore: None`) or resumed from its stored calls.
pub struct Session<'a> {
    pub store: &'a dyn Store,
    pub run_id: String,
    pub config: Config,
    pub spec: DebateSpec,
    pub agents: BuiltAgents,
    /// Stored calls of an interrupted run to resume from; `None` for a new run.
    pub restore: Option<Vec<CallRecord>>,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: Arc<Redactor>,
    /// The stored debate this one is a fork of (`moot fork`): new, or resumed with its calls
    /// in `restore`.
    pub fork: Option<ForkSource>,
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
    /// The summary `moot ask` prints (as text or JSON).
    pub fn summary(&self) -> RunSummary<'_> {
        RunSummary {
            result: &self.result,
            protocol: self.protocol,
            agent_ids: self.agent_ids.clone(),
            wall: self.wall,
            throughput: self.throughput.clone(),
        }
    }
}

/// Runs (or resumes) a debate to its decision: checks code in the sandbox when answers are
/// code, writes the run log, and saves the transcript when the configuration asks for one.
/// `observer` hears every round and call; `on_created` is told the run id once its row is
/// stored (new runs) or its calls are folded back (resumed ones).
pub async fn run(
    s: Session<'_>,
    observer: &dyn Observer,
    on_created: &mut dyn FnMut(&str),
) -> Result<Finished> {
    let protocol = s.config.build_protocol().map_err(InputError::from)?;
    let (rule, decision_config) = s.config.decision().map_err(InputError::from)?;
    let engine_config = s.config.engine();
    let protocol_name = protocol.name();
    let agent_ids: Vec<String> = s.spec.agents.iter().map(|a| a.id.clone()).collect();
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
    let config_json = serde_json::to_value(&s.config).context("serialising the configuration")?;
    let sandbox = crate::sandbox::for_code(
        &s.config,
        s.spec.kind == moot_core::answer::AnswerKind::Code,
        s.spec.tests.as_ref().map(|_| "--tests"),
    )
    .await?;
    let log = RunLog::open(&s.config.logging, s.redactor.clone(), agent_ids)?;
    if let Some(log) = &log {
        log_start(log, &s.run_id, protocol_name, &s.spec, s.restore.is_some());
    }
    let mut observers: Vec<&dyn Observer> = vec![observer];
    if let Some(log) = &log {
        observers.push(log);
    }
    let observers = moot_engine::Observers(observers);
    let started = Instant::now();
    let result = async {
        let mut debate = DebateSetup {
            run_id: s.run_id.clone(),
            spec: s.spec.clone(),
            protocol,
            agents: s.agents.engine.clone(),
            config: engine_config,
            rule,
            store: s.store,
        }
        .build()?
        .with_redactor(s.redactor.clone())
        .with_sandbox(sandbox);
        if let Some(fork) = s.fork {
            debate = debate.with_fork(fork)?;
        }
        match s.restore {
            Some(calls) => debate.restore(calls),
            None => debate.create(config_json).await?,
        }
        on_created(&s.run_id);
        debate.run(&decision_config, &observers).await
    }
    .await;
    // A configuration the engine refuses (a protocol that needs logprobs on a backend without
    // them, a topology that does not fit the agents) is bad input, not a failure; a protocol
    // that planned something impossible is a bug in moot (exit 1, its message says so).
    let result = result.map_err(|err| match err {
        moot_engine::EngineError::Config(m) => anyhow::Error::new(InputError(m)),
        other => other.into(),
    })?;
    let wall = started.elapsed();
    if let Some(log) = &log {
        log_outcome(log, &result, wall);
    }
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

/// The start of a run in its log.
fn log_start(log: &RunLog, run_id: &str, protocol: &str, spec: &DebateSpec, resumed: bool) {
    log.event(
        LogLevel::Info,
        "run_start",
        &[
            ("run", run_id.to_string()),
            ("protocol", protocol.to_string()),
            ("agents", spec.agents.len().to_string()),
            ("rounds", spec.rounds.to_string()),
            ("resumed", resumed.to_string()),
            ("question", spec.question.clone()),
        ],
    );
}

/// The end of a run in its log: each program's checks, then the decision.
fn log_outcome(log: &RunLog, result: &moot_engine::DebateResult, wall: std::time::Duration) {
    for (i, program) in crate::summary::programs(result).iter().enumerate() {
        let Some(checks) = result.validations.get(program) else {
            continue;
        };
        log.event(
            LogLevel::Debug,
            "validation_program",
            &[
                ("program", format!("P{}", i + 1)),
                ("code", program.clone()),
            ],
        );
        for c in checks {
            let level = if c.passed() {
                LogLevel::Info
            } else {
                LogLevel::Warning
            };
            log.event(
                level,
                "validation_done",
                &[
                    ("program", format!("P{}", i + 1)),
                    ("check", c.check.name().to_string()),
                    ("verdict", c.verdict.name().to_string()),
                    ("detail", c.detail.clone()),
                    ("elapsed_ms", c.elapsed_ms.to_string()),
                ],
            );
        }
    }
    let answer = result
        .decision()
        .and_then(|d| d.answer.as_ref())
        .map_or("(no answer)".to_string(), |a| a.canonical().to_string());
    log.event(
        LogLevel::Info,
        "run_end",
        &[
            ("run", result.run_id.clone()),
            ("rule", result.chosen.to_string()),
            ("answer", answer),
            ("wall_ms", wall.as_millis().to_string()),
        ],
    );
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
