//! Finding the processes moot started, from outside them: for tests and diagnostics. A program
//! moot starts runs in a PID namespace of its own (the `namespace` module), so the pids it
//! sees and reports are not the pids seen from here.

/// Whether `pid` is a running process: it exists and is not a zombie (exited, waiting to be
/// collected, holding nothing but its entry).
pub fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold anything.
        !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z') | Some('X')
        )
    })
}

/// The running processes that have `argument` as one whole argument of their command line:
/// how a test finds what a program left behind by a marker it gave it (`sleep 1000.4242`).
pub fn processes_with_argument(argument: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == argument.as_bytes()))
                && is_running(pid)
        })
        .collect()
}

/// The pid, as this process sees it, of the live process a pid record names: `PID NAMESPACE`,
/// the pid as that process saw it and its PID namespace as `/proc/self/ns/pid` names it
/// (`pid:[4026531836]`), or a bare pid (then seen from here already). `None` when the record
/// cannot be read or no process it names lives now. A process inside a namespace cannot know
/// its pid outside; this finds it by the namespace's own numbering (`NSpid` in
/// `/proc/PID/status`).
pub fn pid_from_record(record: &str) -> Option<u32> {
    let mut words = record.split_whitespace();
    let pid: u32 = words.next()?.parse().ok()?;
    let Some(namespace) = words.next() else {
        return Some(pid);
    };
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&here| {
            let in_namespace = std::fs::read_link(format!("/proc/{here}/ns/pid"))
                .is_ok_and(|link| link.as_os_str() == namespace);
            in_namespace
                && std::fs::read_to_string(format!("/proc/{here}/status")).is_ok_and(|status| {
                    status
                        .lines()
                        .find_map(|line| line.strip_prefix("NSpid:"))
                        .and_then(|pids| pids.split_whitespace().last())
                        .and_then(|last| last.parse::<u32>().ok())
                        == Some(pid)
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_record_names_the_process_as_seen_from_here() {
        let me = std::process::id();
        assert_eq!(pid_from_record(&format!("{me}\n")), Some(me));
        let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap();
        let record = format!("{me} {}\n", namespace.display());
        assert_eq!(pid_from_record(&record), Some(me));
        assert_eq!(pid_from_record("4194305 pid:[1]"), None);
        assert_eq!(pid_from_record(""), None);
    }

    #[test]
    fn this_process_runs_and_is_found_by_its_arguments() {
        let me = std::process::id();
        assert!(is_running(me));
        assert!(!is_running(u32::MAX));
        let first = std::env::args().next().unwrap();
        assert!(processes_with_argument(&first).contains(&me));
        assert!(processes_with_argument("no such argument \u{1}").is_empty());
    }
}
