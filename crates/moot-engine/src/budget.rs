//! Budgets and deadlines: when a debate has spent what it may, where a round's hard stop falls,
//! what a call over its own time limit becomes, and how prompts are estimated and cut to fit.

use std::time::Duration;

use moot_backends::BackendError;
use moot_core::chat::ChatMessage;
use moot_core::protocol::{PlannedCall, PromptCut};

use crate::engine_config::{Budget, EngineConfig};

/// The estimate prompts are budgeted with: characters / 4, rounded up.
pub fn estimated_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| m.content.chars().count() as u64)
        .sum::<u64>()
        .div_ceil(4)
}

/// `messages` cut to at most `max_tokens` estimated tokens: the middle of the longest message
/// goes (a prompt's instructions open it and its question closes it), replaced by a marker
/// saying so. `None` when even removing that whole message's middle cannot fit.
pub fn cut_prompt(messages: &[ChatMessage], max_tokens: u64) -> Option<Vec<ChatMessage>> {
    let total: u64 = messages
        .iter()
        .map(|m| m.content.chars().count() as u64)
        .sum();
    let allowed = max_tokens.saturating_mul(4);
    if total <= allowed {
        return Some(messages.to_vec());
    }
    let (longest, _) = messages
        .iter()
        .enumerate()
        .max_by_key(|(_, m)| m.content.chars().count())?;
    let len = messages[longest].content.chars().count();
    let marker_room = 80u64;
    let excess = total - allowed + marker_room;
    if excess >= len as u64 {
        return None;
    }
    let keep = len - excess as usize;
    let text = moot_core::prompts::keep_ends(
        &messages[longest].content,
        keep / 2,
        keep - keep / 2,
        "cut to fit the prompt budget",
    );
    let mut out = messages.to_vec();
    out[longest].content = text;
    Some(out)
}

/// Fits `call`'s prompt to the prompt budget: cuts it when over and cutting is allowed (noting
/// the cut on the call), or says why it may not be sent.
pub(crate) fn fit_prompt(budget: &Budget, call: &mut PlannedCall) -> Result<(), String> {
    let Some(max) = budget.max_prompt_tokens else {
        return Ok(());
    };
    let estimate = estimated_prompt_tokens(&call.messages);
    if estimate <= max {
        return Ok(());
    }
    let cut = if budget.truncate_prompts {
        cut_prompt(&call.messages, max)
    } else {
        None
    };
    let Some(messages) = cut else {
        return Err(format!(
            "budget: prompt of {estimate} estimated tokens is over max_tokens_per_agent_per_round ({max}){}",
            if budget.truncate_prompts {
                " and cannot be cut to fit"
            } else {
                "; not sent (enable_token_truncation cuts it)"
            }
        ));
    };
    call.notes.prompt_cut = Some(PromptCut {
        from_tokens: estimate,
        to_tokens: estimated_prompt_tokens(&messages),
    });
    call.messages = messages;
    Ok(())
}

/// Why the debate may ask nothing more, if its time or tokens are spent.
pub(crate) fn debate_spent(budget: &Budget, elapsed: Duration, used_tokens: u64) -> Option<String> {
    if let Some(max) = budget.max_total_time {
        if elapsed >= max {
            return Some(format!(
                "budget: max_total_time_sec ({} s) spent",
                max.as_secs_f64()
            ));
        }
    }
    match budget.max_total_tokens {
        Some(max) if used_tokens >= max => Some(format!(
            "budget: max_total_tokens ({max}) spent ({used_tokens} used)"
        )),
        _ => None,
    }
}

/// Where a round's hard stop falls, counted from the round's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HardStop {
    pub after: Duration,
    /// The round's or the debate's time budget, not the hard deadline, put it there.
    pub set_by_budget: bool,
}

/// The round's hard stop: its hard deadline, or earlier when the round's or the debate's time
/// budget (what is left of it after `debate_elapsed`) runs out first.
pub(crate) fn hard_stop(config: &EngineConfig, debate_elapsed: Duration) -> HardStop {
    let budget = &config.budget;
    let remaining = budget
        .max_total_time
        .map(|t| t.saturating_sub(debate_elapsed));
    [budget.max_round_time, remaining]
        .into_iter()
        .flatten()
        .filter(|b| *b < config.hard_timeout)
        .min()
        .map_or(
            HardStop {
                after: config.hard_timeout,
                set_by_budget: false,
            },
            |after| HardStop {
                after,
                set_by_budget: true,
            },
        )
}

/// What a call that ran over its own time budget ends with: a timeout (worth another try
/// another time), naming the limit so the stored error says which one bit.
pub(crate) fn call_over_time(max: Duration) -> BackendError {
    BackendError::TimeLimit(format!(
        "budget: the call ran over max_agent_time_sec ({} s) and was cancelled",
        max.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_backends::ErrorClass;

    #[test]
    fn a_call_over_its_time_budget_is_a_timeout_not_a_model_failure() {
        let e = call_over_time(Duration::from_secs(5));
        assert!(matches!(e, BackendError::TimeLimit(_)), "{e:?}");
        assert_eq!(e.class(), ErrorClass::Transient);
        assert!(e.class().retryable());
        assert!(e.to_string().starts_with("timed out: "), "{e}");
        assert!(e.to_string().contains("max_agent_time_sec (5 s)"), "{e}");
    }

    #[test]
    fn the_hard_stop_is_the_earliest_of_deadline_and_time_budgets() {
        let config = |round: Option<u64>, total: Option<u64>| EngineConfig {
            hard_timeout: Duration::from_secs(30),
            budget: Budget {
                max_round_time: round.map(Duration::from_secs),
                max_total_time: total.map(Duration::from_secs),
                ..Budget::default()
            },
            ..EngineConfig::default()
        };
        let stop = |after: u64, set_by_budget: bool| HardStop {
            after: Duration::from_secs(after),
            set_by_budget,
        };
        let elapsed = Duration::from_secs(50);
        assert_eq!(hard_stop(&config(None, None), elapsed), stop(30, false));
        assert_eq!(hard_stop(&config(Some(40), None), elapsed), stop(30, false));
        assert_eq!(hard_stop(&config(Some(10), None), elapsed), stop(10, true));
        assert_eq!(
            hard_stop(&config(Some(10), Some(55)), elapsed),
            stop(5, true)
        );
        assert_eq!(hard_stop(&config(None, Some(40)), elapsed), stop(0, true));
    }

    #[test]
    fn a_debate_is_spent_by_time_or_tokens() {
        let budget = Budget {
            max_total_time: Some(Duration::from_secs(10)),
            max_total_tokens: Some(100),
            ..Budget::default()
        };
        assert_eq!(debate_spent(&budget, Duration::from_secs(9), 99), None);
        assert!(debate_spent(&budget, Duration::from_secs(10), 0)
            .is_some_and(|r| r.starts_with("budget: max_total_time_sec (10 s)")));
        assert!(debate_spent(&budget, Duration::ZERO, 100)
            .is_some_and(|r| r == "budget: max_total_tokens (100) spent (100 used)"));
        assert_eq!(
            debate_spent(&Budget::default(), Duration::MAX, u64::MAX),
            None
        );
    }
}
