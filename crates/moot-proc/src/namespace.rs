//! A PID namespace and a `/proc` of its own for each program moot starts.
//!
//! The seal keeps a started program out of moot's memory and environment, but the program
//! still sees every process of the machine: the user's shell and editor (not sealed, often
//! holding the same keys in their environment), and another moot in the milliseconds between
//! its start and its seal. In a PID namespace of its own, with `/proc` mounted again inside it,
//! a program sees only its namespace: the process that started it there (pid 1, a sealed copy
//! of moot that waits for it) and its own descendants. Nothing outside can be named, so
//! nothing outside can be read, traced or signalled; and pid 1 ignores every signal sent from
//! inside, so the program cannot end the process that watches it.
//!
//! Root gets the namespaces directly. An unprivileged user gets them inside a user namespace
//! of its own, in which it keeps its own uid (mapped to itself) and nothing more outside it.
//! Where neither can be made (user namespaces disabled, a container's seccomp profile, a
//! security module), programs run as before and [`namespace_gap`] says so.

use std::io;

/// What [`clone_isolated`] made for its child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A new PID and mount namespace (root, or any process with `CAP_SYS_ADMIN`).
    Pid,
    /// The same, inside a new user namespace that maps this uid and gid to themselves.
    UserAndPid,
    /// No namespace could be made: a plain child.
    None,
}

/// The flags [`clone_isolated`] tries, in order. A user namespace first, for root too: in it
/// the namespaces the program may make in turn are capped ([`NESTED_NAMESPACES`]), so that it
/// cannot use up the user's allowance and leave the next program without any.
/// A cgroup namespace too: the program's cgroup is the root of what it can name, so it cannot
/// move a process of its own elsewhere (`clone3` with `CLONE_INTO_CGROUP` needs no writable
/// mount, only a descriptor of the target).
/// Where no cgroup namespace can be made (moot run by an agent of another moot, a container
/// that allows none), the same without it: the PID namespace matters more.
const TRIES: [(libc::c_int, Isolation); 4] = [
    (
        libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWCGROUP,
        Isolation::UserAndPid,
    ),
    (
        libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS,
        Isolation::UserAndPid,
    ),
    (
        libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWCGROUP,
        Isolation::Pid,
    ),
    (libc::CLONE_NEWPID | libc::CLONE_NEWNS, Isolation::Pid),
];

/// The limits a user namespace sets on the namespaces made inside it, and the program's: a
/// few of each kind (a program that sandboxes itself with bubblewrap makes some), and no cgroup
/// namespace, whose own cgroup mount would let it kill or freeze moot's cgroup (without
/// `nsdelegate`, a cgroup delegated to the user is writable from one).
const NESTED_LIMITS: [(&std::ffi::CStr, &[u8]); 8] = [
    (c"/proc/sys/user/max_user_namespaces", b"32"),
    (c"/proc/sys/user/max_mnt_namespaces", b"32"),
    (c"/proc/sys/user/max_pid_namespaces", b"32"),
    (c"/proc/sys/user/max_net_namespaces", b"32"),
    (c"/proc/sys/user/max_ipc_namespaces", b"32"),
    (c"/proc/sys/user/max_uts_namespaces", b"32"),
    (c"/proc/sys/user/max_cgroup_namespaces", b"0"),
    (c"/proc/sys/user/max_time_namespaces", b"32"),
];

/// A raw `clone` that behaves as `fork` (no atfork handlers: they are not async-signal-safe)
/// with the namespace `flags` added. The child's pid, 0 in the child, or -1.
unsafe fn raw_clone(flags: libc::c_int) -> libc::c_long {
    let zero: libc::c_ulong = 0;
    libc::syscall(
        libc::SYS_clone,
        (flags | libc::SIGCHLD) as libc::c_ulong,
        zero,
        zero,
        zero,
        zero,
    )
}

/// Forks, putting the child in new namespaces: PID and mount, inside a new user namespace
/// where it can (else without one, as root). Returns the child's pid in this process and 0 in
/// the child, with what was made; the child calls [`enter_isolation`] first. When no namespace
/// can be made: a plain fork if `fallback`, else -1 with the error in `errno` (where the
/// machine could make them at start, a failure now is the user's allowance used up, and a
/// program must not then run beside everything else). -1 too when no fork could be made.
///
/// # Safety
///
/// Only where a `fork` may be made and only async-signal-safe calls may follow (between fork
/// and exec, or in a single-threaded process).
pub unsafe fn clone_isolated(fallback: bool) -> (libc::c_long, Isolation) {
    // The first user-namespace try's error that is not about cgroups says why (ENOSPC: the
    // user's allowance of user namespaces is used up); the tries without a user namespace
    // fail for want of privilege whatever the cause. The second try's error is kept: the first
    // may have failed for its cgroup namespace alone.
    let mut first_error = libc::EPERM;
    for (flags, isolation) in TRIES {
        let pid = raw_clone(flags);
        if pid >= 0 {
            return (pid, isolation);
        }
        if flags == TRIES[1].0 {
            first_error = *libc::__errno_location();
        }
    }
    if !fallback {
        *libc::__errno_location() = first_error;
        return (-1, Isolation::None);
    }
    (raw_clone(0), Isolation::None)
}

