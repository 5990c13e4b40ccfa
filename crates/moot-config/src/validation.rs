//! `[validation]`: checking code answers in the sandbox (see `moot-sandbox`).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// How code answers are checked. With the answer kind `code`, every distinct program of a
/// debate is compiled in the sandbox, and run with the tests when the question has them
/// (`--tests FILE`, or a dataset item's); the verdicts are stored with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValidationSection {
    /// Check code answers in the sandbox (needs bubblewrap). Off: code answers are compared
    /// but never run.
    pub sandbox: bool,
    /// Code answers that fail a check count as no answer for every decision rule.
    pub require_passing: bool,
    /// Wall-clock limit of one check.
    pub timeout_ms: u64,
    /// Address space of each sandboxed process.
    pub memory_mb: u64,
    /// Processes (and threads) a sandboxed program may have at once.
    pub processes: u64,
    /// The Python that runs the checks; it must live under /usr (the only tree the sandbox
    /// shows). Unset: /usr/bin/python3, else /usr/local/bin/python3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
}

impl Default for ValidationSection {
    fn default() -> ValidationSection {
        let limits = moot_sandbox::Limits::default();
        ValidationSection {
            sandbox: true,
            require_passing: false,
            timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_mb: limits.memory_bytes >> 20,
            processes: limits.processes,
            python: None,
        }
    }
}

impl ValidationSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("validation.timeout_ms", self.timeout_ms),
            ("validation.memory_mb", self.memory_mb),
            ("validation.processes", self.processes),
        ] {
            if value == 0 {
                return invalid(key, format!("{key} must be > 0"));
            }
        }
        if let Some(p) = &self.python {
            if !p.starts_with("/usr/") {
                return invalid(
                    "validation.python",
                    format!("validation.python = {p:?}: the sandbox sees only /usr; give a Python under /usr"),
                );
            }
        }
        Ok(())
    }

    /// The sandbox's limits.
    pub fn limits(&self) -> moot_sandbox::Limits {
        moot_sandbox::Limits {
            timeout: std::time::Duration::from_millis(self.timeout_ms),
            memory_bytes: self.memory_mb.saturating_mul(1 << 20),
            processes: self.processes,
            ..moot_sandbox::Limits::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_sandbox_defaults() {
        let v = ValidationSection::default();
        assert!(v.sandbox && !v.require_passing);
        assert_eq!(v.limits(), moot_sandbox::Limits::default());
        v.validate().unwrap();
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = ValidationSection {
            timeout_ms: 0,
            ..ValidationSection::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "validation.timeout_ms");
        let bad = ValidationSection {
            python: Some("/opt/py/bin/python3".into()),
            ..ValidationSection::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "validation.python");
    }
}
