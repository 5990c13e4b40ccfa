//! Chat messages, sampling parameters, token usage and logprob signals: the vocabulary shared by
//! protocols (which plan prompts) and backends (which run them).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Why a call is made, for backends that distinguish (freemad's agent CLI contract passes it as
/// the command's argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CallMode {
    /// Round 0: an independent answer.
    #[default]
    Generate,
    /// A debate round: the prompt carries peers' responses.
    Critique,
}

impl CallMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CallMode::Generate => "generate",
            CallMode::Critique => "critique",
        }
    }
}

/// Sampling parameters of one call. `None` leaves the backend's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// Ask for the log-probabilities of the sampled tokens.
    pub logprobs: bool,
    /// A fresh draw of a request asked before: a fork's resampled round (see
    /// [`crate::fork`]). Backends whose draws are a function of the request (the sim) mix it in;
    /// the engine also folds it into `seed`, which seeded samplers read. Left out of the
    /// serialised form when unset, so the request keys of every other call stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resample: Option<u64>,
}

/// An attempt at a call that failed and was retried: the error, its class (`rate-limited`,
/// `transient`, …) and how long the caller waited before the next attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedAttempt {
    pub error: String,
    pub class: String,
    pub wait_ms: u64,
}

/// Token counts of one call.
///
/// Prompt caches are described by two counts besides the whole prompt: what had to be
/// processed (the rest was read from a cache: [`Usage::cached_input_tokens`]) and, for
/// providers that bill it apart (Anthropic, at 1.25 times the input price), what was written
/// to the cache. The cached count is derived rather than kept beside the processed one: the
/// two always add up to the prompt, and one stored number cannot contradict another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens sent (the whole prompt, cached or not).
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Prompt tokens the backend actually had to process (less than `input_tokens` when it
    /// reused a cache); `None` when the backend does not say.
    pub processed_input_tokens: Option<u64>,
    /// Of the processed prompt tokens, those the provider wrote to its prompt cache (billed
    /// apart); `None` when it does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
}

/// More tokens than any model reads or writes in one call (2³²). The engine refuses a response
/// that claims more, so sums of counts stay far from overflowing and fit a stored integer.
pub const MAX_CALL_TOKENS: u64 = 1 << 32;

/// The sum of token counts, stopping at `u64::MAX` rather than wrapping (or, in a debug build,
/// panicking): a count read from an older or damaged store, or from a file, may be anything,
/// and a total must never come out smaller than one of its parts.
pub fn total_tokens(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

impl Usage {
    /// Whether these counts could come from a real call: none above [`MAX_CALL_TOKENS`].
    pub fn is_plausible(&self) -> bool {
        [self.input_tokens, self.output_tokens]
            .into_iter()
            .chain(self.processed_input_tokens)
            .chain(self.cache_write_input_tokens)
            .all(|n| n <= MAX_CALL_TOKENS)
    }

    /// Prompt tokens read from a cache instead of processed; `None` when the backend does not
    /// say what it processed.
    pub fn cached_input_tokens(&self) -> Option<u64> {
        cached_input_tokens(self.input_tokens, self.processed_input_tokens)
    }

    /// What a prompt cache did for this prompt, for people (see [`prompt_cache_note`]).
    pub fn prompt_cache_note(&self) -> String {
        prompt_cache_note(self.cached_input_tokens(), self.cache_write_input_tokens)
    }
}

/// The prompt tokens of `input` read from a cache, when `processed` says how many were not (a
/// stored count larger than the prompt reads as nothing cached).
pub fn cached_input_tokens(input: u64, processed: Option<u64>) -> Option<u64> {
    processed.map(|p| input.saturating_sub(p))
}

/// What a prompt cache did for some input tokens (`cached` read from it, `written` to it), as it
/// follows the input tokens in moot's output: ` (2000 from the prompt cache, 500 written to
/// it)`; empty when nothing was read from or written to a cache, or the backend did not say.
pub fn prompt_cache_note(cached: Option<u64>, written: Option<u64>) -> String {
    match (cached.unwrap_or(0), written.unwrap_or(0)) {
        (0, 0) => String::new(),
        (c, 0) => format!(" ({c} from the prompt cache)"),
        (c, w) => format!(" ({c} from the prompt cache, {w} written to it)"),
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        // A side that does not say how much it processed processed all its input: summing it
        // as zero would claim prompt-cache reuse nobody reported.
        self.processed_input_tokens = match (self.processed_input_tokens, o.processed_input_tokens)
        {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (Some(a), None) => Some(a.saturating_add(o.input_tokens)),
            (None, Some(b)) => Some(self.input_tokens.saturating_add(b)),
            (None, None) => None,
        };
        // A side that does not say what it wrote to a cache wrote nothing anyone was billed for.
        self.cache_write_input_tokens =
            match (self.cache_write_input_tokens, o.cache_write_input_tokens) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
    }
}

/// Signals from the log-probabilities of a response's sampled tokens (see docs/architecture.md,
/// Log-probability signals).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogprobSummary {
    pub tokens: usize,
    pub mean: f64,
    /// Minimum token log-likelihood.
    pub min: f64,
    /// exp(−mean).
    pub perplexity: f64,
}

