//! The bounds that no per-process limit can give: the memory of all of a sandbox's processes
//! together, and the number of files in its writable places.
//!
//! `RLIMIT_AS` bounds each process; a program that forks 13 children of 450 MiB each stays
//! under it and holds 6 GiB. And the tmpfs size cap counts bytes, not files: 300,000 empty
//! files cost the host's kernel memory and fit in any size. The kernel bounds both only for
//! a cgroup, which a host does not always delegate (this one does not), so a watcher thread
//! samples them instead, on every host: every [`POLL`] it finds the sandbox's processes (the
//! descendants of bubblewrap, found by their parent ids in `/proc`), sums their memory, counts
//! the inodes of the sandbox's `/tmp` and `/dev/shm` (through `/proc/PID/root`), and kills
//! the sandbox's process group when either passes its limit. Being a sample, it lets an
//! allocation between two samples pass the limit for up to one interval; `RLIMIT_AS` still
//! bounds each process at any instant.
//!
//! Memory is the proportional set size (PSS), so pages that forked processes share count
//! once; the cheaper resident size, which counts them in each, is read first and PSS only
//! when the residents together pass the limit. To the pages is added the memory the program
//! holds without mapping it, which no process's size shows ([`Watcher::held_outside_pages`]):
//! shared-memory files it holds open (memfds, files of other tmpfs mounts), what its own
//! `/tmp` and `/dev/shm` hold, and the bytes written to its pipes and sockets and not yet read.
//! A shared-memory file both mapped and held open counts its mapped pages twice, which can only
//! stop a program early.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::limits::Limits;

/// How often the watcher samples.
const POLL: Duration = Duration::from_millis(20);

/// `statfs`'s filesystem type of a tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// `statfs`'s filesystem type of hugetlbfs (a memfd made with `MFD_HUGETLB`).
const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

/// Which bound the watcher stopped a sandbox at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The memory of all of its processes together.
    Memory,
    /// The files in its writable places.
    Files,
}

/// Why the watcher killed a sandbox: the bound, and the message that says by how much.
#[derive(Debug, Clone)]
pub(crate) struct Breach {
    pub(crate) bound: Bound,
    pub(crate) why: String,
}

impl Breach {
    /// The verdict that names the bound.
    pub(crate) fn verdict(&self) -> moot_core::validation::Verdict {
        use moot_core::validation::Verdict;
        match self.bound {
            Bound::Memory => Verdict::MemoryLimit,
            Bound::Files => Verdict::Killed,
        }
    }
}

/// A running watcher; dropping it stops the thread.
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
    breach: Arc<Mutex<Option<Breach>>>,
}

