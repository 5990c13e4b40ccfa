//! The runner every debate goes through: `moot ask`, `moot resume`, `moot fork`, the server,
//! Python, a benchmark's items (run, resumed or worked) and forks, and sweeps. It runs a
//! [`DebateJob`] with what the configuration asks around it — the redactor, the code sandbox,
//! the run log of `[logging]` — so that these apply the same whoever asked for the debate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use moot_config::{Config, LogLevel};
use moot_core::redact::Redactor;
use moot_engine::{DebateJob, DebateRunner, EngineError, Observer, Ran, Surroundings};

use crate::run_log::{LogFile, RunLog};

/// Runs debates with a configuration's surroundings; made once and shared by every debate of
/// a command (a benchmark's run at once and write one log).
pub struct Runner {
    with: Surroundings,
    log: Option<LogFile>,
}

/// A debate that ran, and how long it took.
pub struct RanHere {
    pub ran: Ran,
    pub wall: Duration,
}

impl Runner {
    /// The runner `config` asks for: its log opened for appending (`[logging]`), and the
    /// sandbox checking code answers when `code` says debates answer with code (see
    /// [`crate::sandbox::for_code`]; `tests` names where their tests come from, `via` the
    /// front end that asked).
    pub async fn for_config(
        config: &Config,
        redactor: Arc<Redactor>,
        code: bool,
        tests: Option<&str>,
        via: moot_config::Via,
    ) -> Result<Runner> {
        let sandbox = crate::sandbox::for_code(config, code, tests, via).await?;
        let log = LogFile::open(&config.logging, redactor.clone())?;
        Ok(Runner {
            with: Surroundings { redactor, sandbox },
            log,
        })
    }

    /// A runner with a redactor and nothing else: no sandbox, no log (sweeps' simulated
    /// debates, which a configuration does not describe).
    pub fn bare(redactor: Arc<Redactor>) -> Runner {
        Runner {
            with: Surroundings {
                redactor,
                sandbox: None,
            },
            log: None,
        }
    }

    /// Runs `job` to its decision; see [`DebateRunner::run`].
    pub async fn run_debate(
        &self,
        job: DebateJob<'_>,
        observer: &dyn Observer,
        on_stored: &mut (dyn FnMut(&str) + Send),
    ) -> Result<RanHere, EngineError> {
        let log = self.log.as_ref().map(|file| {
            let agents = job.setup.spec.agents.iter().map(|a| a.id.clone()).collect();
            let log = RunLog::new(file, &job.setup.run_id, agents);
            log.event(
                LogLevel::Info,
                "run_start",
                &[
                    ("protocol", job.setup.protocol.name().to_string()),
                    ("agents", job.setup.spec.agents.len().to_string()),
                    ("rounds", job.setup.spec.rounds.to_string()),
                    ("resumed", job.start.is_resume().to_string()),
                    ("question", job.setup.spec.question.clone()),
                ],
            );
            log
        });
        let mut observers: Vec<&dyn Observer> = vec![observer];
        if let Some(log) = &log {
            observers.push(log);
        }
        let observers = moot_engine::Observers(observers);
        let started = Instant::now();
        let ran = moot_engine::run_job(job, &self.with, &observers, on_stored).await?;
        let wall = started.elapsed();
        if let Some(log) = &log {
            log_outcome(log, &ran.result, wall);
        }
        Ok(RanHere { ran, wall })
    }
}

#[async_trait::async_trait]
impl DebateRunner for Runner {
    async fn run(
        &self,
        job: DebateJob<'_>,
        observer: &dyn Observer,
        on_stored: &mut (dyn for<'r> FnMut(&'r str) + Send),
    ) -> Result<Ran, EngineError> {
        Ok(self.run_debate(job, observer, on_stored).await?.ran)
    }
}

/// The end of a run in its log: each program's checks, then the decision.
fn log_outcome(log: &RunLog, result: &moot_engine::DebateResult, wall: Duration) {
    for (i, group) in crate::run_summary::programs(result).iter().enumerate() {
        let program = &group.shown;
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
            ("rule", result.chosen.to_string()),
            ("answer", answer),
            ("wall_ms", wall.as_millis().to_string()),
        ],
    );
}
