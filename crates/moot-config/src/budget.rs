//! `[budget]`: limits on each debate (freemad's `budget` block).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// Limits on each debate; unset is unlimited. When time or tokens run out, the remaining calls
/// are recorded as skipped with the reason and the decision uses what exists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_time_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_round_time_sec: Option<f64>,
    /// One call, retries included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_agent_time_sec: Option<f64>,
    /// Input plus output tokens of a whole debate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// The prompt of one call, in estimated tokens (characters / 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens_per_agent_per_round: Option<u64>,
    /// Cut a longer prompt to fit (recorded) instead of not sending it.
    pub enable_token_truncation: bool,
}

impl BudgetSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, v) in [
            ("max_total_time_sec", self.max_total_time_sec),
            ("max_round_time_sec", self.max_round_time_sec),
            ("max_agent_time_sec", self.max_agent_time_sec),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v < 1e9) {
                    return invalid(
                        format!("budget.{key}"),
                        format!("budget.{key} = {v} must be a positive number of seconds"),
                    );
                }
            }
        }
        for (key, v) in [
            ("max_total_tokens", self.max_total_tokens),
            (
                "max_tokens_per_agent_per_round",
                self.max_tokens_per_agent_per_round,
            ),
        ] {
            if v == Some(0) {
                return invalid(format!("budget.{key}"), format!("budget.{key} must be > 0"));
            }
        }
        Ok(())
    }

    /// The engine's budget.
    pub fn budget(&self) -> moot_engine::Budget {
        let secs = |v: Option<f64>| v.map(std::time::Duration::from_secs_f64);
        moot_engine::Budget {
            max_total_time: secs(self.max_total_time_sec),
            max_round_time: secs(self.max_round_time_sec),
            max_call_time: secs(self.max_agent_time_sec),
            max_total_tokens: self.max_total_tokens,
            max_prompt_tokens: self.max_tokens_per_agent_per_round,
            truncate_prompts: self.enable_token_truncation,
        }
    }
}