/// In the child [`clone_isolated`] made, first: maps its uid and gid to themselves (in a user
/// namespace), keeps its mounts from reaching the machine's, mounts a `/proc` that shows only
/// its PID namespace, and makes the kernel's settings read-only in it. `uid` and `gid` are the
/// parent's, read before the clone. The error of the step that failed; the mounts made until
/// then stay.
///
/// # Safety
///
/// Only in the child of [`clone_isolated`]: raw system calls on the stack (async-signal-safe).
pub unsafe fn enter_isolation(
    isolation: Isolation,
    uid: libc::uid_t,
    gid: libc::gid_t,
) -> io::Result<()> {
    if isolation == Isolation::None {
        return Ok(());
    }
    if isolation == Isolation::UserAndPid {
        // A process may map only its own ids, and its gid only once it has given up setgroups
        // in the namespace. A sealed process's /proc files belong to root, so for an
        // unprivileged user the seal is lifted for the three writes and put back. Meanwhile
        // only a process of the user's outside every namespace could attach to it: never a
        // program moot started, which cannot name it (and where no namespace can be made, none
        // is, and this is not reached).
        let unsealed = uid != 0;
        if unsealed {
            libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong, 0, 0, 0);
        }
        let mapped = write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_id_map(c"/proc/self/uid_map", uid))
            .and_then(|()| write_id_map(c"/proc/self/gid_map", gid));
        if unsealed {
            libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0);
        }
        mapped?;
        // Where a kernel lacks a kind, its file is missing: nothing to cap.
        for (limit, value) in NESTED_LIMITS {
            let _ = write_file(limit, value);
        }
    }
    crate::signal_safe::detach_mounts()?;
    if libc::mount(
        c"proc".as_ptr(),
        c"/proc".as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ) != 0
    {
        return Err(io::Error::last_os_error());
    }
    // For root: uid 0 owns the kernel's settings whatever its capabilities. An unprivileged
    // user cannot write them anyway, and an overmounted /proc would keep its programs from
    // mounting a /proc of their own (bubblewrap's `--proc`).
    if uid == 0 {
        crate::signal_safe::read_only_kernel_settings();
    } else {
        crate::signal_safe::read_only_sys();
    }
    crate::signal_safe::hide_terminals();
    Ok(())
}

/// Writes `bytes` to the file at `path` in one `write`.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let wrote = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let result = if usize::try_from(wrote).ok() == Some(bytes.len()) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    libc::close(fd);
    result
}

/// Writes `ID ID 1` (the id mapped to itself) to a `uid_map` or `gid_map`.
unsafe fn write_id_map(path: &std::ffi::CStr, id: u32) -> io::Result<()> {
    let mut line = [0u8; 32];
    let mut at = crate::signal_safe::decimal(id, &mut line);
    line[at] = b' ';
    at += 1;
    at += crate::signal_safe::decimal(id, &mut line[at..]);
    line[at..at + 3].copy_from_slice(b" 1\n");
    write_file(path, &line[..at + 3])
}

/// What [`namespace_gap`] found, by the code its probe exits with.
const MADE: i32 = 0;
const NO_NAMESPACE: i32 = 100;
const NOT_ENTERED: i32 = 101;
const NO_FORK: i32 = 102;

/// Why the programs this process starts would see the machine's other processes, or `None`
/// when they get a PID namespace and `/proc` of their own. Tried once in a child, by the same
/// calls every start makes (about a millisecond).
pub fn namespace_gap() -> Option<String> {
    static GAP: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    GAP.get_or_init(probe).clone()
}

/// [`namespace_gap`], but only the first time it is asked in this process: for a warning said
/// once, wherever it is first noticed (at start, or where a program is first started).
pub fn namespace_gap_once() -> Option<String> {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let gap = namespace_gap()?;
    (!SAID.swap(true, std::sync::atomic::Ordering::SeqCst)).then_some(gap)
}

