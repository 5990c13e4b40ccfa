//! The grader: a program and its tests in two sandboxes that share nothing but plain values.
//!
//! The program's process (`serve.py`) runs the program and answers calls; the tests' process
//! (`judge.py`) runs the reference code and the tests, calls the program's functions through
//! stand-ins, and alone says how the tests ended. moot relays one line at a time between them,
//! with a cap on each line, and never reads a verdict from the program's side. Whatever the
//! program does inside its own process — introspection, patched builtins, hooks, exits,
//! markers on any descriptor, objects that lie about equality — it can only change the values
//! it answers with.

use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use moot_core::validation::{CheckKind, TestSuite, Validation, Verdict};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use crate::error::SandboxError;
use crate::process::{last_line, read_up_to, signal_detail, signal_of, Sandbox, Spawned};
use crate::watch::Watch;

/// The program's side: the wire format, then the server of calls.
const SERVE: &str = concat!(include_str!("wire.py"), include_str!("serve.py"));
/// The tests' side: the wire format, then the judge.
const JUDGE: &str = concat!(include_str!("wire.py"), include_str!("judge.py"));

/// Grades `program` against `suite`; see the module's comment.
pub(crate) async fn grade(
    sandbox: &Sandbox,
    program: &str,
    suite: &TestSuite,
) -> Result<Validation, SandboxError> {
    let started = Instant::now();
    let limits = &sandbox.limits;
    let mut side = Side::start(sandbox, SERVE, limits.output_bytes)?;
    let mut judge = match Side::start(sandbox, JUDGE, limits.output_bytes) {
        Ok(judge) => judge,
        Err(e) => {
            side.kill().await;
            return Err(e);
        }
    };
    let header = serde_json::json!({
        "reference": suite.reference,
        "tests": suite.tests,
        "candidate": suite.candidate,
    })
    .to_string();
    let source = suite.program_source(program);
    let overflow = Arc::clone(&side.overflow);
    let judge_overflow = Arc::clone(&judge.overflow);
    let relayed = {
        let relay = relay(
            &mut side,
            &mut judge,
            &source,
            &header,
            limits.message_bytes,
        );
        tokio::time::timeout(limits.timeout, async {
            tokio::select! {
                r = relay => r,
                () = overflow.wait() => Relayed::OutputLimit("the program's output"),
                () = judge_overflow.wait() => Relayed::OutputLimit("the tests' output"),
            }
        })
        .await
    };
    // A program that ended on its own gets a moment to be reaped, so its status is its own.
    let remaining = limits.timeout.saturating_sub(started.elapsed());
    let program_status = match &relayed {
        Ok(Relayed::ProgramEnded) | Ok(Relayed::NotReady(Opening::Ended)) => {
            side.exit_status(remaining).await
        }
        _ => None,
    };
    let judge_status = match &relayed {
        Ok(Relayed::JudgeEnded) => judge.exit_status(remaining).await,
        _ => None,
    };
    side.kill().await;
    judge.kill().await;
    let program_err = side.stderr_text().await;
    let judge_err = judge.stderr_text().await;
    let elapsed = started.elapsed();
    // A sandbox the watcher killed ended at a bound, whatever the relay then saw.
    if let Some(breach) = side.watch.breach().or_else(|| judge.watch.breach()) {
        return Ok(Validation {
            check: CheckKind::Tests,
            verdict: breach.verdict(),
            detail: breach.why,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        });
    }

    let (verdict, detail) = match relayed {
        Err(_) => (
            Verdict::TimedOut,
            format!("killed after {} ms", limits.timeout.as_millis()),
        ),
        Ok(r) => match r {
            Relayed::OutputLimit(what) => (
                Verdict::OutputLimit,
                format!("{what} passed {} bytes", limits.output_bytes),
            ),
            Relayed::MessageLimit => (
                Verdict::OutputLimit,
                format!(
                    "a value passed {} bytes between the program and its tests",
                    limits.message_bytes
                ),
            ),
            Relayed::NotReady(Opening::SyntaxError(message)) => (Verdict::SyntaxError, message),
            Relayed::NotReady(Opening::ImportError(message)) => (Verdict::Failed, message),
            Relayed::NotReady(Opening::Garbage) => (
                Verdict::Failed,
                "the program wrote to the grader's channel instead of starting".into(),
            ),
            Relayed::NotReady(Opening::Ended) | Relayed::ProgramEnded => {
                if program_err.starts_with("bwrap:") {
                    return Err(SandboxError::Start(program_err.trim().to_string()));
                }
                program_ended(program_status, &program_err)
            }
            Relayed::JudgeEnded => {
                if judge_err.starts_with("bwrap:") {
                    return Err(SandboxError::Start(judge_err.trim().to_string()));
                }
                judge_ended(judge_status, &judge_err)
            }
            Relayed::Done(line) => done(&line),
        },
    };
    Ok(Validation {
        check: CheckKind::Tests,
        verdict,
        detail,
        elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    })
}

