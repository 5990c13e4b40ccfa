//! Which host names the server answers to (against DNS rebinding).

use std::net::IpAddr;

/// The names the server answers to in a request's `Host`: the address it is bound to,
/// `localhost` and the loopback addresses, and the hosts given with `--allow-host`. Any other
/// name is a page elsewhere whose domain now resolves to this machine (DNS rebinding). Bound to
/// every address (0.0.0.0 or ::), which needs a token, any name is served.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    any: bool,
    names: Vec<String>,
}

impl HostPolicy {
    pub fn new(bound: IpAddr, allowed: &[String]) -> HostPolicy {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.push(bound.to_string());
        names.extend(allowed.iter().map(|h| host_name(h)));
        HostPolicy {
            any: bound.is_unspecified(),
            names,
        }
    }

    /// Whether a `Host` (or an origin's authority), with or without its port, names this server.
    pub fn allows(&self, authority: &str) -> bool {
        self.any || self.names.contains(&host_name(authority))
    }
}

/// The host name of an authority (`name[:port]`, `[v6][:port]`), lower-cased, without a
/// trailing dot.
pub(crate) fn host_name(authority: &str) -> String {
    let a = authority.trim();
    let name = match a.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => match a.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => a,
        },
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_named_by_their_name_whatever_the_port() {
        let local = HostPolicy::new("127.0.0.1".parse().unwrap(), &["Moot.LAN:80".into()]);
        for ok in [
            "localhost",
            "localhost:8001",
            "LOCALHOST.",
            "127.0.0.1:1",
            "[::1]:8001",
            "moot.lan",
        ] {
            assert!(local.allows(ok), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8001",
            "127.0.0.1.evil.example",
            "[::2]:1",
            "",
        ] {
            assert!(!local.allows(no), "{no}");
        }
        assert!(HostPolicy::new("0.0.0.0".parse().unwrap(), &[]).allows("anything"));
    }
}
