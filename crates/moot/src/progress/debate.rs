//! One debate run from the command line: an indicatif spinner on stderr that follows rounds
//! and calls, then the summary on stdout. What runs is `moot_app::session`'s.

use std::time::Duration;

use moot_core::debate::{CallKey, Outcome, Slot};
use moot_core::text::plural;

/// An indicatif spinner on stderr that follows rounds and calls.
pub struct Progress {
    bar: indicatif::ProgressBar,
    rounds: usize,
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
        Progress { bar, rounds }
    }

    pub fn message(&self, m: &str) {
        self.bar.set_message(crate::output::redact(m).into_owned());
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
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
        self.bar
            .set_message(format!("{of} · {} running", plural(calls, "call")));
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
            (_, Some(Outcome::Missing { .. })) => "missing".into(),
            (_, Some(Outcome::Skipped { .. })) => "skipped".into(),
            (_, None) => "?".into(),
        };
        let who = match call.slot {
            Slot::Answer => format!("agent {}", call.agent + 1),
            Slot::Judge(author) => {
                format!("agent {} judges agent {}", call.agent + 1, author + 1)
            }
            Slot::Challenge(challenger) => format!(
                "agent {} challenged by agent {}",
                call.agent + 1,
                challenger + 1
            ),
        };
        self.bar.println(crate::output::redact(&format!(
            "  round {} · {who}: {what}",
            call.round
        )));
    }
}

/// Runs (or resumes) `session`, then prints its summary (text or JSON) and where its
/// transcript went; a debate in which no agent answered at all is a failure with each agent's
/// reason, not "no answer" and success (the run is stored and shown either way).
pub fn run_and_print(
    session: moot_app::session::Session<'_>,
    progress: Progress,
    json: bool,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
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
    if let Some(failures) = finished.result.every_call_failed() {
        anyhow::bail!(
            "every agent failed (run {}): {}",
            finished.result.run_id,
            failures.join("; ")
        );
    }
    Ok(())
}
