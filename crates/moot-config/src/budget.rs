//! `[budget]`: limits on each debate (freemad's `budget` block).

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// The longest time limit, in seconds (about 31 years): any longer is no limit at all, and a
/// deadline this far ahead still fits in an `Instant`.
pub const MAX_SECONDS: f64 = 1e9;

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
                // NaN fails both comparisons.
                if !(v > 0.0 && v <= MAX_SECONDS) {
                    return invalid(
                        format!("budget.{key}"),
                        format!("budget.{key} = {v} must be a number of seconds above 0 and at most {MAX_SECONDS} (leave it unset for no limit)"),
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
        // `validate` keeps the seconds in range; values it would refuse (a configuration built
        // in code, or stored by an older moot) give no limit rather than a panic.
        let secs = |v: Option<f64>| v.and_then(|v| std::time::Duration::try_from_secs_f64(v).ok());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Defence in depth behind `validate`: seconds no `Duration` can hold (negative, NaN,
    /// infinite, past `Duration::MAX`) give no limit instead of a panic.
    #[test]
    fn seconds_no_duration_can_hold_give_no_limit_instead_of_a_panic() {
        for v in [-5.0, 1e30, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let b = BudgetSection {
                max_total_time_sec: Some(v),
                max_round_time_sec: Some(v),
                max_agent_time_sec: Some(v),
                ..BudgetSection::default()
            };
            assert!(b.validate().is_err(), "{v}");
            let engine = b.budget();
            assert_eq!(
                (
                    engine.max_total_time,
                    engine.max_round_time,
                    engine.max_call_time
                ),
                (None, None, None),
                "{v}"
            );
        }
        let b = BudgetSection {
            max_agent_time_sec: Some(1.5),
            ..BudgetSection::default()
        };
        assert_eq!(
            b.budget().max_call_time,
            Some(std::time::Duration::from_millis(1500))
        );
    }
}
