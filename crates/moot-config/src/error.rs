//! The one error type of configuration: which file and key, and what is wrong with it.

use std::fmt;

/// A configuration that cannot be used as it is. The message is a whole sentence that names the
/// key (`debate.min_agents = 5 is more than …`); `key` repeats it for programs (the server's
/// JSON errors), and `file` is the configuration file, when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: Option<String>,
    /// The dotted key at fault (`debate.min_agents`, `agents[1].model`), or empty when the
    /// problem is the whole text (unreadable file, syntax).
    pub key: String,
    pub message: String,
}

impl ConfigError {
    /// An error about `key`, with a message that names it.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: None,
            key: key.into(),
            message: bounded(message.into()),
        }
    }

    /// The same error, said of the file `name` (kept if one is already named).
    pub fn in_file(mut self, name: impl Into<String>) -> ConfigError {
        if self.file.is_none() {
            self.file = Some(name.into());
        }
        self
    }
}

/// The most of a message an error keeps: a parser quotes the line at fault, and a 16 MiB
/// configuration can be one line.
pub const MAX_MESSAGE_CHARS: usize = 1_000;

/// `message` whole when short; else its beginning and its end (where a parser says what went
/// wrong, after quoting the line) with how much between them was left out.
fn bounded(message: String) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        return message;
    }
    // The prompts' cut, on one line: an error message is one.
    moot_core::prompts::keep_ends(
        &message,
        MAX_MESSAGE_CHARS * 7 / 10,
        MAX_MESSAGE_CHARS / 4,
        "of the message left out",
    )
    .replace('\n', " ")
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{file}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// `Err` of a [`ConfigError`] about `key`.
pub(crate) fn invalid<T>(
    key: impl Into<String>,
    message: impl Into<String>,
) -> Result<T, ConfigError> {
    Err(ConfigError::new(key, message))
}

/// An error about `key` of the agent at `at` (`agents[i]`; the agent itself when `key` is
/// empty).
pub(crate) fn fail<T>(at: &str, key: &str, message: String) -> Result<T, ConfigError> {
    let key = if key.is_empty() {
        at.to_string()
    } else {
        format!("{at}.{key}")
    };
    invalid(key, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_cut_at_its_bound() {
        let short = ConfigError::new("k", "short");
        assert_eq!(short.to_string(), "short");
        let long = ConfigError::new("", format!("{} reason at the end", "[".repeat(400_000)));
        let shown = long.to_string();
        assert!(
            shown.chars().count() < MAX_MESSAGE_CHARS + 60,
            "{}",
            shown.len()
        );
        assert!(
            shown.contains(" [… 399068 characters of the message left out …] "),
            "{shown}"
        );
        assert!(shown.ends_with("reason at the end"), "{shown}");
    }
}
