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
            message: message.into(),
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
