//! `moot-sandbox`: runs untrusted code answers (Python programs) where they cannot touch the
//! host.
//!
//! Each run is a fresh bubblewrap (`bwrap`) sandbox:
//! - **filesystem**: `/usr` and `/etc` read-only, the usual `/bin`, `/lib…` links, a private
//!   `/proc` and `/dev`, and a private, size-capped `/tmp` that is thrown away afterwards.
//!   Nothing else of the host is visible (no home, no project, no store).
//! - **namespaces**: all of them unshared; in particular the network (only a loopback that is
//!   down), process ids and the user.
//! - **limits** (`prlimit`, applied inside the new user namespace so they count only the
//!   sandbox's own processes): processes, address space, CPU seconds, file size, open files,
//!   no core dumps; and, watched from outside (`watch`), the memory of all its processes
//!   together and the number of files in its writable places.
//! - **time**: the whole process group is killed at the wall-clock timeout; bubblewrap's
//!   `--die-with-parent` and the pid namespace take every process started inside with it.
//!
//! The kernel does not apply the process limit to root, so when moot runs as root the sandbox
//! runs as `nobody` (uid 65534), which needs unprivileged user namespaces (Debian's default).
//! freemad's own "sandbox" is an in-process `exec` with a thread timeout, which cannot stop a
//! runaway loop; this one stops it.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use moot_core::validation::{CheckKind, Validation, Verdict};
use tokio::io::{AsyncRead, AsyncWriteExt};

mod error;
mod grader;
mod limits;
mod process;
mod watch;

pub use error::SandboxError;
pub use limits::Limits;
pub use process::Sandbox;
use process::{last_line, read_up_to, signal_detail, signal_of, Spawned};

const BOOTSTRAP: &str = include_str!("bootstrap.py");

/// The uid a root user's sandboxes run as (`nobody`).
const UNPRIVILEGED_UID: u32 = 65534;

/// What a check is asked to do with the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Compile only.
    Syntax,
    /// Compile and run as `__main__`.
    Run,
}

impl Mode {
    fn word(self) -> &'static str {
        match self {
            Mode::Syntax => "syntax",
            Mode::Run => "run",
        }
    }
}

