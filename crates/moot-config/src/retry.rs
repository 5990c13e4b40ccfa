//! `[retry]`: how failed calls are retried.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// How failed calls are retried: rate-limited and transient failures only, with capped
/// exponential backoff and jitter; a server's `Retry-After` replaces the backoff. The defaults
/// are the backends' ([`moot_backends::retry::RetryPolicy`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrySection {
    /// Retries after the first attempt (0 turns retries off).
    pub max_retries: usize,
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
    pub jitter: bool,
}

impl Default for RetrySection {
    fn default() -> Self {
        let p = moot_backends::retry::RetryPolicy::default();
        RetrySection {
            max_retries: p.max_retries,
            min_delay_ms: p.min_delay.as_millis() as u64,
            max_delay_ms: p.max_delay.as_millis() as u64,
            jitter: p.jitter,
        }
    }
}

impl RetrySection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.min_delay_ms > self.max_delay_ms {
            return invalid(
                "retry.min_delay_ms",
                format!(
                    "retry.min_delay_ms = {} must not exceed retry.max_delay_ms = {}",
                    self.min_delay_ms, self.max_delay_ms
                ),
            );
        }
        Ok(())
    }

    pub fn policy(&self) -> moot_backends::retry::RetryPolicy {
        moot_backends::retry::RetryPolicy {
            max_retries: self.max_retries,
            min_delay: std::time::Duration::from_millis(self.min_delay_ms),
            max_delay: std::time::Duration::from_millis(self.max_delay_ms),
            jitter: self.jitter,
        }
    }
}
