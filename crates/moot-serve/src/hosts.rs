//! Which host names the server answers to (against DNS rebinding), read strictly.

use std::net::{IpAddr, Ipv6Addr};

/// The names the server answers to in a request's `Host`: the address it is bound to,
/// `localhost` and the loopback addresses, and the hosts given with `--allow-host`. Any other
/// name is a page elsewhere whose domain now resolves to this machine (DNS rebinding). Bound to
/// every address (0.0.0.0 or ::), which needs a token, any name is served — but never a `Host`
/// that cannot be read as one.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    any: bool,
    names: Vec<String>,
}

/// What a request's `Host` (or an origin's authority) is to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCheck {
    /// One of the names it answers to.
    Served,
    /// A name, but not one of its own.
    Foreign(String),
    /// Not an authority (`name[:port]` or `[v6][:port]`): what it names cannot be told, so it
    /// is not served.
    Malformed,
}

impl HostPolicy {
    pub fn new(bound: IpAddr, allowed: &[String]) -> HostPolicy {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.push(bound.to_string());
        // The CLI refuses a name that is not one (`allowed_host`); one that reaches here
        // anyway could never match a request's.
        names.extend(allowed.iter().filter_map(|h| host_name(h)));
        HostPolicy {
            any: bound.is_unspecified(),
            names,
        }
    }

    /// Whether a `Host` (or an origin's authority), with or without its port, names this server.
    pub fn check(&self, authority: &str) -> HostCheck {
        match host_name(authority) {
            None => HostCheck::Malformed,
            Some(name) if self.any || self.names.contains(&name) => HostCheck::Served,
            Some(name) => HostCheck::Foreign(name),
        }
    }
}

/// A name given to serve (`--allow-host`), checked as a request's `Host` will be read, and kept
/// as given: [`HostPolicy::new`] reads it again (a bare IPv6 address, what the name alone
/// would be, is not an authority). Anything that could never match a `Host` (a URL, a path, a
/// space, a port past 65,535) is an error naming what was given, so that the server does not
/// start and then refuse every request sent to the name its user meant.
pub fn allowed_host(given: &str) -> Result<String, String> {
    host_name(given).map(|_| given.to_string()).ok_or_else(|| {
        format!(
            "{given:?} is not a host name: give the name clients send in the Host header \
             (letters, digits, '-', '.' and '_', or an IPv6 address in brackets, with an \
             optional :port), without a scheme or a path"
        )
    })
}

/// The host name of an authority (`name[:port]`, `[v6][:port]`), lower-cased, without a
/// trailing dot; `None` for anything else: a bracketed address must be an IPv6 address and
/// end at `]` or `]:port`, a name holds only letters, digits, `-`, `.` and `_`, and a port is
/// 1 to 5 digits below 65,536.
pub(crate) fn host_name(authority: &str) -> Option<String> {
    let a = authority.trim();
    let (host, port) = match a.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']')?;
            let address: Ipv6Addr = inside.parse().ok()?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            return port_ok(port).then(|| address.to_string());
        }
        None => match a.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (a, None),
        },
    };
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    (name_ok && port_ok(port)).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

fn port_ok(port: Option<&str>) -> bool {
    port.is_none_or(|p| {
        (1..=5).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok()
    })
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
            "[0:0:0:0:0:0:0:1]",
            "moot.lan",
        ] {
            assert_eq!(local.check(ok), HostCheck::Served, "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8001",
            "127.0.0.1.evil.example",
            "[::2]:1",
        ] {
            assert!(matches!(local.check(no), HostCheck::Foreign(_)), "{no}");
        }
        let any = HostPolicy::new("0.0.0.0".parse().unwrap(), &[]);
        assert_eq!(any.check("anything"), HostCheck::Served);
        assert_eq!(any.check("[::1]evil"), HostCheck::Malformed);
    }

    #[test]
    fn what_is_not_an_authority_is_malformed() {
        let local = HostPolicy::new("127.0.0.1".parse().unwrap(), &[]);
        for bad in [
            "",
            ":80",
            "[::1]evil",
            "[::1]:",
            "[::1]:8001x",
            "[::1",
            "[evil.example]",
            "[fe80::1%25eth0]",
            "localhost:",
            "localhost:80x",
            "localhost:65536",
            "localhost:080080",
            "localhost:1:2",
            "::1",
            "local host",
            "localhost@evil.example",
            "localhost/",
            "évil.example",
        ] {
            assert_eq!(local.check(bad), HostCheck::Malformed, "{bad:?}");
        }
    }
}