impl LogprobSummary {
    /// `None` for an empty response (no tokens, no signal).
    pub fn from_logprobs(logprobs: &[f32]) -> Option<LogprobSummary> {
        if logprobs.is_empty() {
            return None;
        }
        let sum: f64 = logprobs.iter().map(|&l| f64::from(l)).sum();
        let mean = sum / logprobs.len() as f64;
        let min = logprobs
            .iter()
            .map(|&l| f64::from(l))
            .fold(f64::INFINITY, f64::min);
        Some(LogprobSummary {
            tokens: logprobs.len(),
            mean,
            min,
            perplexity: (-mean).exp(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_saturate_and_implausible_counts_are_recognised() {
        let big = Usage {
            input_tokens: u64::MAX - 1,
            output_tokens: 5,
            processed_input_tokens: Some(u64::MAX),
            cache_write_input_tokens: None,
        };
        let mut total = big;
        total += big;
        assert_eq!(total.input_tokens, u64::MAX);
        assert_eq!(total.output_tokens, 10);
        assert_eq!(total.processed_input_tokens, Some(u64::MAX));
        assert!(!big.is_plausible());
        let real = Usage {
            input_tokens: 120_000,
            output_tokens: 4_000,
            processed_input_tokens: Some(10),
            cache_write_input_tokens: None,
        };
        assert!(real.is_plausible());
        assert!(Usage {
            processed_input_tokens: Some(MAX_CALL_TOKENS + 1),
            cache_write_input_tokens: None,
            ..real
        }
        .is_plausible()
        .eq(&false));
    }

    #[test]
    fn cached_tokens_are_the_prompt_less_what_was_processed_and_sum_so() {
        let call = |input, processed, written| Usage {
            input_tokens: input,
            output_tokens: 1,
            processed_input_tokens: processed,
            cache_write_input_tokens: written,
        };
        assert_eq!(call(100, Some(30), None).cached_input_tokens(), Some(70));
        assert_eq!(call(100, None, None).cached_input_tokens(), None);
        assert_eq!(call(10, Some(30), None).cached_input_tokens(), Some(0));
        let mut sum = call(100, Some(30), Some(20));
        // Nothing said of a cache: all 50 processed, nothing written.
        sum += call(50, None, None);
        assert_eq!(
            sum,
            Usage {
                output_tokens: 2,
                ..call(150, Some(80), Some(20))
            }
        );
        assert_eq!(sum.cached_input_tokens(), Some(70));
        assert_eq!(
            sum.prompt_cache_note(),
            " (70 from the prompt cache, 20 written to it)"
        );
        assert_eq!(
            call(100, Some(30), None).prompt_cache_note(),
            " (70 from the prompt cache)"
        );
        assert_eq!(call(100, Some(100), Some(0)).prompt_cache_note(), "");
        assert_eq!(call(100, None, None).prompt_cache_note(), "");
        assert!(!call(1, None, Some(MAX_CALL_TOKENS + 1)).is_plausible());
    }

    #[test]
    fn logprob_summary() {
        let s = LogprobSummary::from_logprobs(&[-0.5, -1.5, 0.0]).unwrap();
        assert_eq!(s.tokens, 3);
        assert!((s.mean - -2.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.min, -1.5);
        assert!((s.perplexity - (2.0f64 / 3.0).exp()).abs() < 1e-9);
        assert!(LogprobSummary::from_logprobs(&[]).is_none());
    }

    #[test]
    fn usage_adds() {
        let mut u = Usage {
            input_tokens: 1,
            output_tokens: 2,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
        };
        u += Usage {
            input_tokens: 3,
            output_tokens: 4,
            processed_input_tokens: Some(1),
            cache_write_input_tokens: None,
        };
        // The first side said nothing of a cache: its one input token was processed.
        assert_eq!(
            u,
            Usage {
                input_tokens: 4,
                output_tokens: 6,
                processed_input_tokens: Some(2),
                cache_write_input_tokens: None
            }
        );
        u += Usage {
            input_tokens: 5,
            output_tokens: 0,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
        };
        assert_eq!(u.processed_input_tokens, Some(7));
        let mut none = Usage::default();
        none += Usage {
            input_tokens: 5,
            output_tokens: 1,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
        };
        assert_eq!(none.processed_input_tokens, None, "nobody reported any");
    }
}
