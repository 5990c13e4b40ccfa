//! System calls a started program is refused, with seccomp: what holds the machine's memory or
//! crosses a bound where nothing moot watches can see it.
//!
//! - An agent may not use `clone3`: with `CLONE_INTO_CGROUP` it starts a process in any cgroup
//!   it can name by a descriptor, read-only mount or not, where cgroup2 lacks `nsdelegate`
//!   (C libraries fall back to `clone` on ENOSYS).
//! - A sandboxed program may not make System V shared memory, semaphores or message queues,
//!   an io_uring, a `memfd_secret`, a listening socket, a Unix datagram or sequenced-packet
//!   socket, or pass descriptors (`sendmsg`, `sendmmsg`): each holds memory no descriptor or
//!   mapping of its processes shows, or that the watcher cannot read (segments and queues
//!   live in its IPC namespace, an io_uring holds the files registered with it, connections
//!   never accepted and datagrams whose sender closed hold what was sent, descriptors in flight
//!   are held by no process, secret memory is on no filesystem the watcher reads), so the
//!   watcher that counts its memory could not count them (2.4 GiB under a 512 MiB limit).
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

/// The calls an agent is refused, whatever their arguments.
const AGENT: &[libc::c_long] = &[libc::SYS_clone3];

/// The calls a sandboxed program is refused, whatever their arguments.
const SANDBOX: &[libc::c_long] = &[
    libc::SYS_shmget,
    libc::SYS_semget,
    libc::SYS_msgget,
    libc::SYS_io_uring_setup,
    libc::SYS_memfd_secret,
    libc::SYS_listen,
    libc::SYS_sendmsg,
    libc::SYS_sendmmsg,
];

/// The socket types a sandboxed program may not make in the Unix domain (a datagram's queue
/// outlives its sender, and the reader's `FIONREAD` shows only the first).
const SANDBOX_UNIX_TYPES: [u64; 2] = [libc::SOCK_DGRAM as u64, libc::SOCK_SEQPACKET as u64];

impl Refusal {
    /// The filter for agents, built once; `None` on an architecture seccompiler does not know.
    pub fn for_agents() -> Option<&'static Refusal> {
        static BUILT: OnceLock<Option<Refusal>> = OnceLock::new();
        BUILT.get_or_init(|| Refusal::of(AGENT, false)).as_ref()
    }

    /// The filter for the sandbox, built once.
    pub fn for_sandbox() -> Option<&'static Refusal> {
        static BUILT: OnceLock<Option<Refusal>> = OnceLock::new();
        BUILT.get_or_init(|| Refusal::of(SANDBOX, true)).as_ref()
    }

    /// A filter refusing `calls`, and with `unix_types` the Unix sockets of
    /// [`SANDBOX_UNIX_TYPES`] (`socket` and `socketpair`, their type's flags aside).
    fn of(calls: &[libc::c_long], unix_types: bool) -> Option<Refusal> {
        use seccompiler::{
            SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition, SeccompRule,
        };
        let arch = TargetArch::try_from(std::env::consts::ARCH).ok()?;
        let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
            calls.iter().map(|&call| (call, Vec::new())).collect();
        if unix_types {
            // SOCK_TYPE_MASK: the type without SOCK_NONBLOCK and SOCK_CLOEXEC.
            let unix_of_type = |kind: u64| -> Option<SeccompRule> {
                SeccompRule::new(vec![
                    SeccompCondition::new(0, Len::Dword, Op::Eq, libc::AF_UNIX as u64).ok()?,
                    SeccompCondition::new(1, Len::Dword, Op::MaskedEq(0xf), kind).ok()?,
                ])
                .ok()
            };
            let refused: Option<Vec<SeccompRule>> = SANDBOX_UNIX_TYPES
                .iter()
                .map(|&kind| unix_of_type(kind))
                .collect();
            let refused = refused?;
            rules.insert(libc::SYS_socket, refused.clone());
            rules.insert(libc::SYS_socketpair, refused);
        }
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
        const PROGRAM: &str = r#"
import socket
print(errno(29, 0, 4096, 0o1600), errno(68, 0, 0o1600), errno(425, 1, None),
      errno(64, 0, 1, 0o1600), errno(447, 0))
s = socket.socket(socket.AF_UNIX)
try:
    s.listen()
except OSError as e:
    print(e.errno)
for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC):
    try:
        socket.socket(socket.AF_UNIX, kind)
        print("made")
    except OSError as e:
        print(e.errno)
a, b = socket.socketpair()
try:
    a.sendmsg([b"x"])
except OSError as e:
    print(e.errno)
a.sendall(b"kept")
print(b.recv(4).decode())
print(os.getpid() > 0, len(os.listdir("/proc/self/fd")) > 0)
"#;
        let out = under(sandbox, &format!("{ERRNO_OF}{PROGRAM}"));
        assert_eq!(
            out.trim(),
            "38 38 38 38 38\n38\n38\n38\n38\n38\nkept\nTrue True"
        );
    }
}
