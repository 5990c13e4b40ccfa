//! One debate run from the command line: an indicatif spinner on stderr that follows rounds
//! and calls, then the summary on stdout. What runs is `moot_app::session`'s.

use std::time::Duration;

use moot_core::debate::{CallKey, Outcome, Slot};
use moot_core::text::plural;

/// An indicatif spinner on stderr that follows rounds and calls.
pub struct Progress {
    bar: indicatif::ProgressBar,
    rounds: usize,
    /// The debate's agents by id, as the summary names them (agent numbers until known).
    ids: std::sync::Mutex<Vec<String>>,
    /// The round's calls that have not finished.
    running: std::sync::atomic::AtomicUsize,
    /// The round shown (`round 1/2`, `step 3`).
    round: std::sync::Mutex<String>,
}

impl Progress {
    pub fn new(rounds: usize, quiet: bool) -> Progress {
        let bar = if quiet {
            indicatif::ProgressBar::hidden()
        } else {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(120));
            b
        };
        Progress {
            bar,
            rounds,
            ids: std::sync::Mutex::new(Vec::new()),
            running: std::sync::atomic::AtomicUsize::new(0),
            round: std::sync::Mutex::new(String::new()),
        }
    }

    /// Names the agents by id from now on.
    pub fn agents(&self, ids: Vec<String>) {
        if let Ok(mut mine) = self.ids.lock() {
            *mine = ids;
        }
    }

    pub fn message(&self, m: &str) {
        self.bar
            .set_message(moot_core::escape::one_line(&crate::output::redact(m)).into_owned());
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// `agent alpha` (by id, as the summary names it), `agent 2` before the ids are known.
    fn agent(&self, index: usize) -> String {
        let id = self
            .ids
            .lock()
            .ok()
            .and_then(|ids| ids.get(index).cloned())
            .map(|id| moot_core::escape::terminal(&id).into_owned());
        format!("agent {}", id.unwrap_or_else(|| (index + 1).to_string()))
    }

    fn show_running(&self) {
        let running = self.running.load(std::sync::atomic::Ordering::Relaxed);
        let round = self.round.lock().map(|r| r.clone()).unwrap_or_default();
        self.bar
            .set_message(format!("{round} · {} running", plural(running, "call")));
    }
}

impl moot_engine::Observer for Progress {
    fn round_started(&self, round: usize, calls: usize) {
        // SVR-MAD's iterations come after its only grid round; they have no fixed count.
        let of = if round <= self.rounds {
            format!("round {round}/{}", self.rounds)
        } else {
            format!("step {round}")
        };
        if let Ok(mut shown) = self.round.lock() {
            *shown = of;
        }
        self.running
            .store(calls, std::sync::atomic::Ordering::Relaxed);
        self.show_running();
    }

    fn call_finished(&self, call: CallKey, outcome: Option<&Outcome>) {
        let what = match (call.slot, outcome) {
            (Slot::Judge(_), Some(o)) => {
                moot_core::protocol::JudgeLabel::describe(o.text()).to_string()
            }
            (
                _,
                Some(Outcome::Responded {
                    answer: Some(a), ..
                }),
            ) => a.canonical().to_string(),
            (_, Some(Outcome::Responded { answer: None, .. })) => "no answer".into(),
            (_, Some(Outcome::Missing { .. })) => "failed".into(),
            (_, Some(Outcome::Skipped { .. })) => "skipped".into(),
            (_, None) => "?".into(),
        };
        let who = match call.slot {
            Slot::Answer => self.agent(call.agent),
            Slot::Judge(author) => {
                format!("{} judges {}", self.agent(call.agent), self.agent(author))
            }
            Slot::Challenge(challenger) => format!(
                "{} challenged by {}",
                self.agent(call.agent),
                self.agent(challenger)
            ),
        };
        // Only calls still running are counted: a finished (or skipped) one leaves the count.
        let _ = self.running.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |n| n.checked_sub(1),
        );
        self.show_running();
        // The answer is model text: shown, never obeyed by the terminal.
        let line = format!("  round {} · {who}: {what}", call.round);
        self.bar
            .println(moot_core::escape::terminal(&crate::output::redact(&line)));
    }
}

/// Runs (or resumes) `session`, then prints its summary (text or JSON) and where its
/// transcript went; a debate in which no agent answered at all is a failure with each agent's
/// reason, not "no answer" and success (the run is stored and shown either way).
pub fn run_and_print(
    session: moot_app::session::Session<'_>,
    progress: Progress,
    json: bool,
    strict: bool,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
    progress.agents(session.spec.agents.iter().map(|a| a.id.clone()).collect());
    let finished = rt.block_on(moot_app::session::run(session, &progress, &mut |run_id| {
        if !json {
            errln!("run {run_id}");
        }
        progress.message(&format!("run {run_id}"));
    }));
    progress.finish();
    let mut finished = finished?;
    let summary = moot_app::run_summary::RunSummary {
        lasting: !crate::going_on::in_memory(),
        ..finished.summary()
    };
    // Said whatever the output format: a debate decided without an agent is not a clean run.
    let every_call_failed = finished.result.every_call_failed();
    let failure_lines = match every_call_failed {
        // The error says each agent's failure.
        Some(_) => Vec::new(),
        None => summary.failure_lines(),
    };
    for line in &failure_lines {
        errln!("moot: {}", moot_core::escape::terminal(line));
    }
    if json {
        outln!("{}", moot_core::escape::json(&finished.json().to_string()));
    } else {
        // The answer and its program are model text: shown, never obeyed by the terminal.
        out!("{}", moot_core::escape::terminal(&summary.text()));
    }
    match finished.transcript.take() {
        Some(Ok(path)) if !json => errln!("Transcript saved to: {}", path.display()),
        Some(Err(e)) => return Err(e),
        _ => {}
    }
    if let Some(failures) = every_call_failed {
        anyhow::bail!(
            "every agent failed (run {}): {}",
            finished.result.run_id,
            failures.join("; ")
        );
    }
    if strict && !failure_lines.is_empty() {
        anyhow::bail!(
            "--strict: {} failed (above); run {} is stored",
            moot_core::text::plural(failure_lines.len(), "agent"),
            finished.result.run_id
        );
    }
    Ok(())
}
