//! What a process moot starts cannot take from moot.
//!
//! moot holds secrets: API keys read from its environment, a store's password, a server's
//! token. The programs it starts (agent CLIs, pip, the sandbox) are not trusted with them, and
//! on Linux a process of the same user can read another's environment (`/proc/PID/environ`),
//! memory (`/proc/PID/mem`, ptrace) and command line (`/proc/PID/cmdline`), and inherits every
//! descriptor not marked close-on-exec. Each of those is closed here:
//!
//! - [`seal`]: moot marks itself non-dumpable (`PR_SET_DUMPABLE` 0). The kernel then lets only
//!   a process with `CAP_SYS_PTRACE` read its environment or memory, or attach to it; the mark
//!   is kept across `fork` (an agent's reaper, a copy of moot, is sealed too) and reset by
//!   `exec` (the program started is not). This holds for an unprivileged user without anything
//!   else, and keeps core dumps (which would hold the keys) from being written.
//! - [`strip_for_exec`], in the child before `exec`: every capability is dropped, from the
//!   bounding set too, so a program started by root runs as uid 0 without `CAP_SYS_PTRACE` (or
//!   any other) and cannot get one back by executing something; with the seal, root's agents
//!   are then refused moot's environment and memory as an unprivileged user's are. Every
//!   descriptor but the standard three is marked close-on-exec.
//! - [`confine_for_exec`], before that, under root: the kernel's settings are read-only for the
//!   program, since uid 0 owns them without any capability and some of them (`core_pattern`)
//!   make the kernel run a program with every capability.
//! - [`mask_arguments`]: the secrets given on moot's command line are overwritten in place
//!   with `*` (inside the arguments that carry them only), so `/proc/PID/cmdline` (readable by
//!   every process of the machine, sealed or not) no longer shows them; `mysql -p` does the
//!   same. Between `exec` and the mask there are a few milliseconds; the environment variables
//!   the options also read have no such window.
//!
//! - [`clone_isolated`] and [`enter_isolation`] (the `namespace` module): a started program
//!   gets a PID namespace and a `/proc` of its own, so that it cannot even name the machine's
//!   other processes: the user's unsealed ones (a shell holding the keys), or another moot in
//!   the moments between its start and its seal.
//!
//! The seal and the capability drop need no namespace and hold for root and unprivileged users
//! alike; the namespaces need root, or user namespaces for an unprivileged user.
//! [`capability_gap`] says when this process cannot drop capabilities (root without
//! `CAP_SETPCAP`) and [`namespace_gap`] when no namespace can be made, for warnings at start.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Once;

mod namespace;
mod observe;
mod refuse;
mod signal_safe;

pub use namespace::{
    clone_isolated, enter_isolation, namespace_gap, namespace_gap_once, Isolation,
};
pub use observe::{is_running, pid_from_record, processes_with_argument};
pub use refuse::Refusal;
use signal_safe::read_only_kernel_settings;
pub use signal_safe::{decimal, for_each_entry};

/// Marks this process non-dumpable, once; later calls do nothing. Called before anything is
/// started (every spawn in moot calls it first), so no front end can forget it.
pub fn seal() -> io::Result<()> {
    static SEALED: Once = Once::new();
    let mut result = Ok(());
    SEALED.call_once(|| {
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) } != 0 {
            result = Err(io::Error::last_os_error());
        }
    });
    result
}

/// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap` says it;
/// 63 covers every kernel, and dropping an unknown one only fails with EINVAL).
const CAP_LAST: libc::c_int = 63;

/// `CAP_SETPCAP`: the capability that dropping from the bounding set needs.
const CAP_SETPCAP: libc::c_int = 8;

/// `CAP_SYS_PTRACE`: the capability that reads a non-dumpable process.
const CAP_SYS_PTRACE: libc::c_ulong = 19;

/// The header `capget`/`capset` take (version 3: two 32-bit sets of each kind).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

