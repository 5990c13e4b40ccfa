//! What the engine is told: the agents it runs, round timing and parallelism, the debate's
//! budget, and the defaults every front end starts from.

use std::sync::Arc;
use std::time::Duration;

use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;

/// How long a round waits before proceeding with the answers it has (given a quorum).
pub const DEFAULT_SOFT_TIMEOUT: Duration = Duration::from_secs(120);
/// When a round cancels whatever still runs.
pub const DEFAULT_HARD_TIMEOUT: Duration = Duration::from_secs(300);
/// Answers a round needs before the soft deadline lets it proceed (at most the agents there are).
pub const DEFAULT_MIN_AGENTS: usize = 2;
/// Calls in flight at once within a round.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 8;

/// One agent as the engine runs it.
#[derive(Debug, Clone)]
pub struct EngineAgent {
    pub model: Arc<dyn LanguageModel>,
    pub params: SamplingParams,
}

/// Round timing and parallelism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// Proceed once `min_agents` responded and this much time has passed in the round.
    pub soft_timeout: Duration,
    /// Cancel whatever still runs at this point in the round.
    pub hard_timeout: Duration,
    pub min_agents: usize,
    pub max_concurrent_calls: usize,
    /// Answer a request from the store's request cache when the same request (backend,
    /// sampling parameters, mode, messages, agent) was answered before, and store new answers;
    /// a request already in flight from another debate on the same store waits for that call
    /// (single flight, see `crate::flight`).
    pub cache: bool,
    /// With the cache on: the most responses it keeps; the oldest go first (freemad's
    /// `cache.max_entries`). `None` keeps everything.
    pub cache_max_entries: Option<u64>,
    pub budget: Budget,
    /// Ask an agent once more, for its final line only, when its answer cannot be read
    /// (recorded on the call); off, such a response simply has no answer.
    pub reask: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            soft_timeout: DEFAULT_SOFT_TIMEOUT,
            hard_timeout: DEFAULT_HARD_TIMEOUT,
            min_agents: DEFAULT_MIN_AGENTS,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            cache: false,
            cache_max_entries: None,
            budget: Budget::default(),
            reask: true,
        }
    }
}

/// Limits on one debate (freemad's `budget` block); `None` is unlimited. A debate that runs out
/// of time or tokens asks nothing more: the calls of its remaining rounds are recorded as
/// skipped with the reason, and the decision uses the answers that exist.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Wall time of the whole debate (counted from the start of this run, a resume included).
    pub max_total_time: Option<Duration>,
    /// Wall time of one round: a hard deadline for its calls, below `hard_timeout`.
    pub max_round_time: Option<Duration>,
    /// Wall time of one call, retries included.
    pub max_call_time: Option<Duration>,
    /// Input plus output tokens of every call of the debate.
    pub max_total_tokens: Option<u64>,
    /// A call's prompt, in estimated tokens (characters / 4).
    pub max_prompt_tokens: Option<u64>,
    /// Cut a prompt over `max_prompt_tokens` to fit (recorded on the call) instead of refusing
    /// to send it (recorded as a missing response).
    pub truncate_prompts: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_configuration_files_defaults() {
        let d = EngineConfig::default();
        assert_eq!(d.soft_timeout, Duration::from_millis(120_000));
        assert_eq!(d.hard_timeout, Duration::from_millis(300_000));
        assert!(d.soft_timeout <= d.hard_timeout);
        assert_eq!((d.min_agents, d.max_concurrent_calls), (2, 8));
        assert!(d.reask && !d.cache);
        assert_eq!(d.budget, Budget::default());
    }
}
