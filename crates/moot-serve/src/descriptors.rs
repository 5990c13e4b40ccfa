//! How many descriptors the server may use: its limit, raised at start, and the connections
//! that leaves room for.

/// The descriptor limit assumed where it cannot be read.
pub(crate) const ASSUMED_DESCRIPTORS: usize = 1024;

/// Raises this process's soft limit on open descriptors (RLIMIT_NOFILE) to its hard limit and
/// returns the soft limit now in force (`None` where it cannot be read). The server holds one
/// descriptor per connection; the usual soft limit (1,024) is far below what it can serve.
pub fn raise_descriptor_limit() -> Option<usize> {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
        // On macOS an unlimited hard limit cannot be set as the soft one (the kernel caps it
        // lower); the soft limit then stays as it was.
        let now = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
            hard
        } else {
            soft
        };
        Some(usize::try_from(now).unwrap_or(usize::MAX))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Connections held at once for a descriptor limit: the limit less headroom for what else the
/// process opens (the store's files and pool, each running debate's agents and their pipes,
/// embedded models): an eighth of the limit, at least 256; half the limit when that leaves less.
pub(crate) fn connection_cap(descriptors: usize) -> usize {
    let headroom = (descriptors / 8).max(256);
    if descriptors > 2 * headroom {
        descriptors - headroom
    } else {
        (descriptors / 2).max(1)
    }
}

/// The connections the server holds at once: `max_connections` when given, else what the
/// descriptor limit (raised) leaves room for.
pub(crate) fn connections(max_connections: Option<usize>) -> usize {
    max_connections
        .unwrap_or_else(|| connection_cap(raise_descriptor_limit().unwrap_or(ASSUMED_DESCRIPTORS)))
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_headroom_below_the_descriptor_limit() {
        assert_eq!(connection_cap(1024), 768);
        assert_eq!(connection_cap(20_000), 17_500);
        assert_eq!(connection_cap(1 << 20), (1 << 20) - (1 << 17));
        // Small limits: half for connections, half for the rest.
        assert_eq!(connection_cap(256), 128);
        assert_eq!(connection_cap(1), 1);
        assert_eq!(connection_cap(usize::MAX), usize::MAX - usize::MAX / 8);
    }
}
