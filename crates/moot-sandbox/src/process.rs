//! Starting one sandbox: the arguments of bubblewrap and prlimit, the process group, the
//! descriptors it gets; and reading how a process ended.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use process_wrap::tokio::{ProcessGroup, TokioCommandWrap};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::SandboxError;
use crate::limits::Limits;
use crate::watch::Watch;

/// A configured sandbox: the programs it uses and the limits it applies.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(crate) bwrap: PathBuf,
    pub(crate) prlimit: PathBuf,
    pub(crate) python: PathBuf,
    pub(crate) limits: Limits,
    /// The uid (and gid) to run as, when moot runs as root.
    pub(crate) run_as: Option<u32>,
}

impl Sandbox {
    /// The arguments of `bwrap` that run the Python `script` with `args` in a fresh sandbox.
    pub(crate) fn script_arguments(&self, script: &str, args: &[&str]) -> Vec<OsString> {
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
            ("nofile", l.descriptors, l.descriptors),
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
    pub(crate) fn spawn(&self, script: &str, args: &[&str]) -> Result<Spawned, SandboxError> {
        // The program must not read moot's keys from its memory (bubblewrap's PID namespace
        // hides moot's /proc entry; the seal holds where a namespace is not made).
        moot_proc::seal().map_err(|e| {
            SandboxError::Start(format!("cannot keep the sandbox out of moot's memory: {e}"))
        })?;
        let mut wrap = TokioCommandWrap::with_new(&self.bwrap, |c| {
            c.args(self.script_arguments(script, args))
                .env_clear()
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(uid) = self.run_as {
                c.uid(uid).gid(uid);
            }
            // Built here, before the fork: the child only installs it. bubblewrap and the
            // program both run under it (bubblewrap needs none of the calls it refuses).
            let refusal = moot_proc::Refusal::for_sandbox();
            // SAFETY: the closure runs in the forked child before exec and only makes
            // async-signal-safe system calls (close_range, or fcntl as a fallback; prctl and
            // seccomp on a filter built before the fork). The capabilities stay: bubblewrap
            // needs them as root to make the sandbox, and drops them all inside it.
            unsafe {
                c.pre_exec(move || {
                    moot_proc::mark_descriptors_cloexec();
                    match refusal {
                        Some(refusal) => refusal.apply(),
                        None => Ok(()),
                    }
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
        let leader = child
            .id()
            .ok_or_else(|| SandboxError::Io("the sandbox ended before it was watched".into()))?;
        let watch = Watch::start(leader, &self.limits);
        Ok(Spawned {
            child,
            stdin,
            stdout,
            stderr,
            watch,
        })
    }
}

/// A started sandbox and its standard streams.
pub(crate) struct Spawned {
    pub(crate) child: Box<dyn process_wrap::tokio::TokioChildWrapper>,
    pub(crate) stdin: tokio::process::ChildStdin,
    pub(crate) stdout: tokio::process::ChildStdout,
    pub(crate) stderr: tokio::process::ChildStderr,
    /// The bounds on the sandbox as a whole; it stops watching when dropped.
    pub(crate) watch: Watch,
}

/// Reads up to `cap` bytes; says whether there was more (the rest is left unread). A read
/// error ends the stream; what was read still counts.
pub(crate) async fn read_up_to<R: AsyncRead + Unpin>(reader: R, cap: usize) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let _ = reader.take(limit).read_to_end(&mut buf).await;
    if buf.len() > cap {
        buf.truncate(cap);
        return (buf, true);
    }
    (buf, false)
}

/// The signal that ended a process: its own, or bubblewrap's exit status 128 + N.
pub(crate) fn signal_of(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().or_else(|| {
        status
            .code()
            .filter(|c| (129..=192).contains(c))
            .map(|c| c - 128)
    })
}

/// A signal by number, with why it was sent when a limit sends it.
pub(crate) fn signal_detail(sig: i32) -> String {
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
pub(crate) fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}