/// One sandbox of the pair: its process, its channel and its captured standard error.
struct Side {
    child: Box<dyn process_wrap::tokio::TokioChildWrapper>,
    input: Option<tokio::process::ChildStdin>,
    output: BufReader<tokio::process::ChildStdout>,
    stderr: tokio::task::JoinHandle<Vec<u8>>,
    overflow: Arc<Flag>,
    watch: Watch,
}

impl Side {
    fn start(sandbox: &Sandbox, script: &str, cap: usize) -> Result<Side, SandboxError> {
        let Spawned {
            child,
            stdin,
            stdout,
            stderr,
            watch,
        } = sandbox.spawn(script, &[])?;
        let overflow = Arc::new(Flag::default());
        let flag = Arc::clone(&overflow);
        let stderr = tokio::spawn(async move {
            let (text, over) = read_up_to(stderr, cap).await;
            if over {
                flag.raise();
            }
            text
        });
        Ok(Side {
            child,
            input: Some(stdin),
            output: BufReader::new(stdout),
            stderr,
            overflow,
            watch,
        })
    }

    /// Writes `bytes` to the process; false when it no longer reads.
    async fn send(&mut self, bytes: &[u8]) -> bool {
        match self.input.as_mut() {
            Some(input) => input.write_all(bytes).await.is_ok() && input.flush().await.is_ok(),
            None => false,
        }
    }

