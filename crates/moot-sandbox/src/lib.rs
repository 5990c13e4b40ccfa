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
//!   no core dumps.
//! - **time**: the whole process group is killed at the wall-clock timeout; bubblewrap's
//!   `--die-with-parent` and the pid namespace take every process started inside with it.
//!
//! The kernel does not apply the process limit to root, so when moot runs as root the sandbox
//! runs as `nobody` (uid 65534), which needs unprivileged user namespaces (Debian's default).
//! freemad's own "sandbox" is an in-process `exec` with a thread timeout, which cannot stop a
//! runaway loop; this one stops it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use moot_core::validation::{CheckKind, Validation, Verdict};
use process_wrap::tokio::{ProcessGroup, TokioCommandWrap};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

mod grader;

const BOOTSTRAP: &str = include_str!("bootstrap.py");
/// The program's side of the grader: the wire format, then the server of calls.
const SERVE: &str = concat!(include_str!("wire.py"), include_str!("serve.py"));
/// The tests' side of the grader: the wire format, then the judge.
const JUDGE: &str = concat!(include_str!("wire.py"), include_str!("judge.py"));

/// The uid a root user's sandboxes run as (`nobody`).
const UNPRIVILEGED_UID: u32 = 65534;

/// What a sandboxed program may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the sandbox is killed.
    pub timeout: Duration,
    /// Address space of each process (RLIMIT_AS).
    pub memory_bytes: u64,
    /// Processes (and threads) inside the sandbox at once.
    pub processes: u64,
    /// The largest file it may write (RLIMIT_FSIZE).
    pub file_bytes: u64,
    /// The size of its private `/tmp`.
    pub tmp_bytes: u64,
    /// Standard output or error beyond this kills it.
    pub output_bytes: usize,
    /// CPU time of each process; `None`: the wall-clock timeout plus two seconds, so that the
    /// wall clock normally ends a run first.
    pub cpu: Option<Duration>,
    /// The largest message between a program and its tests (one call or one returned value,
    /// as literal text).
    pub message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_secs(5),
            memory_bytes: 512 << 20,
            processes: 32,
            file_bytes: 16 << 20,
            tmp_bytes: 64 << 20,
            output_bytes: 64 << 10,
            cpu: None,
            message_bytes: 16 << 20,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{program} was not found: {hint}")]
    Missing { program: String, hint: String },
    #[error("the sandbox could not start: {0}")]
    Start(String),
    #[error("the sandbox failed: {0}")]
    Io(String),
}

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