impl Watch {
    /// Starts watching the sandbox whose bubblewrap process is `leader` (also its process
    /// group's id).
    pub(crate) fn start(leader: u32, limits: &Limits) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let breach = Arc::new(Mutex::new(None));
        let watcher = Watcher {
            leader,
            memory_bytes: limits.memory_bytes,
            files: limits.files,
            tmp_bytes: limits.tmp_bytes,
            known: HashMap::new(),
            root_of: None,
            page: page_size(),
        };
        let (thread_stop, thread_breach) = (Arc::clone(&stop), Arc::clone(&breach));
        let spawned = std::thread::Builder::new()
            .name("moot-sandbox-watch".into())
            .spawn(move || watcher.run(&thread_stop, &thread_breach));
        if spawned.is_err() {
            // No thread, no watcher: the per-process limits still hold. Said where it can be
            // seen rather than failing the check.
            eprintln!("moot-sandbox: could not start the memory watcher; per-process limits only");
        }
        Watch { stop, breach }
    }

    /// Why the watcher killed the sandbox, if it did.
    pub(crate) fn breach(&self) -> Option<Breach> {
        lock(&self.breach).clone()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Watcher {
    leader: u32,
    memory_bytes: u64,
    files: u64,
    tmp_bytes: u64,
    /// Every process seen since the watch began, by pid: whether it is the sandbox's. A
    /// process never moves between the sandbox and the host (its pid namespace holds it), so
    /// the answer is kept for as long as the pid lives.
    known: HashMap<u32, bool>,
    /// A process of the sandbox through whose `/proc/PID/root` its tmpfs mounts are seen.
    root_of: Option<u32>,
    page: u64,
}

impl Watcher {
    fn run(mut self, stop: &AtomicBool, breach: &Mutex<Option<Breach>>) {
        while !stop.load(Ordering::SeqCst) {
            if !self.refresh() {
                return;
            }
            if let Some(why) = self.over_a_limit() {
                *lock(breach) = Some(why);
                // SAFETY: killpg takes plain integers; a group that is gone fails harmlessly.
                unsafe {
                    libc::killpg(self.leader as libc::pid_t, libc::SIGKILL);
                }
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Brings the set of the sandbox's processes up to date; false once bubblewrap is gone.
    fn refresh(&mut self) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        let live: Vec<u32> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        if !live.contains(&self.leader) {
            return false;
        }
        let alive: std::collections::HashSet<u32> = live.iter().copied().collect();
        self.known.retain(|pid, _| alive.contains(pid));
        let mut pending: Vec<(u32, u32)> = live
            .iter()
            .filter(|pid| !self.known.contains_key(pid))
            .filter_map(|&pid| parent_of(pid).map(|ppid| (pid, ppid)))
            .collect();
        // A new process is the sandbox's when its parent is; parents seen in the same sample
        // are settled first, so repeat until nothing changes.
        loop {
            let before = pending.len();
            pending.retain(|&(pid, ppid)| {
                let inside = if pid == self.leader {
                    Some(true)
                } else {
                    self.known.get(&ppid).copied()
                };
                match inside {
                    Some(inside) => {
                        self.known.insert(pid, inside);
                        false
                    }
                    None => true,
                }
            });
            if pending.len() == before {
                break;
            }
        }
        // Whose parent was never seen: a host process whose parent has ended.
        for (pid, _) in pending {
            self.known.insert(pid, false);
        }
        true
    }

    fn members(&self) -> impl Iterator<Item = u32> + '_ {
        self.known
            .iter()
            .filter(|(_, inside)| **inside)
            .map(|(pid, _)| *pid)
    }

    fn over_a_limit(&mut self) -> Option<Breach> {
        let members: Vec<u32> = self.members().collect();
        let mounts = self.mounts_held();
        let held = self.held_outside_pages(&members, mounts.as_ref());
        let resident: u64 = members
            .iter()
            .map(|&pid| resident_pages(pid) * self.page)
            .sum();
        if resident.saturating_add(held) > self.memory_bytes {
            let proportional: u64 = members
                .iter()
                .map(|&pid| proportional_bytes(pid).unwrap_or(resident_pages(pid) * self.page))
                .sum();
            let total = proportional.saturating_add(held);
            if total > self.memory_bytes {
                return Some(Breach {
                    bound: Bound::Memory,
                    why: format!(
                        "memory limit: the program's processes held {} MiB together ({} MiB \
                         in their pages, {} MiB in shared-memory files, /tmp, /dev/shm and \
                         unread pipe and socket bytes), past {} MiB",
                        total >> 20,
                        proportional >> 20,
                        held >> 20,
                        self.memory_bytes >> 20
                    ),
                });
            }
        }
        let files = mounts?.files;
        (files > self.files).then(|| Breach {
            bound: Bound::Files,
            why: format!(
                "files limit: {files} files in its writable places (/tmp, /dev/shm), past {}",
                self.files
            ),
        })
    }

    /// The memory the program holds that no process's pages show: the sandbox's own `/tmp`
    /// and `/dev/shm` (`mounts`), every other shared-memory file an open descriptor holds
    /// (a memfd, written and never mapped), and the bytes waiting unread in its pipes and
    /// sockets. Each file, pipe and socket counts once, however many descriptors hold it.
    fn held_outside_pages(&self, members: &[u32], mounts: Option<&MountUse>) -> u64 {
        let mut total = mounts.map_or(0, |m| m.bytes);
        let own_mounts = mounts.map_or(&[][..], |m| &m.devices[..]);
        let mut seen = std::collections::HashSet::new();
        for &pid in members {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue;
            };
            let mut process: Option<Pidfd> = None;
            for entry in fds.flatten() {
                let Some(fd) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                let Ok(target) = std::fs::read_link(entry.path()) else {
                    continue;
                };
                let target = target.to_string_lossy();
                if let Some(kind) = Queue::of(&target) {
                    if !seen.insert((u64::MAX - kind as u64, inode_in(&target))) {
                        continue;
                    }
                    if process.is_none() {
                        process = Pidfd::open(pid);
                    }
                    total =
                        total.saturating_add(process.as_ref().map_or(0, |p| p.queued(fd, kind)));
                    continue;
                }
                let path = entry.path();
                let Some((device, inode, allocated)) = regular_file(&path) else {
                    continue;
                };
                let shared = statfs(&path.to_string_lossy())
                    .is_some_and(|fs| fs.kind == TMPFS_MAGIC || fs.kind == HUGETLBFS_MAGIC);
                if shared && !own_mounts.contains(&device) && seen.insert((device, inode)) {
                    total = total.saturating_add(allocated);
                }
            }
        }
        total
    }

    /// What the sandbox's `/tmp` and `/dev/shm` hold, once a process of the sandbox shows
    /// them.
    fn mounts_held(&mut self) -> Option<MountUse> {
        if let Some(pid) = self.root_of {
            if let Some(used) = self.mount_use(pid) {
                return Some(used);
            }
            self.root_of = None;
        }
        let members: Vec<u32> = self.members().collect();
        for pid in members {
            if let Some(used) = self.mount_use(pid) {
                self.root_of = Some(pid);
                return Some(used);
            }
        }
        None
    }

    /// The files and bytes on the two tmpfs mounts as `pid` sees them, if they are the
    /// sandbox's own (a tmpfs of exactly the sandbox's size: before bubblewrap has set up
    /// its mounts, `pid` still sees the host's).
    fn mount_use(&self, pid: u32) -> Option<MountUse> {
        let mut used = MountUse::default();
        for (slot, dir) in ["tmp", "dev/shm"].into_iter().enumerate() {
            let path = format!("/proc/{pid}/root/{dir}");
            let fs = statfs(&path)?;
            let size = fs.blocks.saturating_mul(fs.block_size);
            let wanted = self.tmp_bytes.div_ceil(fs.block_size.max(1)) * fs.block_size;
            if fs.kind != TMPFS_MAGIC || size != wanted {
                return None;
            }
            // The mount's own root directory is one inode.
            used.files += fs.files.saturating_sub(fs.free_files).saturating_sub(1);
            used.bytes += fs
                .blocks
                .saturating_sub(fs.free_blocks)
                .saturating_mul(fs.block_size);
            used.devices[slot] = std::fs::metadata(&path).ok()?.dev();
        }
        Some(used)
    }
}

/// What the sandbox's `/tmp` and `/dev/shm` hold together, and their devices.
#[derive(Debug, Default)]
struct MountUse {
    files: u64,
    bytes: u64,
    devices: [u64; 2],
}

/// A descriptor whose unread bytes are memory: a pipe or a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queue {
    Pipe = 0,
    Socket = 1,
}

