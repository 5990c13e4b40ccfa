//! Running one debate — new or resumed — from a prepared configuration, team and spec, and
//! printing its summary: what `ask` and `resume` share.

use std::time::Instant;

use anyhow::{Context, Result};
use moot_config::{Config, LogLevel};
use moot_core::debate::DebateSpec;
use moot_engine::Debate;
use moot_store::{CallRecord, Store};

use crate::backends;
use crate::input::InputError;
use crate::report::{Progress, RunSummary};

pub struct Execution<'a> {
    pub store: &'a dyn Store,
    pub rt: &'a tokio::runtime::Runtime,
    pub run_id: String,
    pub config: Config,
    pub spec: DebateSpec,
    pub agents: backends::Agents,
    /// Stored calls of an interrupted run to resume from; `None` for a new run.
    pub restore: Option<Vec<CallRecord>>,
    pub json: bool,
    pub progress: Progress,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: std::sync::Arc<moot_core::redact::Redactor>,
}

/// Runs (or resumes) a debate and prints its summary.
pub fn execute(e: Execution<'_>) -> Result<()> {
    let protocol = e.config.build_protocol().map_err(InputError::from)?;
    let (rule, decision_config) = e.config.decision().map_err(InputError::from)?;
    let rule = rule.unwrap_or_else(|| protocol.default_rule());
    let engine_config = e.config.engine();
    let protocol_name = protocol.name();
    let agent_ids: Vec<String> = e.spec.agents.iter().map(|a| a.id.clone()).collect();
    let config_json = serde_json::to_value(&e.config).context("serialising the configuration")?;
    let redactor = e.redactor.clone();
    let sandbox = e.rt.block_on(crate::sandbox::for_code(
        &e.config,
        e.spec.kind == moot_core::answer::AnswerKind::Code,
        e.spec.tests.as_ref().map(|_| "--tests"),
    ))?;
    let log =
        crate::run_log::RunLog::open(&e.config.logging, e.redactor.clone(), agent_ids.clone())?;
    if let Some(log) = &log {
        log_start(log, &e.run_id, protocol_name, &e.spec, e.restore.is_some());
    }
    let mut observers: Vec<&dyn moot_engine::Observer> = vec![&e.progress];
    if let Some(log) = &log {
        observers.push(log);
    }
    let observers = moot_engine::Observers(observers);
    let started = Instant::now();
    let result = e.rt.block_on(async {
        let mut debate = Debate::new(
            e.run_id.clone(),
            e.spec.clone(),
            protocol,
            e.agents.engine.clone(),
            engine_config,
            e.store,
        )?
        .with_redactor(redactor)
        .with_sandbox(sandbox);
        match e.restore {
            Some(calls) => debate.restore(calls),
            None => debate.create(rule, config_json).await?,
        }
        if !e.json {
            eprintln!("run {}", e.run_id);
        }
        e.progress.message(&format!("run {}", e.run_id));
        debate.run(rule, &decision_config, &observers).await
    });
    e.progress.finish();
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
    let throughput = e.agents.local.first().map(|m| {
        let s = m.stats();
        let gen = s
            .generation_tokens_per_second()
            .map_or("n/a".to_string(), |t| format!("{t:.1}"));
        format!(
            "Embedded model: {gen} tok/s generating (all agents together), prompt tokens sent {} / processed {}",
            s.prompt_tokens, s.processed_prompt_tokens
        )
    });
    let summary = RunSummary {
        result: &result,
        protocol: protocol_name,
        agent_ids,
        wall,
        throughput,
    };
    if e.json {
        outln!("{}", summary.json());
    } else {
        // The answer and its program are model text: shown, never obeyed by the terminal.
        out!("{}", moot_core::escape::terminal(&summary.text()));
    }
    if let Some(dir) = &e.config.output.transcript_dir {
        let path = e.rt.block_on(save_transcript(
            e.store,
            dir,
            e.config.output.transcript_format,
            &result.run_id,
        ))?;
        if !e.json {
            eprintln!("Transcript saved to: {}", path.display());
        }
    }
    // The run is stored and shown either way; a debate in which no agent answered at all is a
    // failure, with each agent's reason, not "no answer" and success.
    if let Some(failures) = result.every_call_failed() {
        anyhow::bail!(
            "every agent failed (run {}): {}",
            result.run_id,
            failures.join("; ")
        );
    }
    Ok(())
}

/// The start of a run in its log.
pub(crate) fn log_start(
    log: &crate::run_log::RunLog,
    run_id: &str,
    protocol: &str,
    spec: &DebateSpec,
    resumed: bool,
) {
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
pub(crate) fn log_outcome(
    log: &crate::run_log::RunLog,
    result: &moot_engine::DebateResult,
    wall: std::time::Duration,
) {
    for (i, program) in crate::report::programs(result).iter().enumerate() {
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
pub(crate) async fn save_transcript(
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
    crate::freemad_transcript::write(dir, format, &run, &calls, &validations)
}
