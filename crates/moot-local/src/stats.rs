//! What a loaded model is ([`LocalModelInfo`]) and what it has done ([`LocalStats`]).

use std::path::PathBuf;
use std::time::Duration;

/// Facts about a loaded model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelInfo {
    pub path: PathBuf,
    /// Tokens each sequence can hold (after llama.cpp's rounding).
    pub n_ctx_per_sequence: u32,
    pub max_sequences: u32,
    pub threads: u32,
    /// Context length the model was trained with.
    pub n_ctx_train: u32,
    pub n_vocab: u32,
    /// `"model"` when the GGUF's own chat template is used, `"chatml"` for the fallback.
    pub chat_template: &'static str,
}

/// Counters since the model was loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LocalStats {
    /// Calls answered (completed or failed after they started running).
    pub requests: u64,
    /// Calls whose caller went away before the answer.
    pub cancelled: u64,
    /// Prompt tokens sent, summed over calls.
    pub prompt_tokens: u64,
    /// Prompt tokens actually decoded (the rest came from a KV cache: the sequence's own, or a
    /// prefix copied from another).
    pub processed_prompt_tokens: u64,
    /// Prompt tokens copied from another sequence's cache instead of decoded.
    pub shared_prompt_tokens: u64,
    /// Requests that started from a prefix copied from another sequence.
    pub prefix_copies: u64,
    /// Tokens generated (including those of cancelled calls).
    pub generated_tokens: u64,
    /// `decode` calls made.
    pub decode_steps: u64,
    /// Time in `decode` for steps that carried prompt tokens (possibly with generated ones too).
    pub prefill_time: Duration,
    /// Time in `decode` for steps that carried generated tokens only.
    pub generation_time: Duration,
    /// Tokens decoded in the generation-only steps.
    pub generation_step_tokens: u64,
}

impl LocalStats {
    /// Total time in `decode`.
    pub fn decode_time(&self) -> Duration {
        self.prefill_time + self.generation_time
    }

    /// Generated tokens per second of pure generation steps (all sequences together), if any.
    pub fn generation_tokens_per_second(&self) -> Option<f64> {
        let secs = self.generation_time.as_secs_f64();
        (secs > 0.0).then(|| self.generation_step_tokens as f64 / secs)
    }

    /// What happened between `earlier` and `self` (two snapshots of the same model).
    pub fn since(&self, earlier: &LocalStats) -> LocalStats {
        LocalStats {
            requests: self.requests.saturating_sub(earlier.requests),
            cancelled: self.cancelled.saturating_sub(earlier.cancelled),
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            processed_prompt_tokens: self
                .processed_prompt_tokens
                .saturating_sub(earlier.processed_prompt_tokens),
            shared_prompt_tokens: self
                .shared_prompt_tokens
                .saturating_sub(earlier.shared_prompt_tokens),
            prefix_copies: self.prefix_copies.saturating_sub(earlier.prefix_copies),
            generated_tokens: self
                .generated_tokens
                .saturating_sub(earlier.generated_tokens),
            decode_steps: self.decode_steps.saturating_sub(earlier.decode_steps),
            prefill_time: self.prefill_time.saturating_sub(earlier.prefill_time),
            generation_time: self.generation_time.saturating_sub(earlier.generation_time),
            generation_step_tokens: self
                .generation_step_tokens
                .saturating_sub(earlier.generation_step_tokens),
        }
    }

    /// Prompt tokens decoded per second of prefill steps, if any.
    pub fn prefill_tokens_per_second(&self) -> Option<f64> {
        let secs = self.prefill_time.as_secs_f64();
        (secs > 0.0).then(|| self.processed_prompt_tokens as f64 / secs)
    }
}
