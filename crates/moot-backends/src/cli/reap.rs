//! The per-call subreaper that makes a `cli` agent's processes end with its call.
//!
//! A process group does not hold an agent's processes: anything can leave it with `setsid`
//! (daemons do), and then neither killing the group nor moot's death reaches it. So each agent
//! runs under a reaper of its own, and the process moot spawns is that reaper:
//!
//! ```text
//! moot ── reaper (PR_SET_CHILD_SUBREAPER; the pid moot waits for) ── agent ── …
//! ```
//!
//! In the forked child, before exec ([`split_off_reaper`], run as the command's `pre_exec`),
//! the child marks itself a child subreaper and forks again: the new child goes on to exec the
//! agent, and this process stays behind as its reaper. Every descendant of the agent whose
//! parent dies (a double-forked daemon, a `setsid` one) is reparented to the reaper rather than
//! to init, so every process the agent ever started is below the reaper until it is reaped. The
//! reaper ends them all ([`kill_descendants`]: every process whose chain of parents leads to
//! it, SIGKILL, again until it has no child left) and exits with the agent's status:
//! - when the agent has exited and the rest have not ended by themselves within a grace period
//!   (moot reads the agent's answer at once, not when something it left behind closes stdout);
//! - when the lifeline closes: a pipe whose only writer is moot, held for the call. Dropping the
//!   call (success, error, cancellation at a deadline) closes it, and so does moot's death,
//!   however it dies: the kernel closes a dead process's descriptors. (PR_SET_PDEATHSIG would
//!   fire when the spawning *thread* ends, which under tokio's blocking pool is any time.)
//! - on SIGINT, SIGTERM or SIGHUP to the reaper itself.
//!
//! [`kill_live_agents`](super::kill_live_agents) also kills below each live reaper from moot, so
//! that at SIGINT/SIGTERM the agents are gone before moot is.
//!
//! Where the machine allows it, the agent does not run as the reaper's child but one step
//! further, in a PID namespace of its own (`moot_proc::clone_isolated`):
//!
//! ```text
//! moot ── reaper ── pid 1 of the namespace (init: waits, reports the agent's status) ── agent ── …
//! ```
//!
//! There the agent sees only its namespace: it cannot name the reaper, let alone kill it, and
//! pid 1 ignores every signal sent from inside. Without a namespace (the warning at start says
//! so), the agent is the reaper's child and runs as the same user, so it can SIGKILL the
//! reaper. Its processes then go to init; moot sees the reaper gone while the output is still
//! open, fails the call for good (no retry to do it again) and kills the agent's process group,
//! but whatever had left the group by then is free.
//!
//! Between fork and exec only async-signal-safe calls are allowed, and the reaper never execs:
//! everything it does is a raw system call on memory it owns (the stack, or pages it maps), with
//! no allocation, no locks and no panics.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The signals that wake the reaper: a child ended, or it is asked to end.
const WAKERS: [libc::c_int; 4] = [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Set by the reaper's handler of SIGINT, SIGTERM and SIGHUP (only ever in a reaper process).
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGCHLD must have a handler for it to interrupt `ppoll` (its default is to be ignored).
extern "C" fn on_child(_: libc::c_int) {}

/// A process seen in `/proc`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Proc {
    pid: libc::pid_t,
    ppid: libc::pid_t,
    /// How far below the root it is: 1 for a child, 0 when not below it (or not yet known).
    depth: u32,
}

/// How many processes one scan of `/proc` remembers. Beyond it, a scan still kills the root's
/// children; their own children become the root's when they die, and the next scan gets them.
pub(crate) const TABLE: usize = 1 << 15;
/// Bytes of directory entries read at once.
pub(crate) const DENTS: usize = 32 << 10;

/// The lifeline: (read end, for the reaper; write end, for moot to hold for the call). Both
/// close on exec, so no other program moot starts holds them.
pub(crate) fn lifeline() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // In the child, the agent's pipes are put on 0, 1 and 2 before the reaper splits off: a
    // lifeline there (moot started with a standard stream closed) would be overwritten.
    if fds[0] > 2 {
        return Ok((read, write));
    }
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor, owned by nothing else.
    let above = unsafe { libc::fcntl(fds[0], libc::F_DUPFD_CLOEXEC, 3) };
    if above < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    Ok((unsafe { OwnedFd::from_raw_fd(above) }, write))
}

