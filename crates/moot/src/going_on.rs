//! The command that goes on with what an interrupted command began: set by `ask`, `bench` and
//! `resume` once they know their run or benchmark, and said on stderr when Ctrl-C or SIGTERM
//! ends moot, so that a user never has to work out how to continue.

use std::sync::Mutex;

static HINT: Mutex<Option<String>> = Mutex::new(None);

/// From now on, an interruption says `moot resume TARGET` with this command line's `--config`
/// and `--store` (a store given with credentials, which are masked on the command line, is
/// left out: the one given must then be given again). Nothing is said for the in-memory store
/// (`--store memory:`), which nothing can go on with.
pub fn resume(target: &str) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if in_memory() {
        return;
    }
    let mut command = format!("moot resume {}", moot_app::shell::shell_word(target));
    for flag in ["--config", "--store"] {
        let Some(value) = value_of(&args, flag) else {
            continue;
        };
        if flag == "--store" && value.contains("://") {
            continue;
        }
        command.push_str(&format!(" {flag} {}", moot_app::shell::shell_word(&value)));
    }
    *HINT.lock().unwrap_or_else(|e| e.into_inner()) = Some(command);
}

/// Whether this command keeps its runs in memory (`--store memory:`, or `MOOT_STORE=memory:`):
/// nothing it records can be shown, resumed or forked by a later command.
pub fn in_memory() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let store = value_of(&args, "--store").or_else(|| std::env::var("MOOT_STORE").ok());
    store.is_some_and(|s| s.trim() == "memory:")
}

/// What an interruption says, if a command set it.
pub fn command() -> Option<String> {
    HINT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The value of `flag` on a command line (`--flag VALUE` or `--flag=VALUE`; the last one).
fn value_of(args: &[String], flag: &str) -> Option<String> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == flag {
            found = it.next().cloned();
        } else if let Some(value) = arg.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            found = Some(value.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flags_value_is_read_in_either_form_the_last_one_counting() {
        let args: Vec<String> = [
            "ask",
            "q",
            "--config",
            "a.toml",
            "--store=s.db",
            "--config=b c.toml",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(value_of(&args, "--config").as_deref(), Some("b c.toml"));
        assert_eq!(value_of(&args, "--store").as_deref(), Some("s.db"));
        assert_eq!(value_of(&args, "--token"), None);
    }
}