impl Queue {
    /// From what `/proc/PID/fd/N` links to (`pipe:[INODE]`, `socket:[INODE]`).
    fn of(target: &str) -> Option<Queue> {
        if target.starts_with("pipe:[") {
            Some(Queue::Pipe)
        } else if target.starts_with("socket:[") {
            Some(Queue::Socket)
        } else {
            None
        }
    }
}

/// The inode in `KIND:[INODE]`; 0 when there is none.
fn inode_in(target: &str) -> u64 {
    target
        .split_once('[')
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `(device, inode, bytes allocated)` of the regular file `path` names (following it).
fn regular_file(path: &std::path::Path) -> Option<(u64, u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file()
        .then(|| (meta.dev(), meta.ino(), meta.blocks().saturating_mul(512)))
}

/// A process, held by a pidfd, whose descriptors can be looked at (`pidfd_getfd`: the same
/// permission as attaching a debugger, which moot has over the sandbox it started).
struct Pidfd(std::os::fd::OwnedFd);

impl Pidfd {
    fn open(pid: u32) -> Option<Pidfd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::c_long::from(pid), 0) };
        let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: the descriptor was just made and is owned by nothing else.
        Some(Pidfd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// The bytes waiting in the process's descriptor `fd`: unread in a pipe; for a socket, the
    /// larger of what waits to be read on it and what it sent that was not read yet. 0 when
    /// the descriptor cannot be had (gone, or no permission).
    fn queued(&self, fd: i32, kind: Queue) -> u64 {
        // SAFETY: pidfd_getfd takes descriptors and flags and returns a new descriptor or -1.
        let copy = unsafe {
            libc::syscall(
                libc::SYS_pidfd_getfd,
                libc::c_long::from(self.0.as_raw_fd()),
                libc::c_long::from(fd),
                0,
            )
        };
        let Some(copy) = i32::try_from(copy).ok().filter(|&fd| fd >= 0) else {
            return 0;
        };
        // SAFETY: the copy was just made and is owned by nothing else; closed on drop.
        let copy = unsafe { std::os::fd::OwnedFd::from_raw_fd(copy) };
        let ask = |request: libc::Ioctl| -> u64 {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD and TIOCOUTQ write one int.
            let ok = unsafe { libc::ioctl(copy.as_raw_fd(), request, &mut n) } == 0;
            if ok {
                u64::try_from(n).unwrap_or(0)
            } else {
                0
            }
        };
        match kind {
            Queue::Pipe => ask(libc::FIONREAD),
            // SIOCINQ and SIOCOUTQ are FIONREAD and TIOCOUTQ.
            Queue::Socket => ask(libc::FIONREAD).max(ask(libc::TIOCOUTQ)),
        }
    }
}