/// Runs in the child that moot forked to run the agent, before exec. Returns `Ok` in a new child
/// (which goes on to exec the agent); in this process it becomes the agent's reaper and never
/// returns. `lifeline` is the read end of [`lifeline`]; `grace` is how long the agent's
/// descendants may live on after the agent has exited; `isolated_only`: the agent runs in
/// namespaces of its own or not at all (the machine made them at start).
///
/// # Safety
///
/// Only for a `pre_exec` hook: it forks, and the process it runs in never returns from it.
pub(crate) unsafe fn split_off_reaper(
    lifeline: RawFd,
    grace: Duration,
    isolated_only: bool,
    refusal: Option<&'static moot_proc::Refusal>,
) -> io::Result<()> {
    // A session of its own, without moot's terminal: the agent cannot open `/dev/tty` and type
    // into the user's shell (TIOCSTI), and a terminal's Ctrl-C reaches moot alone, which
    // decides. The reaper leads it, and its process group (the agent's, where moot kills).
    if libc::setsid() < 0 {
        return Err(io::Error::last_os_error());
    }
    let zero: libc::c_ulong = 0;
    if libc::prctl(
        libc::PR_SET_CHILD_SUBREAPER,
        1 as libc::c_ulong,
        zero,
        zero,
        zero,
    ) != 0
    {
        return Err(io::Error::last_os_error());
    }
    // The signals that end or wake the reaper wait (blocked) from before the fork, so none can
    // end it before its handlers are in place; the agent gets the mask back.
    let mut blocked: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut blocked);
    for sig in WAKERS {
        libc::sigaddset(&mut blocked, sig);
    }
    let mut before: libc::sigset_t = std::mem::zeroed();
    libc::sigprocmask(libc::SIG_BLOCK, &blocked, &mut before);
    // Where the agent's status comes back from its namespace's pid 1 (see run_as_init); never
    // written without a namespace, and read without blocking.
    let mut told = [0 as RawFd; 2];
    if libc::pipe2(told.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
        let e = io::Error::last_os_error();
        libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        return Err(e);
    }
    let (uid, gid) = (libc::getuid(), libc::getgid());
    // A raw fork, into namespaces of the agent's own where the machine allows: no atfork
    // handlers run (they are not async-signal-safe). The child only execs, or reports why it
    // could not, as std does after its own fork.
    let (child, isolation) = moot_proc::clone_isolated(!isolated_only);
    if child < 0 {
        let e = io::Error::last_os_error();
        libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        return Err(e);
    }
    if child == 0 {
        libc::close(told[0]);
        if isolation != moot_proc::Isolation::None {
            return run_as_init(
                isolation,
                (uid, gid),
                told[1],
                &before,
                grace,
                isolated_only,
                refusal,
            );
        }
        // The agent. Not a subreaper: that is not inherited. The lifeline closes at exec.
        libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        return exec_agent(true, refusal);
    }
    // The reaper holds nothing of the agent's: not its pipes (moot reads to their end), not the
    // pipe std reports exec failures on (moot's spawn waits for it to close), not the lifeline's
    // write end, nor anything else moot had open.
    close_all_but(&[lifeline, told[0]]);
    reap(child as libc::pid_t, lifeline, told[0], grace)
}

/// The last steps before the agent's exec: outside namespaces of its own (`confine`), root's
/// agent gets a mount namespace with the kernel's settings read-only (in them,
/// `enter_isolation` did that already); then no capability (root's agent cannot read sealed
/// moot's memory or environment), no descriptor of moot's but the three pipes, and the system
/// calls agents are refused (`moot_proc::Refusal`).
unsafe fn exec_agent(
    confine: bool,
    refusal: Option<&'static moot_proc::Refusal>,
) -> io::Result<()> {
    if confine {
        moot_proc::confine_for_exec();
    }
    moot_proc::strip_for_exec()?;
    match refusal {
        Some(refusal) => refusal.apply(),
        None => Ok(()),
    }
}

