//! System calls a started program is refused, with seccomp: what holds the machine's memory or
//! crosses a bound where nothing moot watches can see it.
//!
//! - An agent may not use `clone3`: with `CLONE_INTO_CGROUP` it starts a process in any cgroup
//!   it can name by a descriptor, read-only mount or not, where cgroup2 lacks `nsdelegate`
//!   (C libraries fall back to `clone` on ENOSYS).
//! - A sandboxed program may not make System V shared memory or message queues, an io_uring,
//!   or a listening socket: each holds memory no descriptor or mapping of its processes shows
//!   (segments and queues live in its IPC namespace, an io_uring holds the files registered
//!   with it, connections never accepted hold what was sent to them), so the watcher that
//!   counts its memory could not count them (2.4 GiB under a 512 MiB limit).
//!
//! The refused calls fail with ENOSYS, as on a kernel without them. The filter is built once,
//! before any fork, and applied in the child between fork and exec; it holds for the program and
//! everything it starts (and sets `no_new_privs`: nothing it runs gains privileges by exec).

use std::io;
use std::sync::OnceLock;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

/// A filter of refused system calls.
#[derive(Debug)]
pub struct Refusal {
    program: BpfProgram,
}

/// The calls an agent is refused.
const AGENT: &[libc::c_long] = &[libc::SYS_clone3];

/// The calls a sandboxed program is refused.
const SANDBOX: &[libc::c_long] = &[
    libc::SYS_shmget,
    libc::SYS_msgget,
    libc::SYS_io_uring_setup,
    libc::SYS_listen,
];

impl Refusal {
    /// The filter for agents, built once; `None` on an architecture seccompiler does not know.
    pub fn for_agents() -> Option<&'static Refusal> {
        static BUILT: OnceLock<Option<Refusal>> = OnceLock::new();
        BUILT.get_or_init(|| Refusal::of(AGENT)).as_ref()
    }

    /// The filter for the sandbox, built once.
    pub fn for_sandbox() -> Option<&'static Refusal> {
        static BUILT: OnceLock<Option<Refusal>> = OnceLock::new();
        BUILT.get_or_init(|| Refusal::of(SANDBOX)).as_ref()
    }

    fn of(calls: &[libc::c_long]) -> Option<Refusal> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).ok()?;
        let rules = calls.iter().map(|&call| (call, Vec::new())).collect();
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .ok()?;
        let program = BpfProgram::try_from(filter).ok()?;
        Some(Refusal { program })
    }

    /// Installs the filter on this process.
    ///
    /// # Safety
    ///
    /// For a `pre_exec` hook: two system calls on memory built before the fork, no allocation.
    pub unsafe fn apply(&self) -> io::Result<()> {
        seccompiler::apply_filter(&self.program).map_err(|e| match e {
            seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
            _ => io::Error::from_raw_os_error(libc::EINVAL),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `python3 -c SCRIPT` under `refusal`: what it printed.
    fn under(refusal: &'static Refusal, script: &str) -> String {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("python3");
        command.args(["-c", script]);
        // SAFETY: apply makes two system calls on memory built before the fork.
        unsafe { command.pre_exec(move || refusal.apply()) };
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    const ERRNO_OF: &str = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
        def errno(n, *a):\n    r = libc.syscall(n, *a)\n    return 0 if r >= 0 else ctypes.get_errno()\n";

    #[test]
    fn an_agent_is_refused_clone3_and_nothing_else() {
        let agents = Refusal::for_agents().expect("a filter on this architecture");
        // clone3 with no arguments: EFAULT or EINVAL where it is allowed, ENOSYS refused.
        let out = under(
            agents,
            &format!("{ERRNO_OF}print(errno(435, None, 0), errno(39) == 0)"),
        );
        assert_eq!(out.trim(), "38 True");
    }

    #[test]
    fn a_sandboxed_program_is_refused_what_holds_memory_out_of_sight() {
        let sandbox = Refusal::for_sandbox().expect("a filter on this architecture");
        let out = under(
            sandbox,
            &format!(
                "{ERRNO_OF}import socket\n\
                 print(errno(29, 0, 4096, 0o1600), errno(68, 0, 0o1600), errno(425, 1, None))\n\
                 s = socket.socket(socket.AF_UNIX)\n\
                 try:\n    s.listen()\nexcept OSError as e:\n    print(e.errno)\n\
                 print(os.getpid() > 0, len(os.listdir('/proc/self/fd')) > 0)\n"
            ),
        );
        assert_eq!(out.trim(), "38 38 38\n38\nTrue True");
    }
}