/// A configured sandbox: the programs it uses and the limits it applies.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: PathBuf,
    prlimit: PathBuf,
    python: PathBuf,
    limits: Limits,
    /// The uid (and gid) to run as, when moot runs as root.
    run_as: Option<u32>,
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

    /// The arguments of `bwrap` that run the Python `script` with `args` in a fresh sandbox.
    fn script_arguments(&self, script: &str, args: &[&str]) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(OsString::from));
        push(&["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]);
        // Merged-/usr systems link these into /usr; older ones have real directories.
        for dir in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            match std::fs::read_link(dir) {
                Ok(target) => {
                    let target = target.to_string_lossy().into_owned();
                    push(&["--symlink", &target, dir]);
                }
                Err(_) if Path::new(dir).is_dir() => push(&["--ro-bind", dir, dir]),
                Err(_) => {}
            }
        }
        // Every writable place is a tmpfs of its own, capped: /tmp, and /dev/shm (which would
        // otherwise live on /dev's uncapped tmpfs); /dev and the root are then made read-only
        // (device nodes still work).
        let tmp = self.limits.tmp_bytes.to_string();
        push(&[
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            &tmp,
            "--tmpfs",
            "/tmp",
            "--size",
            &tmp,
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            // The root bubblewrap builds is a tmpfs too, writable and uncapped until now.
            "--remount-ro",
            "/",
        ]);
        push(&[
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "moot-sandbox",
            "--chdir",
            "/tmp",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--",
        ]);
        let l = &self.limits;
        let cpu = match l.cpu {
            Some(cpu) => cpu.as_secs().max(1),
            None => l.timeout.as_secs() + 2,
        };
        a.push(self.prlimit.clone().into());
        for (name, soft, hard) in [
            ("nproc", l.processes, l.processes),
            ("as", l.memory_bytes, l.memory_bytes),
            // The hard limit a second later, so that SIGXCPU (which says why) comes before
            // SIGKILL.
            ("cpu", cpu, cpu + 1),
            ("fsize", l.file_bytes, l.file_bytes),
            ("nofile", 256, 256),
            ("core", 0, 0),
        ] {
            a.push(format!("--{name}={soft}:{hard}").into());
        }
        a.push("--".into());
        a.push(self.python.clone().into());
        a.extend(["-I", "-c", script].map(OsString::from));
        a.extend(args.iter().map(OsString::from));
        a
    }

    /// Starts `script` in a fresh sandbox, in a process group of its own, with its three
    /// standard streams piped and no other descriptor of moot's.
    fn spawn(&self, script: &str, args: &[&str]) -> Result<Spawned, SandboxError> {
        let mut wrap = TokioCommandWrap::with_new(&self.bwrap, |c| {
            c.args(self.script_arguments(script, args))
                .env_clear()
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(uid) = self.run_as {
                c.uid(uid).gid(uid);
            }
            // SAFETY: the closure runs in the forked child before exec and only makes
            // async-signal-safe system calls (close_range, or fcntl as a fallback).
            unsafe {
                c.pre_exec(|| {
                    close_inherited_descriptors();
                    Ok(())
                });
            }
        });
        wrap.wrap(ProcessGroup::leader());
        let mut child = wrap
            .spawn()
            .map_err(|e| SandboxError::Start(format!("{}: {e}", self.bwrap.display())))?;
        let missing =
            |what: &str| SandboxError::Io(format!("the sandbox's {what} was not captured"));
        let stdin = child.stdin().take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout().take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr().take().ok_or_else(|| missing("stderr"))?;
        Ok(Spawned {
            child,
            stdin,
            stdout,
            stderr,
        })
    }

    async fn run(&self, mode: Mode, program: &str) -> Result<RunOutput, SandboxError> {
        let tag = format!("moot-{:016x}", rand::random::<u64>());
        let started = Instant::now();
        let Spawned {
            mut child,
            stdin,
            stdout,
            stderr,
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
        classify(ended, &tag, elapsed, &self.limits)
    }
}

/// A started sandbox and its standard streams.
struct Spawned {
    child: Box<dyn process_wrap::tokio::TokioChildWrapper>,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
}

/// Marks every descriptor above standard error close-on-exec, so that nothing moot inherited
/// (a shell's `9<secret.txt`) or opened reaches a sandboxed program. Runs between fork and
/// exec: system calls only.
fn close_inherited_descriptors() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: plain system calls on descriptor numbers; no memory is touched.
    unsafe {
        let marked = libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if marked != 0 {
            // Kernels before 5.11: every descriptor below the limit, one by one.
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(1 << 20) as libc::c_int
            } else {
                4096
            };
            for fd in 3..top {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
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

/// Reads up to `cap` bytes; says whether there was more (the rest is left unread). A read
/// error ends the stream; what was read still counts.
async fn read_up_to<R: AsyncRead + Unpin>(reader: R, cap: usize) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let _ = reader.take(limit).read_to_end(&mut buf).await;
    if buf.len() > cap {
        buf.truncate(cap);
        return (buf, true);
    }
    (buf, false)
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

/// The signal that ended a process: its own, or bubblewrap's exit status 128 + N.
fn signal_of(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().or_else(|| {
        status
            .code()
            .filter(|c| (129..=192).contains(c))
            .map(|c| c - 128)
    })
}

/// A signal by number, with why it was sent when a limit sends it.
fn signal_detail(sig: i32) -> String {
    let why = match sig {
        9 => " (SIGKILL)",
        24 => " (SIGXCPU: CPU time limit)",
        25 => " (SIGXFSZ: file size limit)",
        11 => " (SIGSEGV)",
        6 => " (SIGABRT)",
        _ => "",
    };
    format!("signal {sig}{why}")
}

/// The last line of `text` that is not blank, trimmed.
fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
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