/// In the child made in namespaces of its own: it is pid 1 there, and becomes the agent's
/// parent inside them. It mounts the namespace's own `/proc`, forks the agent (which returns
/// to exec), and then only waits: it writes the agent's wait status to `told` for the reaper
/// (its own exit cannot carry a signal: pid 1 is immune to its own), reaps what the agent
/// leaves, and exits once nothing is left or `grace` has passed since the agent exited. Its
/// exit ends every process left in the namespace (the kernel kills them), and moot's reaper
/// outside kills it when the call ends. From inside, no signal reaches it (pid 1 gets only
/// those it handles) and it is sealed as moot is: the agent cannot end or read it.
unsafe fn run_as_init(
    isolation: moot_proc::Isolation,
    (uid, gid): (libc::uid_t, libc::gid_t),
    told: RawFd,
    before: &libc::sigset_t,
    grace: Duration,
    isolated_only: bool,
    refusal: Option<&'static moot_proc::Refusal>,
) -> io::Result<()> {
    // Gone with the reaper, however it ends (the reaper has one thread: this fires only at its
    // death).
    libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
    );
    // Where the check at start made a namespace and its /proc, an agent runs only in one: a
    // failure here (std reports it as the spawn's) fails the call. Where it could not, the
    // warning said so and the agent runs as it can.
    let entered = match moot_proc::enter_isolation(isolation, uid, gid) {
        Ok(()) => true,
        Err(e) if isolated_only => return Err(e),
        Err(_) => false,
    };
    let agent = libc::syscall(
        libc::SYS_clone,
        libc::SIGCHLD as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
    );
    if agent < 0 {
        return Err(io::Error::last_os_error());
    }
    if agent == 0 {
        libc::sigprocmask(libc::SIG_SETMASK, before, std::ptr::null_mut());
        return exec_agent(!entered, refusal);
    }
    let agent = agent as libc::pid_t;
    close_all_but(&[told]);
    handle(
        libc::SIGCHLD,
        on_child as extern "C" fn(libc::c_int) as usize,
        libc::SA_NOCLDSTOP,
    );
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        handle(sig, libc::SIG_IGN, 0);
    }
    // SIGCHLD is let in only while waiting, so none is lost between a check and the wait.
    let mut only_child: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut only_child);
    libc::sigaddset(&mut only_child, libc::SIGCHLD);
    libc::sigprocmask(libc::SIG_BLOCK, &only_child, std::ptr::null_mut());
    let mut waiting: libc::sigset_t = std::mem::zeroed();
    libc::sigprocmask(libc::SIG_SETMASK, std::ptr::null(), &mut waiting);
    libc::sigdelset(&mut waiting, libc::SIGCHLD);
    let mut exited_at: Option<i128> = None;
    loop {
        let none_left = collect_ended(agent, |st| {
            let bytes = st.to_ne_bytes();
            libc::write(told, bytes.as_ptr().cast(), bytes.len());
            exited_at = Some(nanos(&now()));
        });
        if none_left {
            libc::_exit(0);
        }
        // Past the grace, the kernel ends what the agent left when this process exits.
        let timeout = exited_at.map(|at| grace_left(at, grace).unwrap_or_else(|| libc::_exit(0)));
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        libc::ppoll(std::ptr::null_mut(), 0, timeout_ptr, &waiting);
    }
}

/// Collects every child that has ended, calling `agent_ended` with the agent's wait status when
/// it is among them; whether no child is left at all.
unsafe fn collect_ended(agent: libc::pid_t, mut agent_ended: impl FnMut(libc::c_int)) -> bool {
    loop {
        let mut st = 0;
        let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if pid == agent {
            agent_ended(st);
        } else if pid <= 0 {
            return pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
        }
    }
}

/// What is left of `grace` after the agent exited at `exited_at` (monotonic nanoseconds), as a
/// timeout; `None` once it has passed.
fn grace_left(exited_at: i128, grace: Duration) -> Option<libc::timespec> {
    let grace = i128::try_from(grace.as_nanos()).unwrap_or(i128::MAX);
    let left = exited_at.saturating_add(grace) - nanos(&now());
    (left > 0).then(|| timespec(left))
}

/// The agent's wait status as its namespace's pid 1 told it, if it did.
fn told_status(told: RawFd) -> Option<libc::c_int> {
    let mut bytes = [0u8; 4];
    // SAFETY: read writes at most the buffer's length.
    let got = unsafe { libc::read(told, bytes.as_mut_ptr().cast(), bytes.len()) };
    (got == 4).then(|| libc::c_int::from_ne_bytes(bytes))
}