    /// Its exit status, if it exits within `within`.
    async fn exit_status(&mut self, within: Duration) -> Option<ExitStatus> {
        self.input = None;
        tokio::time::timeout(within, Box::into_pin(self.child.wait()))
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Kills the process group (bubblewrap takes the sandbox's processes with it) and reaps it.
    async fn kill(&mut self) {
        self.input = None;
        let _ = self.child.start_kill();
        let _ = Box::into_pin(self.child.wait()).await;
    }

    /// Its standard error as text (after [`Side::kill`], so the reader has reached its end).
    async fn stderr_text(&mut self) -> String {
        let bytes = (&mut self.stderr).await.unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A flag raised once that can be awaited.
#[derive(Default)]
struct Flag {
    raised: AtomicBool,
    notify: Notify,
}

impl Flag {
    fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.raised.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// How the program's process opened.
enum Opening {
    SyntaxError(String),
    ImportError(String),
    /// It ended (or closed its channel) before saying it was ready.
    Ended,
    /// Its first line was none of the bootstrap's.
    Garbage,
}

/// How the relay between the two processes ended.
enum Relayed {
    NotReady(Opening),
    /// The tests' process said how the tests ended.
    Done(String),
    /// The tests' process said the program's process ended during the tests.
    ProgramEnded,
    /// The tests' process ended without a verdict.
    JudgeEnded,
    OutputLimit(&'static str),
    MessageLimit,
}

/// One line of at most `cap` bytes (without its newline); `None` at the end of the stream (a
/// line cut short by the end counts as the end: its writer died mid-line).
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
) -> Result<Option<Vec<u8>>, TooLong> {
    let mut line = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let read = reader.take(limit).read_until(b'\n', &mut line).await;
    match read {
        Ok(0) | Err(_) => Ok(None),
        Ok(_) if line.last() == Some(&b'\n') => {
            line.pop();
            Ok(Some(line))
        }
        Ok(_) if line.len() > cap => Err(TooLong),
        Ok(_) => Ok(None),
    }
}

struct TooLong;

/// Feeds the program to its process, waits until it is ready, then carries the tests' calls
/// and the program's replies between the two until the tests' process says how they ended.
async fn relay(
    program: &mut Side,
    judge: &mut Side,
    source: &str,
    header: &str,
    cap: usize,
) -> Relayed {
    let mut opening = format!("{}\n", source.len()).into_bytes();
    opening.extend_from_slice(source.as_bytes());
    // A program that dies before reading all of itself is seen when its first line is read.
    let _ = program.send(&opening).await;
    if !judge.send(format!("{header}\n").as_bytes()).await {
        return Relayed::JudgeEnded;
    }
    let ready = match read_line(&mut program.output, cap).await {
        Err(TooLong) => return Relayed::MessageLimit,
        Ok(None) => return Relayed::NotReady(Opening::Ended),
        Ok(Some(line)) => line,
    };
    if let Some(message) = ready.strip_prefix(b"syntax-error ") {
        return Relayed::NotReady(Opening::SyntaxError(lossy(message)));
    }
    if let Some(message) = ready.strip_prefix(b"import-error ") {
        return Relayed::NotReady(Opening::ImportError(lossy(message)));
    }
    if !ready.starts_with(b"ready ") {
        return Relayed::NotReady(Opening::Garbage);
    }
    if !judge.send(&with_newline(ready)).await {
        return Relayed::JudgeEnded;
    }
    loop {
        let line = match read_line(&mut judge.output, cap).await {
            Err(TooLong) => return Relayed::MessageLimit,
            Ok(None) => return Relayed::JudgeEnded,
            Ok(Some(line)) => line,
        };
        if line.starts_with(b"call ") {
            let reply = if program.send(&with_newline(line)).await {
                match read_line(&mut program.output, cap).await {
                    Err(TooLong) => return Relayed::MessageLimit,
                    Ok(Some(reply)) => with_newline(reply),
                    Ok(None) => b"ended\n".to_vec(),
                }
            } else {
                b"ended\n".to_vec()
            };
            if !judge.send(&reply).await {
                return Relayed::JudgeEnded;
            }
        } else if line == b"done ended" {
            return Relayed::ProgramEnded;
        } else if line.starts_with(b"done ") {
            return Relayed::Done(lossy(&line));
        } else {
            return Relayed::Done("done failed the tests wrote to the grader's channel".into());
        }
    }
}

fn with_newline(mut line: Vec<u8>) -> Vec<u8> {
    line.push(b'\n');
    line
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The verdict the tests' process gave.
fn done(line: &str) -> (Verdict, String) {
    let rest = line.strip_prefix("done ").unwrap_or(line);
    let (word, detail) = rest.split_once(' ').unwrap_or((rest, ""));
    let verdict = match word {
        "passed" => Verdict::Passed,
        "unsupported" => Verdict::Unsupported,
        "no-tests" => Verdict::NoTests,
        _ => Verdict::Failed,
    };
    let detail = if matches!(word, "passed" | "failed" | "unsupported" | "no-tests") {
        detail.to_string()
    } else {
        format!("the tests' process said {rest:?}")
    };
    (verdict, detail)
}

/// The program's process ended before the tests did.
fn program_ended(status: Option<ExitStatus>, stderr: &str) -> (Verdict, String) {
    let Some(status) = status else {
        return (
            Verdict::Failed,
            "the program's process stopped answering before the tests ended".into(),
        );
    };
    match (status.code(), signal_of(&status)) {
        (Some(0), _) => (
            Verdict::ExitedEarly,
            "the program exited with status 0 before its tests ended".into(),
        ),
        (_, Some(sig)) => (
            Verdict::Killed,
            format!("the program was ended by {}", signal_detail(sig)),
        ),
        (code, None) => {
            let line = last_line(stderr);
            let detail = if line.is_empty() {
                format!(
                    "the program exited with status {} before its tests ended",
                    code.unwrap_or(-1)
                )
            } else {
                line
            };
            (Verdict::Failed, detail)
        }
    }
}

/// The tests' process ended without a verdict: killed at a limit, or broken by what the
/// program answered (a value too large for its memory).
fn judge_ended(status: Option<ExitStatus>, stderr: &str) -> (Verdict, String) {
    match status.as_ref().and_then(signal_of) {
        Some(sig) => (
            Verdict::Killed,
            format!("the tests' process was ended by {}", signal_detail(sig)),
        ),
        None => {
            let line = last_line(stderr);
            (
                Verdict::Failed,
                if line.is_empty() {
                    "the tests' process ended without a verdict".into()
                } else {
                    format!("the tests' process failed: {line}")
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tests_process_alone_names_the_verdict() {
        assert_eq!(done("done passed"), (Verdict::Passed, String::new()));
        assert_eq!(
            done("done passed 3 passed"),
            (Verdict::Passed, "3 passed".into())
        );
        assert_eq!(
            done("done no-tests every test was skipped"),
            (Verdict::NoTests, "every test was skipped".into())
        );
        assert_eq!(
            done("done failed AssertionError: x"),
            (Verdict::Failed, "AssertionError: x".into())
        );
        assert_eq!(
            done("done unsupported f() returned a generator"),
            (Verdict::Unsupported, "f() returned a generator".into())
        );
        assert_eq!(done("done whatever").0, Verdict::Failed);
    }

    #[tokio::test]
    async fn lines_are_capped_and_a_cut_line_is_the_end() {
        let mut r = BufReader::new(&b"abc\ndefgh\n"[..]);
        assert_eq!(
            read_line(&mut r, 4).await.ok().flatten(),
            Some(b"abc".to_vec())
        );
        assert!(read_line(&mut r, 4).await.is_err());
        let mut r = BufReader::new(&b"abc"[..]);
        assert_eq!(read_line(&mut r, 4).await.ok().flatten(), None);
    }
}