impl CapHeader {
    /// This process, in the version that takes two sets of each kind.
    fn this_process() -> CapHeader {
        CapHeader {
            version: 0x2008_0522,
            pid: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// No capability, in the two sets version 3 takes.
const NO_CAPABILITIES: [CapData; 2] = [CapData {
    effective: 0,
    permitted: 0,
    inheritable: 0,
}; 2];

/// For a `pre_exec` hook: drops every capability (bounding, ambient, effective, permitted and
/// inheritable) and marks every descriptor above 2 close-on-exec.
///
/// Dropping from the bounding set needs `CAP_SETPCAP`: an unprivileged process has none to
/// drop and gets EPERM, which is ignored; what it cannot drop it does not hold.
///
/// # Safety
///
/// Only between `fork` and `exec`: it makes raw system calls on the stack and nothing else
/// (async-signal-safe).
pub unsafe fn strip_for_exec() -> io::Result<()> {
    for cap in 0..=CAP_LAST {
        libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
        0,
        0,
        0,
    );
    let mut header = CapHeader::this_process();
    if libc::syscall(
        libc::SYS_capset,
        &mut header as *mut CapHeader,
        NO_CAPABILITIES.as_ptr(),
    ) != 0
    {
        return Err(io::Error::last_os_error());
    }
    mark_descriptors_cloexec();
    Ok(())
}

/// For a `pre_exec` hook, before [`strip_for_exec`]: under root, the program gets a mount
/// namespace of its own in which the kernel's settings (`/proc/sys`, `/sys`, `/proc/sysrq-trigger`)
/// are read-only. uid 0 owns those files whatever its capabilities, and some make the kernel run
/// a program of the writer's choosing with every capability (`kernel.core_pattern`,
/// `kernel.modprobe`, `/sys/kernel/uevent_helper`), which could then read moot. Once the
/// capabilities are dropped, the program cannot remount them. Where no namespace can be made
/// (a container without `CAP_SYS_ADMIN`, whose `/proc/sys` is read-only already) nothing is
/// done. Not root: nothing to do (an unprivileged user cannot write them).
///
/// # Safety
///
/// Only between `fork` and `exec`: raw system calls on static strings (async-signal-safe).
pub unsafe fn confine_for_exec() {
    if libc::geteuid() != 0 {
        return;
    }
    if libc::unshare(libc::CLONE_NEWNS) != 0 || signal_safe::detach_mounts().is_err() {
        return;
    }
    read_only_kernel_settings();
    signal_safe::hide_terminals();
}

/// Marks every descriptor above 2 close-on-exec: a program started gets its standard streams
/// and nothing else of moot's, whatever a library left open without the flag.
/// Async-signal-safe (system calls on descriptor numbers only).
pub fn mark_descriptors_cloexec() {
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
            for fd in 3..descriptor_limit() {
                libc::fcntl(fd as libc::c_int, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

/// One past the highest descriptor this process may have open (its `RLIMIT_NOFILE`, at most
/// 2²⁰; 4,096 when it cannot be read), for loops over descriptors where `close_range` is
/// missing. Async-signal-safe.
pub fn descriptor_limit() -> libc::c_uint {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit it is given a place for.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as libc::c_uint
    } else {
        4096
    }
}

/// Why a program this process starts could still read its secrets, if it could: root that
/// cannot drop capabilities (no `CAP_SETPCAP`, as in some containers) leaves its programs
/// `CAP_SYS_PTRACE` whenever the bounding set holds it. `None` when [`strip_for_exec`] holds.
pub fn capability_gap() -> Option<String> {
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let mut header = CapHeader::this_process();
    let mut data = NO_CAPABILITIES;
    // SAFETY: capget writes two CapData into the array it is given.
    let read = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    let can_drop = read == 0 && data[0].effective & (1 << CAP_SETPCAP) != 0;
    // SAFETY: prctl with integer arguments only.
    let ptrace_bounded =
        unsafe { libc::prctl(libc::PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) } == 1;
    (!can_drop && ptrace_bounded).then(|| {
        "moot runs as root without CAP_SETPCAP, so the programs it starts (cli agents, pip) \
         keep CAP_SYS_PTRACE and can read moot's keys from its memory; run moot as an \
         unprivileged user, or give it CAP_SETPCAP"
            .to_string()
    })
}

/// A value given on the command line and the secrets inside it (a URL's password, or the whole
/// value of a token).
#[derive(Debug, Clone)]
pub struct Typed {
    pub value: String,
    pub secrets: Vec<String>,
}

/// Overwrites each secret with `*` inside the arguments that give its value (`VALUE`, or
/// `--name=VALUE`), so that `/proc/PID/cmdline` no longer shows it; the rest of the command
/// line is left as it is. Returns how many occurrences were masked.
///
/// The arguments live at the top of the stack, where the kernel reads them for `cmdline`;
/// they are rewritten through `/proc/self/mem`, after checking that what is there is what
/// `cmdline` says, so a wrong address can only fail, never write elsewhere. Call it before
/// other threads start: the standard library reads the same bytes for `std::env::args`, which
/// shows the masked text afterwards.
pub fn mask_arguments(typed: &[Typed]) -> io::Result<usize> {
    if typed.iter().all(|t| t.secrets.iter().all(String::is_empty)) {
        return Ok(0);
    }
    let (start, end) = argument_span()?;
    let cmdline = std::fs::read("/proc/self/cmdline")?;
    let length = usize::try_from(end.saturating_sub(start))
        .map_err(|_| io::Error::other("the command line's span does not fit in memory"))?;
    let mem = File::options()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut there = vec![0u8; length];
    mem.read_exact_at(&mut there, start)?;
    if there != cmdline {
        return Err(io::Error::other(
            "the command line in memory is not what /proc/self/cmdline shows",
        ));
    }
    let count = mask(&mut there, typed);
    if count > 0 {
        mem.write_all_at(&there, start)?;
    }
    Ok(count)
}

/// Masks, in `cmdline` (arguments separated by NUL), each secret inside the arguments that end
/// with its value.
fn mask(cmdline: &mut [u8], typed: &[Typed]) -> usize {
    let mut count = 0;
    let mut from = 0;
    while from < cmdline.len() {
        let to = cmdline[from..]
            .iter()
            .position(|&b| b == 0)
            .map_or(cmdline.len(), |n| from + n);
        for t in typed {
            let value = t.value.as_bytes();
            let argument = &cmdline[from..to];
            if value.is_empty() || !argument.ends_with(value) {
                continue;
            }
            let value_at = to - value.len();
            for secret in t.secrets.iter().map(String::as_bytes) {
                if secret.is_empty() {
                    continue;
                }
                let mut at = value_at;
                while let Some(found) = find(&cmdline[at..to], secret) {
                    let hit = at + found;
                    cmdline[hit..hit + secret.len()].fill(b'*');
                    at = hit + secret.len();
                    count += 1;
                }
            }
        }
        from = to + 1;
    }
    count
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `arg_start` and `arg_end` of `/proc/self/stat` (fields 48 and 49, Linux 3.5 and later).
fn argument_span() -> io::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses: the
    // fields are counted from after its last ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| io::Error::other("/proc/self/stat has no command name"))?;
    // `rest` starts at field 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/self/stat has no field {n}")))
    };
    Ok((field(48)?, field(49)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_span_is_as_long_as_the_command_line() {
        let (start, end) = argument_span().unwrap();
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!((end - start) as usize, cmdline.len());
    }

    #[test]
    fn only_the_secrets_inside_their_own_arguments_are_masked() {
        let typed = [
            Typed {
                value: "postgres://moot:pw@db/moot".into(),
                secrets: vec!["moot".into(), "pw".into()],
            },
            Typed {
                value: "tok".into(),
                secrets: vec!["tok".into()],
            },
        ];
        let mut cmdline =
            b"/bin/moot\0work\0--store=postgres://moot:pw@db/moot\0--token\0tok\0pw".to_vec();
        assert_eq!(mask(&mut cmdline, &typed), 4);
        assert_eq!(
            String::from_utf8(cmdline).unwrap(),
            "/bin/moot\0work\0--store=postgres://****:**@db/****\0--token\0***\0pw"
        );
    }

    #[test]
    fn sealing_makes_this_process_non_dumpable() {
        // SAFETY: prctl with integer arguments only.
        let dumpable = || unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
        seal().unwrap();
        assert_eq!(dumpable(), 0);
        seal().unwrap();
        assert_eq!(dumpable(), 0);
    }

    /// `sh -c SCRIPT` started with [`strip_for_exec`] before exec: what it printed.
    fn stripped(script: &str) -> String {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sh");
        command.args(["-c", script]);
        // SAFETY: strip_for_exec only makes system calls.
        unsafe { command.pre_exec(|| strip_for_exec()) };
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_stripped_program_holds_no_capability_and_root_cannot_regain_one() {
        let status = stripped("grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status");
        for line in status.lines() {
            assert!(line.ends_with("0000000000000000"), "{line}");
        }
        assert_eq!(status.lines().count(), 4, "{status}");
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // Root keeps none across a further exec either: the bounding set is empty.
            let bounding = stripped("grep '^CapBnd:' /proc/self/status");
            assert!(
                bounding.trim_end().ends_with("0000000000000000"),
                "{bounding}"
            );
        }
    }

    #[test]
    fn a_stripped_program_gets_no_descriptor_of_ours_but_its_standard_streams() {
        // A descriptor opened without close-on-exec, as a C library might.
        let path = std::ffi::CString::new("/proc/self/status").unwrap();
        // SAFETY: open with a valid C string; the descriptor is closed below.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
        assert!(fd > 2);
        let listed = stripped("ls /proc/$$/fd");
        // SAFETY: fd was opened above and is owned by nothing else.
        unsafe { libc::close(fd) };
        let fds: Vec<&str> = listed.split_whitespace().collect();
        assert!(!fds.contains(&fd.to_string().as_str()), "{fds:?}");
        for fd in &fds {
            let n: i32 = fd.parse().unwrap();
            // 0-2, and 255: where bash keeps its script (sh may be bash).
            assert!(n <= 2 || n == 255, "{fds:?}");
        }
    }
}
