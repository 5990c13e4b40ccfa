//! What a sandboxed program may use.

use std::time::Duration;

/// What a sandboxed program may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the sandbox is killed.
    pub timeout: Duration,
    /// Memory of all of the program's processes together (their proportional set size,
    /// watched while it runs), and the address space of each one (RLIMIT_AS).
    pub memory_bytes: u64,
    /// Processes (and threads) inside the sandbox at once.
    pub processes: u64,
    /// Descriptors each process may hold open (RLIMIT_NOFILE). The watcher counts the unread
    /// bytes of every pipe and socket it can reach; where it cannot (a kernel before 5.6),
    /// this bounds them: each pipe holds at most `fs.pipe-max-size` (1 MiB) and each socket
    /// its buffers (`net.core.wmem_max` and `rmem_max`).
    pub descriptors: u64,
    /// The largest file it may write (RLIMIT_FSIZE).
    pub file_bytes: u64,
    /// The size of its private `/tmp` (and of its `/dev/shm`).
    pub tmp_bytes: u64,
    /// Files (and directories) in its writable places together, watched while it runs: the
    /// size cap does not count empty files, which still cost the host memory.
    pub files: u64,
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
            descriptors: 64,
            file_bytes: 16 << 20,
            tmp_bytes: 64 << 20,
            files: 10_000,
            output_bytes: 64 << 10,
            cpu: None,
            message_bytes: 16 << 20,
        }
    }
}