/// Closes every descriptor but those in `keep` (at most two, each below `c_uint::MAX`).
unsafe fn close_all_but(keep: &[RawFd]) {
    let mut kept = [libc::c_uint::MAX; 2];
    for (slot, fd) in kept.iter_mut().zip(keep) {
        *slot = *fd as libc::c_uint;
    }
    kept.sort_unstable();
    let mut from: libc::c_uint = 0;
    for fd in kept.into_iter().filter(|&fd| fd != libc::c_uint::MAX) {
        if fd > from {
            close_range(from, fd - 1);
        }
        from = fd + 1;
    }
    close_range(from, libc::c_uint::MAX);
}

/// Closes the descriptors from `first` to `last`, both included.
unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) {
    let (lo, hi, flags) = (
        libc::c_ulong::from(first),
        libc::c_ulong::from(last),
        0 as libc::c_ulong,
    );
    if libc::syscall(libc::SYS_close_range, lo, hi, flags) != 0 {
        // No close_range (Linux before 5.9): one by one, up to the descriptor limit.
        let top = moot_proc::descriptor_limit();
        let mut fd = first;
        while fd <= last && fd < top {
            libc::close(fd as RawFd);
            fd += 1;
        }
    }
}

fn now() -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the time it is given a place for.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t
}

fn nanos(t: &libc::timespec) -> i128 {
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

fn timespec(nanos: i128) -> libc::timespec {
    let nanos = nanos.max(0);
    libc::timespec {
        tv_sec: (nanos / 1_000_000_000) as libc::time_t,
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    }
}

/// The reaper's life: wait for the agent, the lifeline or a signal; end everything below; exit
/// as the agent did.
unsafe fn reap(agent: libc::pid_t, lifeline: RawFd, told: RawFd, grace: Duration) -> ! {
    // The signals that wake the reaper (blocked since before the fork) are let in only while
    // it waits in ppoll, so none is lost between a check and the wait.
    let mut waiting: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut waiting);
    STOP.store(false, Ordering::SeqCst);
    handle(
        libc::SIGCHLD,
        on_child as extern "C" fn(libc::c_int) as usize,
        libc::SA_NOCLDSTOP,
    );
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        handle(sig, on_stop as extern "C" fn(libc::c_int) as usize, 0);
    }
    // The reaper holds no terminal and writes nowhere; a closed pipe must not end it.
    handle(libc::SIGPIPE, libc::SIG_IGN, 0);

    let mut status: Option<libc::c_int> = None;
    let mut exited_at: i128 = 0;
    loop {
        // Collect whatever has ended; with the agent gone and no child left, all is done.
        let none_left = collect_ended(agent, |st| {
            status = Some(told_status(told).unwrap_or(st));
            exited_at = nanos(&now());
        });
        if none_left {
            exit_as(status);
        }
        if STOP.load(Ordering::SeqCst) {
            break;
        }
        let timeout = match status {
            None => None,
            Some(_) => match grace_left(exited_at, grace) {
                Some(left) => Some(left),
                None => break, // the agent is done; whatever it left has had its time
            },
        };
        let mut fd = libc::pollfd {
            fd: lifeline,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        if libc::ppoll(&mut fd, 1, timeout_ptr, &waiting) > 0 {
            break; // the lifeline closed (moot never writes to it): the call is over
        }
    }
    end_everything_below(agent, told, &mut status, &waiting)
}

/// Installs `action` (a handler or `SIG_IGN`) for `sig`.
unsafe fn handle(sig: libc::c_int, action: libc::sighandler_t, flags: libc::c_int) {
    let mut sa: libc::sigaction = std::mem::zeroed();
    sa.sa_sigaction = action;
    sa.sa_flags = flags;
    libc::sigemptyset(&mut sa.sa_mask);
    libc::sigaction(sig, &sa, std::ptr::null_mut());
}

/// Kills every process below this one until it has no child left, then exits as the agent did.
unsafe fn end_everything_below(
    agent: libc::pid_t,
    told: RawFd,
    status: &mut Option<libc::c_int>,
    waiting: &libc::sigset_t,
) -> ! {
    let me = libc::getpid();
    // Without memory for a table, a scan still kills the reaper's children; killing them makes
    // their children the reaper's, one generation a pass.
    let mut small = [0u8; 4096];
    let (dents, table): (&mut [u8], &mut [Proc]) = match scratch() {
        Some((dents, table)) => (dents, table),
        None => (&mut small, &mut []),
    };
    loop {
        kill_descendants(me, dents, table);
        if collect_ended(agent, |st| *status = Some(told_status(told).unwrap_or(st))) {
            exit_as(*status);
        }
        // Something is still alive (dying, or born after the scan): scan again when a child
        // ends, or in 20 ms at the latest.
        let pause = timespec(20_000_000);
        libc::ppoll(std::ptr::null_mut(), 0, &pause, waiting);
    }
}

