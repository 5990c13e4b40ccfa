//! Who owns a running debate: the process that writes its heartbeat, named so that another
//! process on the same machine can tell whether it is still there.
//!
//! A heartbeat alone says a run is interrupted only after [`crate::RUN_SILENCE_LIMIT`], which is
//! the only safe test across machines (a PostgreSQL store is shared by many). On the owner's own
//! machine the process table answers at once: a run whose owner exited (Ctrl-C, a kill, a
//! crash) can be resumed right away. The name is `host/boot/pid`: the boot id keeps a process
//! id from an earlier boot from matching, and the host name keeps containers that share a
//! kernel (and so a boot id) but not their process ids apart.

use std::sync::OnceLock;

/// This process's owner name.
pub(crate) fn this_process() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| format!("{}/{}", machine(), std::process::id()))
}

/// This machine's part of an owner name: host name and boot id (`?` where unknown). Read once:
/// every running run a page or a follower reads asks it.
fn machine() -> &'static str {
    static MACHINE: OnceLock<String> = OnceLock::new();
    MACHINE.get_or_init(read_machine)
}

fn read_machine() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .unwrap_or_else(|| "?".to_string())
    };
    format!(
        "{}/{}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    )
}

/// Whether `owner`, a process of this machine, still exists (running, sleeping or stopped);
/// `None` for another machine's process, a malformed name, or when this machine cannot tell
/// (no `/proc`, no boot id).
pub(crate) fn alive_on_this_machine(owner: &str) -> Option<bool> {
    let (machine_part, pid) = owner.rsplit_once('/')?;
    let here = machine();
    if machine_part != here || here.contains('?') {
        return None;
    }
    let pid = pid.parse::<u32>().ok()?;
    Some(process_runs(pid))
}

/// Whether `owner` names a process of this machine that is known to be gone: `false` for
/// another machine's process, or when this machine cannot tell.
pub(crate) fn gone_from_this_machine(owner: &str) -> bool {
    alive_on_this_machine(owner) == Some(false)
}

/// Whether process `pid` exists and is not a zombie (a killed process its parent has not
/// waited for yet still has an entry, but runs nothing).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold anything.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_an_exited_child_is_gone() {
        assert!(!gone_from_this_machine(this_process()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let name = format!("{}/{pid}", machine());
        assert!(gone_from_this_machine(&name), "{name}");
        // Killed but not yet waited for: a zombie, which runs nothing.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let name = format!("{}/{}", machine(), child.id());
        assert!(!gone_from_this_machine(&name), "a running child");
        child.kill().unwrap();
        while process_runs(child.id()) {
            std::thread::yield_now();
        }
        assert!(gone_from_this_machine(&name), "a zombie");
        child.wait().unwrap();
    }

    #[test]
    fn another_machines_process_or_a_malformed_name_is_never_called_gone() {
        assert!(!gone_from_this_machine("elsewhere/0000/1"));
        assert!(!gone_from_this_machine(&format!("{}/notapid", machine())));
        assert!(!gone_from_this_machine(""));
    }
}
