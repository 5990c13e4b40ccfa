//! `[logging]`: a log file of each debate's events (freemad's `logging` block).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// How much a log says, least first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Also every response's text and every check's output.
    Debug,
    /// Runs, rounds, calls, checks and the decision.
    #[default]
    Info,
    /// Only calls that failed or were refused, and checks that failed.
    Warning,
    /// Only calls that failed.
    Error,
}

impl LogLevel {
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warning => "WARNING",
            LogLevel::Error => "ERROR",
        }
    }
}

/// Where `moot ask` and `moot resume` log a debate's events, one line each: `TIME LEVEL [event]
/// key=value …`, or with `structured` a JSON line `{"timestamp", "level", "message"}` whose
/// message is the event as a JSON string (freemad's layout). Secrets are redacted as in the
/// store. Lines are appended, so one file can hold many runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSection {
    /// The log file; unset: no log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub level: LogLevel,
    pub structured: bool,
}

impl LoggingSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.file.as_deref().is_some_and(|f| f.trim().is_empty()) {
            return invalid(
                "logging.file",
                "logging.file is empty (leave it unset for no log)",
            );
        }
        Ok(())
    }
}