/// Memory for a scan, mapped (not allocated: the reaper may not use the allocator).
unsafe fn scratch() -> Option<(&'static mut [u8], &'static mut [Proc])> {
    let bytes = DENTS + TABLE * std::mem::size_of::<Proc>();
    let map = libc::mmap(
        std::ptr::null_mut(),
        bytes,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if map == libc::MAP_FAILED {
        return None;
    }
    let dents = std::slice::from_raw_parts_mut(map.cast::<u8>(), DENTS);
    // Page-aligned plus a multiple of 8: aligned for Proc; zeroed pages are valid Procs.
    let table = std::slice::from_raw_parts_mut(map.cast::<u8>().add(DENTS).cast::<Proc>(), TABLE);
    Some((dents, table))
}

/// Exits as the agent did: its exit code, or the signal that ended it.
unsafe fn exit_as(status: Option<libc::c_int>) -> ! {
    let sig = match status {
        Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
        Some(st) if libc::WIFSIGNALED(st) => libc::WTERMSIG(st),
        _ => libc::SIGKILL,
    };
    // The same signal ends this process, without a core dump of the reaper.
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    libc::setrlimit(libc::RLIMIT_CORE, &none);
    handle(sig, libc::SIG_DFL, 0);
    let mut only: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut only);
    libc::sigaddset(&mut only, sig);
    libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
    libc::kill(libc::getpid(), sig);
    libc::_exit(128 + sig)
}

/// A pid from a `/proc` entry's name (digits only).
fn pid_of(name: &[u8]) -> Option<libc::pid_t> {
    if name.is_empty() || name.len() > 9 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        name.iter()
            .fold(0, |n: libc::pid_t, d| n * 10 + libc::pid_t::from(d - b'0')),
    )
}

/// The parent of `pid`, from `/proc/PID/stat` (`PID (COMM) STATE PPID …`; COMM may hold any
/// bytes, `)` and spaces included, but nothing after it does, so its end is the last `)`).
pub(crate) fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    path[..6].copy_from_slice(b"/proc/");
    let n = moot_proc::decimal(u32::try_from(pid).ok()?, &mut path[6..]);
    path[6 + n..6 + n + 6].copy_from_slice(b"/stat\0");
    let mut buf = [0u8; 160];
    // SAFETY: the path is NUL-terminated; read writes at most the buffer's length.
    let got = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let got = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        usize::try_from(got).ok()?
    };
    let line = &buf[..got];
    let close = line.iter().rposition(|&b| b == b')')?;
    // ") S PPID "
    let rest = line.get(close + 4..)?;
    let end = rest.iter().position(|&b| b == b' ')?;
    pid_of(&rest[..end])
}

/// SIGKILL to `pid`, if it is still the process whose parent was `ppid` (or, orphaned since, the
/// root's): through a pidfd, so that a pid freed and reused since the scan is never signalled.
fn kill_if_below(pid: libc::pid_t, ppid: libc::pid_t, root: libc::pid_t) -> bool {
    let still_below = || matches!(parent_of(pid), Some(p) if p == ppid || p == root);
    // SAFETY: plain system calls on integers; the pidfd is closed before returning.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_pidfd_open,
            libc::c_long::from(pid),
            0 as libc::c_ulong,
        );
        if fd < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
                return false; // gone
            }
            // No pidfds here (Linux before 5.3, or no descriptor to spare): a plain kill.
            return still_below() && libc::kill(pid, libc::SIGKILL) == 0;
        }
        let killed = still_below()
            && libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                libc::c_long::from(libc::SIGKILL),
                std::ptr::null::<libc::siginfo_t>(),
                0 as libc::c_ulong,
            ) == 0;
        libc::close(fd as RawFd);
        killed
    }
}