/// Everything one sandboxed run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub verdict: Verdict,
    /// Why, in one line (empty when it passed).
    pub detail: String,
    /// Its standard output without the bootstrap's lines, and its standard error (each capped).
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl RunOutput {
    fn validation(self, check: CheckKind) -> Validation {
        Validation {
            check,
            verdict: self.verdict,
            detail: self.detail,
            elapsed_ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Sandbox {
    /// Finds `bwrap`, `prlimit` and a Python 3 under `/usr` (the only tree the sandbox sees).
    pub fn new(limits: Limits) -> Result<Sandbox, SandboxError> {
        let bwrap = find_program("bwrap").ok_or_else(|| SandboxError::Missing {
            program: "bwrap".into(),
            hint: "install bubblewrap (apt-get install bubblewrap; scripts/setup.sh does it)"
                .into(),
        })?;
        let prlimit = find_program("prlimit").ok_or_else(|| SandboxError::Missing {
            program: "prlimit".into(),
            hint: "install util-linux".into(),
        })?;
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| SandboxError::Missing {
                program: "python3 under /usr".into(),
                hint: "install python3 (apt-get install python3)".into(),
            })?;
        let run_as = nix::unistd::geteuid().is_root().then_some(UNPRIVILEGED_UID);
        Ok(Sandbox {
            bwrap,
            prlimit,
            python,
            limits,
            run_as,
        })
    }

    /// Uses `python` instead of the Python found under `/usr`. It must live under `/usr`,
    /// since nothing else of the host is visible inside.
    pub fn with_python(mut self, python: &Path) -> Result<Sandbox, SandboxError> {
        if !python.starts_with("/usr/") || !python.is_file() {
            return Err(SandboxError::Missing {
                program: python.display().to_string(),
                hint: "the sandbox sees only /usr; give a Python 3 under /usr".into(),
            });
        }
        self.python = python.to_path_buf();
        Ok(self)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs an empty program, so that a sandbox that cannot start (no user namespaces, a
    /// missing library) is reported once, up front, with bubblewrap's own words.
    pub async fn probe(&self) -> Result<(), SandboxError> {
        let out = self.run(Mode::Run, "pass\n").await?;
        match out.verdict {
            Verdict::Passed => Ok(()),
            _ => Err(SandboxError::Start(format!(
                "a program that does nothing ended with {}: {} {}",
                out.verdict, out.detail, out.stderr
            ))),
        }
    }

    /// Whether `program` compiles.
    pub async fn check_syntax(&self, program: &str) -> Result<Validation, SandboxError> {
        let out = self.run(Mode::Syntax, program).await?;
        Ok(out.validation(CheckKind::Syntax))
    }

    /// Grades `program` with `suite`: the program runs in one sandbox, the tests (and any
    /// reference code) in another, and the tests call the program's functions across a channel
    /// that carries only plain values. The verdict is the tests' process's, which the program
    /// cannot reach: it passes when the tests run to their end without an error.
    pub async fn run_tests(
        &self,
        program: &str,
        suite: &moot_core::validation::TestSuite,
    ) -> Result<Validation, SandboxError> {
        grader::grade(self, program, suite).await
    }

    /// Runs `program` as `__main__` in one sandbox and returns everything it produced. Not a
    /// grader: a program that runs to its end "passes", and a program can fake that (it shares
    /// its process with the bootstrap); [`Sandbox::run_tests`] is the grader.
    pub async fn execute(&self, program: &str) -> Result<RunOutput, SandboxError> {
        self.run(Mode::Run, program).await
    }

    async fn run(&self, mode: Mode, program: &str) -> Result<RunOutput, SandboxError> {
        let tag = format!("moot-{:016x}", rand::random::<u64>());
        let started = Instant::now();
        let Spawned {
            mut child,
            stdin,
            stdout,
            stderr,
            watch,
        } = self.spawn(BOOTSTRAP, &[mode.word()])?;
        let input = format!("{tag}\n{program}");
        let cap = self.limits.output_bytes;

        let feed = async move {
            let mut stdin = stdin;
            // A program that dies before reading all of its input is not our failure.
            let _ = stdin.write_all(input.as_bytes()).await;
            drop(stdin);
            Ok::<(), Overflow>(())
        };
        let work = async {
            let ((), out, err) =
                tokio::try_join!(feed, read_capped(stdout, cap), read_capped(stderr, cap))?;
            let status = Box::into_pin(child.wait()).await;
            Ok::<_, Overflow>((out, err, status))
        };
        let finished = tokio::time::timeout(self.limits.timeout, work).await;
        let elapsed = started.elapsed();
        let ended = match finished {
            Ok(Ok((out, err, status))) => {
                let status = status.map_err(|e| SandboxError::Io(format!("waiting: {e}")))?;
                Ended::Exited { out, err, status }
            }
            Ok(Err(Overflow(stream))) => Ended::Overflow(stream),
            Err(_) => Ended::TimedOut,
        };
        if !matches!(ended, Ended::Exited { .. }) {
            // Kill the group, then reap it; bubblewrap takes the sandbox's processes with it.
            let _ = child.start_kill();
            let _ = Box::into_pin(child.wait()).await;
        }
        let mut out = classify(ended, &tag, elapsed, &self.limits)?;
        if let Some(breach) = watch.breach() {
            out.verdict = breach.verdict();
            out.detail = breach.why;
        }
        Ok(out)
    }
}

/// How the sandbox's process ended, before it is read as a verdict.
enum Ended {
    Exited {
        out: Vec<u8>,
        err: Vec<u8>,
        status: ExitStatus,
    },
    TimedOut,
    Overflow(&'static str),
}

/// A stream passed the output cap.
struct Overflow(&'static str);

async fn read_capped<R: AsyncRead + Unpin>(reader: R, cap: usize) -> Result<Vec<u8>, Overflow> {
    match read_up_to(reader, cap).await {
        (_, true) => Err(Overflow("output")),
        (buf, false) => Ok(buf),
    }
}

fn classify(
    ended: Ended,
    tag: &str,
    elapsed: Duration,
    limits: &Limits,
) -> Result<RunOutput, SandboxError> {
    let done = |verdict, detail: String, stdout: String, stderr: String| {
        Ok(RunOutput {
            verdict,
            detail,
            stdout,
            stderr,
            elapsed,
        })
    };
    let (out, err, status) = match ended {
        Ended::TimedOut => {
            let ms = limits.timeout.as_millis();
            return done(
                Verdict::TimedOut,
                format!("killed after {ms} ms"),
                String::new(),
                String::new(),
            );
        }
        Ended::Overflow(what) => {
            return done(
                Verdict::OutputLimit,
                format!("{what} passed {} bytes", limits.output_bytes),
                String::new(),
                String::new(),
            );
        }
        Ended::Exited { out, err, status } => (out, err, status),
    };
    let stdout = String::from_utf8_lossy(&out).into_owned();
    let stderr = String::from_utf8_lossy(&err).into_owned();
    let marker = format!("{tag} ");
    let mut said = Vec::new();
    let mut shown = Vec::new();
    for line in stdout.lines() {
        match line.strip_prefix(&marker) {
            Some(rest) => said.push(rest.to_string()),
            None => shown.push(line),
        }
    }
    let stdout = shown.join("\n").trim_end().to_string();
    if let Some(message) = said.iter().find_map(|s| s.strip_prefix("syntax-error ")) {
        return done(Verdict::SyntaxError, message.to_string(), stdout, stderr);
    }
    let finished = said.iter().any(|s| s == "finished");
    let code = status.code();
    if finished && code == Some(0) {
        return done(Verdict::Passed, String::new(), stdout, stderr);
    }
    // Nothing of ours ran: bubblewrap itself failed (no user namespaces, a bad mount).
    if said.is_empty() && stderr.starts_with("bwrap:") {
        return Err(SandboxError::Start(stderr.trim().to_string()));
    }
    let signal = signal_of(&status);
    let last_line = last_line(&stderr);
    match (code, signal) {
        (Some(0), _) => done(
            Verdict::ExitedEarly,
            "exited with status 0 before the end of the program".into(),
            stdout,
            stderr,
        ),
        (_, Some(sig)) if last_line.is_empty() || !last_line.contains("Error") => {
            done(Verdict::Killed, signal_detail(sig), stdout, stderr)
        }
        (code, _) => {
            let detail = if last_line.is_empty() {
                format!("exit status {}", code.unwrap_or(-1))
            } else {
                last_line
            };
            done(Verdict::Failed, detail, stdout, stderr)
        }
    }
}

/// `name` on `PATH` (then in `/usr/bin`), as an executable file.
fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox() -> Sandbox {
        Sandbox {
            bwrap: "/usr/bin/bwrap".into(),
            prlimit: "/usr/bin/prlimit".into(),
            python: "/usr/bin/python3".into(),
            limits: Limits::default(),
            run_as: None,
        }
    }

    #[test]
    fn arguments_unshare_everything_and_limit_the_program() {
        let args: Vec<String> = sandbox()
            .script_arguments(BOOTSTRAP, &[Mode::Run.word()])
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = args.join(" ");
        for want in [
            "--ro-bind /usr /usr",
            "--unshare-all",
            "--die-with-parent",
            "--tmpfs /tmp",
            "--clearenv",
            "--nproc=32:32",
            "--as=536870912:536870912",
            "--core=0:0",
        ] {
            assert!(joined.contains(want), "{want} missing from {joined}");
        }
        // The host's home and working directory are never bound.
        assert!(!joined.contains("/root") && !joined.contains("/home"));
        assert!(!joined.contains("--share-net"));
        // The mode is the last argument, after the bootstrap.
        assert_eq!(args.last().map(String::as_str), Some("run"));
    }

    fn exited(out: &str, err: &str, code: i32) -> Ended {
        use std::os::unix::process::ExitStatusExt;
        Ended::Exited {
            out: out.as_bytes().to_vec(),
            err: err.as_bytes().to_vec(),
            status: ExitStatus::from_raw(code << 8),
        }
    }

    fn verdict(ended: Ended) -> (Verdict, String) {
        let out = classify(ended, "T", Duration::ZERO, &Limits::default()).unwrap();
        (out.verdict, out.detail)
    }

    #[test]
    fn verdicts_come_from_the_tagged_lines_and_the_status() {
        assert_eq!(
            verdict(exited("hi\nT finished\n", "", 0)).0,
            Verdict::Passed
        );
        assert_eq!(
            verdict(exited("hi\n", "", 0)).0,
            Verdict::ExitedEarly,
            "status 0 without the end marker"
        );
        assert_eq!(
            verdict(exited("", "Traceback …\nAssertionError\n", 1)),
            (Verdict::Failed, "AssertionError".into())
        );
        assert_eq!(
            verdict(exited(
                "T syntax-error SyntaxError: invalid syntax (line 2)\n",
                "",
                3
            )),
            (
                Verdict::SyntaxError,
                "SyntaxError: invalid syntax (line 2)".into()
            )
        );
        assert_eq!(
            verdict(exited("", "", 128 + 24)),
            (
                Verdict::Killed,
                "signal 24 (SIGXCPU: CPU time limit)".into()
            )
        );
        // A forged marker without the run's tag is just output.
        assert_eq!(
            verdict(exited("X finished\n", "", 0)).0,
            Verdict::ExitedEarly
        );
        assert!(matches!(
            classify(
                exited("", "bwrap: No permissions to create new namespace\n", 1),
                "T",
                Duration::ZERO,
                &Limits::default()
            ),
            Err(SandboxError::Start(_))
        ));
        assert_eq!(verdict(Ended::TimedOut).0, Verdict::TimedOut);
        assert_eq!(verdict(Ended::Overflow("output")).0, Verdict::OutputLimit);
    }
}
