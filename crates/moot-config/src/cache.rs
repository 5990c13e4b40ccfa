//! `[cache]`: answering a repeated request from the store's request cache.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// The request cache for `moot ask` (benchmarks use it unless `--no-cache`): a request
/// identical to one answered before (backend, sampling, mode, messages, agent) is answered from
/// the store, and the call is marked as a cache hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheSection {
    pub enabled: bool,
    /// The most responses kept; the oldest go first (freemad's `cache.max_entries`). Unset
    /// keeps everything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<u64>,
    /// Benchmarks use the cache (on unless `moot bench --no-cache`, which sets this off). It
    /// is stored with a benchmark, so the workers of a detached plan follow it.
    #[serde(skip_serializing_if = "is_true")]
    pub benchmarks: bool,
}

impl Default for CacheSection {
    fn default() -> CacheSection {
        CacheSection {
            enabled: false,
            max_entries: None,
            benchmarks: true,
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

impl CacheSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_entries == Some(0) {
            return invalid(
                "cache.max_entries",
                "cache.max_entries must be > 0 (leave it unset for no limit)",
            );
        }
        Ok(())
    }
}
