//! Progress of long work (`bench`, `bench --fork-of`, `resume`, `sweep`, `store copy`,
//! `import`) on standard error, one way for every command: on a terminal, a bar per row with
//! its count, elapsed time, rate and time left; where standard error is not a terminal (a log
//! file, a pipe, CI), a plain line at least every [`BEAT`], so that a log shows the work is
//! alive and how far it is even while nothing finishes.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a line is printed when standard error is not a terminal.
pub const BEAT: Duration = Duration::from_secs(10);

/// Bars of one piece of work; the heartbeat thread (not on a terminal) ends with it.
pub struct Meter {
    bars: Vec<ProgressBar>,
    _multi: MultiProgress,
    beat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Meter {
    /// A meter for `what` (`benchmark B`, `sweep S`) with one row per `(name, total)`; a
    /// total of `None` counts without one (no ETA). `quiet`: nothing is shown (`--json`
    /// output keeps standard error for errors only).
    pub fn new(what: &str, rows: &[(String, Option<u64>)], quiet: bool) -> Meter {
        let terminal = std::io::stderr().is_terminal();
        let multi = MultiProgress::with_draw_target(if quiet || !terminal {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        let width = rows
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0);
        let bars: Vec<ProgressBar> = rows
            .iter()
            .map(|(name, total)| {
                let template = match total {
                    Some(_) => format!(
                        "{{prefix:>{width}}} {{bar:24}} {{pos}}/{{len}} · {{elapsed}} · {{per_sec}} · ETA {{eta}} {{msg}}"
                    ),
                    None => format!(
                        "{{prefix:>{width}}} {{spinner}} {{pos}} · {{elapsed}} · {{per_sec}} {{msg}}"
                    ),
                };
                let bar = multi.add(match total {
                    Some(n) => ProgressBar::new(*n),
                    None => ProgressBar::no_length(),
                });
                bar.set_style(
                    ProgressStyle::with_template(&template)
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_prefix(name.clone());
                if total.is_none() && terminal && !quiet {
                    bar.enable_steady_tick(Duration::from_millis(200));
                }
                bar
            })
            .collect();
        let beat = (!quiet && !terminal).then(|| heartbeat(what.to_string(), bars.clone()));
        Meter {
            bars,
            _multi: multi,
            beat,
        }
    }

    /// Row `i`'s bar (position, length and message are set on it).
    pub fn bar(&self, i: usize) -> Option<&ProgressBar> {
        self.bars.get(i)
    }

    /// Runs `f` with the bars hidden, for a line printed while they show.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self._multi.suspend(f)
    }

    /// Clears the bars and ends the heartbeat.
    pub fn finish(&mut self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
        if let Some((stop, thread)) = self.beat.take() {
            drop(stop);
            let _ = thread.join();
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Prints `what`'s rows every [`BEAT`] until the sender is dropped.
fn heartbeat(what: String, bars: Vec<ProgressBar>) -> (mpsc::Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(BEAT) {
            let rows: Vec<String> = bars.iter().map(line).collect();
            errln!("{what}: {}", rows.join("; "));
        }
    });
    (stop, thread)
}

/// `som 40/200 · 1.2/s · 33 s elapsed · ETA 2 min 13 s · accuracy 30/40`.
pub fn line(bar: &ProgressBar) -> String {
    let mut parts = Vec::new();
    let prefix = bar.prefix();
    let count = match bar.length() {
        Some(n) => format!("{}/{n}", bar.position()),
        None => bar.position().to_string(),
    };
    parts.push(if prefix.is_empty() {
        count
    } else {
        format!("{prefix} {count}")
    });
    parts.push(format!("{:.1}/s", bar.per_sec()));
    parts.push(format!("{} elapsed", duration(bar.elapsed())));
    if bar.length().is_some_and(|n| n > bar.position()) && bar.position() > 0 {
        parts.push(format!("ETA {}", duration(bar.eta())));
    }
    let message = bar.message();
    if !message.is_empty() {
        parts.push(message);
    }
    parts.join(" · ")
}

/// `45 s`, `2 min 13 s`, `1 h 05 min`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(Duration::from_secs(45)), "45 s");
        assert_eq!(duration(Duration::from_secs(133)), "2 min 13 s");
        assert_eq!(duration(Duration::from_secs(3900)), "1 h 05 min");
    }

    #[test]
    fn a_line_gives_the_count_rate_elapsed_time_and_what_the_row_says() {
        let bar = ProgressBar::hidden();
        bar.set_length(200);
        bar.set_prefix("som");
        bar.set_position(40);
        bar.set_message("accuracy 30/40");
        let text = line(&bar);
        assert!(text.starts_with("som 40/200 · "), "{text}");
        assert!(text.contains("/s · "), "{text}");
        assert!(text.contains(" elapsed"), "{text}");
        assert!(text.ends_with(" · accuracy 30/40"), "{text}");
    }
}