/// One pass: SIGKILL to every process whose chain of parents leads to `root` (not `root`
/// itself). Allocation-free: `dents` and `table` are the scan's memory ([`DENTS`], [`TABLE`]).
/// The number of processes signalled; processes born meanwhile need another pass.
pub(crate) fn kill_descendants(root: libc::pid_t, dents: &mut [u8], table: &mut [Proc]) -> usize {
    let mut killed = 0;
    let mut n = 0;
    moot_proc::for_each_entry(c"/proc", dents, |name| {
        let Some(pid) = pid_of(name) else { return };
        let Some(ppid) = parent_of(pid) else { return };
        if pid == root {
            return;
        }
        let depth = u32::from(ppid == root);
        if n < table.len() {
            table[n] = Proc { pid, ppid, depth };
            n += 1;
        } else if depth == 1 {
            // No room: a child is killed now all the same (its own children become the root's
            // when it dies, for the next pass).
            killed += usize::from(kill_if_below(pid, ppid, root));
        }
    });
    let table = &mut table[..n];
    // /proc lists pids in increasing order; sorted, parents are found by binary search.
    // (sort_unstable sorts in place, without allocating.)
    if !table.windows(2).all(|w| w[0].pid < w[1].pid) {
        table.sort_unstable_by_key(|p| p.pid);
    }
    // Depths, from the root's children down.
    let mut deepest = 1;
    loop {
        let mut more = false;
        for i in 0..table.len() {
            if table[i].depth != 0 {
                continue;
            }
            let ppid = table[i].ppid;
            if let Ok(j) = table.binary_search_by_key(&ppid, |p| p.pid) {
                if table[j].depth != 0 {
                    table[i].depth = table[j].depth.saturating_add(1);
                    deepest = deepest.max(table[i].depth);
                    more = true;
                }
            }
        }
        if !more {
            break;
        }
    }
    // The deepest first: a process is killed while its parent still lives, so that it is
    // still known by its parent when it is checked (an orphan's new parent would be the root,
    // or init when the root is no subreaper).
    for depth in (1..=deepest).rev() {
        for p in table.iter().filter(|p| p.depth == depth) {
            killed += usize::from(kill_if_below(p.pid, p.ppid, root));
        }
    }
    killed
}

/// Kills everything below `reaper` from another process (moot), in passes until a pass finds
/// nothing (at most a few: the reaper itself finishes the job). Allocates its scan memory.
pub(crate) fn kill_below(reaper: libc::pid_t) {
    let mut dents = vec![0u8; DENTS];
    let mut table = vec![Proc::default(); TABLE];
    for _ in 0..5 {
        if kill_descendants(reaper, &mut dents, &mut table) == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_pid_parse() {
        let mut out = [0u8; 12];
        let n = moot_proc::decimal(4_194_304, &mut out);
        assert_eq!(&out[..n], b"4194304");
        let n = moot_proc::decimal(0, &mut out);
        assert_eq!(&out[..n], b"0");
        assert_eq!(pid_of(b"123"), Some(123));
        assert_eq!(pid_of(b"self"), None);
        assert_eq!(pid_of(b""), None);
        assert_eq!(pid_of(b"1234567890"), None);
    }

    #[test]
    fn the_parent_of_this_process_is_read_from_proc() {
        let me = libc::pid_t::try_from(std::process::id()).unwrap();
        // SAFETY: getppid has no preconditions.
        assert_eq!(parent_of(me), Some(unsafe { libc::getppid() }));
        assert_eq!(parent_of(1), Some(0));
    }

    #[test]
    fn kill_descendants_kills_below_the_root_and_not_the_root() {
        // A shell with a child and a grandchild, each in a session of its own.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let mut root = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "setsid sh -c 'sleep 1000 & echo $! > {d}/g; wait' &\n\
                 echo $! > {d}/c.tmp; mv {d}/c.tmp {d}/c; wait"
            ))
            .spawn()
            .unwrap();
        let read = |name: &str| -> Option<libc::pid_t> {
            std::fs::read_to_string(dir.path().join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let started = std::time::Instant::now();
        let (child, grandchild) = loop {
            if let (Some(c), Some(g)) = (read("c"), read("g")) {
                break (c, g);
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let root_pid = libc::pid_t::try_from(root.id()).unwrap();
        let mut dents = vec![0u8; DENTS];
        let mut table = vec![Proc::default(); TABLE];
        assert!(kill_descendants(root_pid, &mut dents, &mut table) >= 2);
        // The shell waits for its child, which is killed: it exits by itself, not killed.
        let status = root.wait().unwrap();
        assert!(
            status.code().is_some(),
            "the root was not killed: {status:?}"
        );
        let gone = |pid: libc::pid_t| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z ") || s.contains(") X "))
                .unwrap_or(true)
        };
        let started = std::time::Instant::now();
        while !(gone(child) && gone(grandchild)) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "still running: {child} {grandchild}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
