//! What a benchmark worker is when nothing says otherwise: `moot work` without `--lease`,
//! `--poll` or `--worker-id`, and `moot resume` on a benchmark planned for workers.

use std::time::Duration;

/// How long a claimed debate stays a worker's without renewal.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// How often a worker looks for work while other workers hold every debate left.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// `HOST:PID`: unique among the live workers of one machine, and says where a worker runs.
pub fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_worker_id_ends_with_this_process() {
        let id = default_worker_id();
        assert!(id.ends_with(&format!(":{}", std::process::id())), "{id}");
        assert!(!id.starts_with(':'), "{id}");
    }
}