/// The parent pid in `/proc/PID/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_parent(&stat)
}

/// The fourth field of a `stat` line: after the command name, which sits in parentheses and
/// may itself hold spaces and parentheses (so the last `)` ends it).
fn parse_parent(stat: &[u8]) -> Option<u32> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// Resident pages (`/proc/PID/statm`'s second field); 0 once it is gone.
fn resident_pages(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_ascii_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The proportional set size of `pid`, from `/proc/PID/smaps_rollup`.
fn proportional_bytes(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    parse_pss(&text)
}

fn parse_pss(rollup: &str) -> Option<u64> {
    let kib: u64 = rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib << 10)
}

struct FsStats {
    kind: i64,
    block_size: u64,
    blocks: u64,
    free_blocks: u64,
    files: u64,
    free_files: u64,
}

fn statfs(path: &str) -> Option<FsStats> {
    let path = CString::new(path).ok()?;
    // SAFETY: statfs fills the zeroed struct it is given; the path is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::statfs(path.as_ptr(), &mut st) } == 0;
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    ok.then_some(FsStats {
        kind: st.f_type as i64,
        block_size: st.f_bsize as u64,
        blocks: st.f_blocks as u64,
        free_blocks: st.f_bfree as u64,
        files: st.f_files as u64,
        free_files: st.f_ffree as u64,
    })
}

fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_comes_after_the_last_parenthesis() {
        assert_eq!(parse_parent(b"42 (sleep) S 7 42 42 0"), Some(7));
        assert_eq!(parse_parent(b"42 (a) b) (c) R 9 1 1"), Some(9));
        assert_eq!(parse_parent(b"42 (x y z) S 12345 1"), Some(12345));
        assert_eq!(parse_parent(b"42 (broken"), None);
        assert_eq!(parse_parent(b""), None);
    }

    #[test]
    fn pss_is_read_in_bytes() {
        let rollup = "00400000-7ffd [rollup]\nRss:               10240 kB\nPss:                4096 kB\nPss_Anon:  1 kB\n";
        assert_eq!(parse_pss(rollup), Some(4096 << 10));
        assert_eq!(parse_pss("Rss: 1 kB\n"), None);
    }

    #[test]
    fn the_unread_bytes_of_a_pipe_and_a_socket_are_read_through_a_pidfd() {
        use std::io::Write;
        use std::os::unix::net::UnixStream;
        let me = Pidfd::open(std::process::id()).expect("a pidfd of this process");
        let (read, mut write) = std::io::pipe().unwrap();
        write.write_all(&[7u8; 10_000]).unwrap();
        assert_eq!(me.queued(read.as_raw_fd(), Queue::Pipe), 10_000);
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(&[7u8; 5_000]).unwrap();
        assert_eq!(me.queued(b.as_raw_fd(), Queue::Socket), 5_000);
        // The sender's side: what it sent and was not read, with the kernel's bookkeeping.
        assert!(me.queued(a.as_raw_fd(), Queue::Socket) >= 5_000);
        assert_eq!(me.queued(-1, Queue::Pipe), 0);
        assert_eq!(Queue::of("pipe:[123]"), Some(Queue::Pipe));
        assert_eq!(Queue::of("socket:[9]"), Some(Queue::Socket));
        assert_eq!(Queue::of("/memfd:x (deleted)"), None);
        assert_eq!(inode_in("socket:[4026531840]"), 4_026_531_840);
        drop((write, a));
    }

    #[test]
    fn this_process_is_found_with_its_parent() {
        let me = std::process::id();
        let parent = parent_of(me).expect("our own stat");
        assert_eq!(parent, std::os::unix::process::parent_id());
        assert!(resident_pages(me) > 0);
        assert!(proportional_bytes(me).is_some_and(|b| b > 0));
    }
}