fn probe() -> Option<String> {
    // SAFETY: getuid and getgid cannot fail; the child of fork makes raw system calls only
    // (async-signal-safe) and ends with _exit.
    let code = unsafe {
        let (uid, gid) = (libc::getuid(), libc::getgid());
        let child = libc::fork();
        if child < 0 {
            return Some(format!(
                "cannot check whether the programs moot starts can be kept apart: {}",
                io::Error::last_os_error()
            ));
        }
        if child == 0 {
            libc::_exit(probe_child(uid, gid));
        }
        let mut status = 0;
        if libc::waitpid(child as libc::pid_t, &mut status, 0) != child {
            return Some("cannot check whether the programs moot starts can be kept apart".into());
        }
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            NOT_ENTERED
        }
    };
    let why = match code {
        MADE => return None,
        NO_NAMESPACE => {
            "no PID namespace can be made here (user namespaces are off, or a \
                         container or security module forbids them)"
        }
        NO_FORK => "no process could be started to check",
        _ => "a PID namespace can be made, but no /proc of its own can be mounted in it",
    };
    Some(format!(
        "{why}: the programs moot starts (cli agents) see the machine's other processes, and \
         can read the environment of this user's processes that are not sealed, such as the \
         shell that holds the keys"
    ))
}

/// The probe's child: makes what an agent's start makes, reports it by exit code.
unsafe fn probe_child(uid: libc::uid_t, gid: libc::gid_t) -> i32 {
    let (pid, isolation) = clone_isolated(true);
    if pid == 0 {
        libc::_exit(match enter_isolation(isolation, uid, gid) {
            Ok(()) => MADE,
            Err(_) => NOT_ENTERED,
        });
    }
    if pid < 0 {
        return NO_FORK;
    }
    let mut status = 0;
    libc::waitpid(pid as libc::pid_t, &mut status, 0);
    if isolation == Isolation::None {
        return NO_NAMESPACE;
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        NOT_ENTERED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where no namespace can be made, `clone_isolated(false)` makes no process at all, and
    /// `clone_isolated(true)` a plain one. A forked child (single-threaded, as `unshare` of a
    /// user namespace needs) takes a user namespace of its own in which none may be made.
    #[test]
    fn without_a_namespace_to_make_a_program_is_not_started_unless_allowed() {
        if namespace_gap().is_some() {
            return; // this machine makes none at all
        }
        // SAFETY: the child makes system calls only and ends with _exit.
        let code = unsafe {
            let child = libc::fork();
            assert!(child >= 0);
            if child == 0 {
                let (uid, gid) = (libc::getuid(), libc::getgid());
                // Another test may have sealed this process: its own maps are then root's.
                libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong, 0, 0, 0);
                if libc::unshare(libc::CLONE_NEWUSER) != 0 || enter_maps_only(uid, gid).is_err() {
                    libc::_exit(10);
                }
                for (limit, _) in NESTED_LIMITS {
                    let _ = write_file(limit, b"0");
                }
                let (pid, isolation) = clone_isolated(false);
                if pid == 0 {
                    libc::_exit(0);
                }
                if pid >= 0 || isolation != Isolation::None {
                    libc::_exit(11); // a namespace was made where none may be
                }
                let (pid, isolation) = clone_isolated(true);
                if pid == 0 {
                    libc::_exit(0);
                }
                if pid < 0 || isolation != Isolation::None {
                    libc::_exit(12); // no plain process where one was allowed
                }
                libc::_exit(0);
            }
            let mut status = 0;
            libc::waitpid(child, &mut status, 0);
            libc::WEXITSTATUS(status)
        };
        assert_eq!(code, 0);
    }

    /// The maps of [`enter_isolation`] alone, for a process that unshared its user namespace.
    unsafe fn enter_maps_only(uid: libc::uid_t, gid: libc::gid_t) -> io::Result<()> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_id_map(c"/proc/self/uid_map", uid)?;
        write_id_map(c"/proc/self/gid_map", gid)
    }

    #[test]
    fn an_id_map_line_maps_the_id_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("map");
        std::fs::write(&path, "").unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path to a file of this test's.
        unsafe { write_id_map(&c, 4_294_967_294).unwrap() };
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "4294967294 4294967294 1\n"
        );
    }

    #[test]
    fn where_the_probe_finds_a_namespace_a_child_sees_only_itself_in_proc() {
        if namespace_gap().is_some() {
            return; // the machine cannot; the warning says so (tested where moot starts)
        }
        use std::os::unix::process::CommandExt;
        // Sealed, as moot is when it starts a program (a sealed process's /proc files are
        // root's).
        // SAFETY: prctl with integer arguments only.
        assert_eq!(
            unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) },
            0
        );
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut command = std::process::Command::new("sh");
        // The shell lists /proc itself (a glob), starting nothing.
        command.args(["-c", "echo $$ /proc/[0-9]*"]);
        // SAFETY: the hook forks with raw system calls; the clone's parent waits for it and
        // exits, the child goes on to exec (pid 1 of its namespace).
        unsafe {
            command.pre_exec(move || {
                let (pid, isolation) = clone_isolated(false);
                if pid == 0 {
                    return enter_isolation(isolation, uid, gid);
                }
                let mut status = 0;
                libc::waitpid(pid as libc::pid_t, &mut status, 0);
                libc::_exit(libc::WEXITSTATUS(status));
            })
        };
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        // The shell is pid 1 and the only process there is.
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "1 /proc/1\n");
    }
}
