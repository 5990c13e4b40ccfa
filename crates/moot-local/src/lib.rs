//! The embedded local-model backend (see docs/architecture.md, Backends): a GGUF model run
//! in-process with llama.cpp (through `llama-cpp-2`), so `moot` works offline.
//!
//! One dedicated worker thread owns the llama.cpp backend, model and context. Calls to
//! [`LocalModel::complete`](moot_backends::LanguageModel::complete) are sent to it over a channel
//! and answered on a oneshot channel. The worker:
//!
//! - **batches continuously**: every request in flight is a separate sequence of one context and
//!   all of them advance together, one `decode` per step; new requests join between steps;
//! - **keeps a KV cache per session**: a request's `session` (the agent id in a debate) owns a
//!   sequence slot whose cache survives the call, so the next call only decodes the prompt tokens
//!   after the prefix it shares with the cache (a debate round re-sends the whole conversation,
//!   which is mostly cached). Requests without a session use a free slot and clear it; when slots
//!   run out, the least-recently-used idle session is evicted;
//! - **stops on cancellation**: dropping the `complete` future closes its reply channel, and the
//!   worker drops that sequence before its next step.
//!
//! Sampling follows [`SamplingParams`](moot_backends::SamplingParams): temperature (default 0.7;
//! 0 is greedy), then top-p, then a draw seeded per request; `max_tokens` defaults to 512. The
//! log-probability of every sampled token is computed from the model's raw distribution
//! (temperature 1, before truncation, as OpenAI reports it) and returned when asked for.

mod slots;
mod utf8;
mod worker;

use std::fmt;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use moot_backends::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};
use tokio::sync::{mpsc, oneshot};

/// Default tokens generated when a request does not set `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Default sampling temperature when a request does not set one.
pub const DEFAULT_TEMPERATURE: f32 = 0.7;
/// llama.cpp's limit on sequences in one context.
pub const MAX_SEQUENCES: u32 = 256;

/// How a [`LocalModel`] is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// Context length of each sequence, in tokens (prompt + generated). Capped at the model's
    /// training context; llama.cpp rounds it up to a multiple of 256.
    pub n_ctx: u32,
    /// Sequences (sessions and concurrent calls) the context holds.
    pub max_sequences: u32,
    /// CPU threads for decoding.
    pub threads: u32,
    /// Most tokens one decode step takes; long prompts are prefilled in chunks of this size.
    pub batch_size: u32,
}

impl Default for LocalOptions {
    fn default() -> LocalOptions {
        LocalOptions {
            n_ctx: 4096,
            max_sequences: 8,
            threads: std::thread::available_parallelism()
                .map(NonZeroUsize::get)
                .map_or(4, |n| u32::try_from(n).unwrap_or(4)),
            batch_size: 512,
        }
    }
}

impl LocalOptions {
    fn validate(&self) -> Result<(), LocalError> {
        let fail = |msg: String| Err(LocalError::InvalidOptions(msg));
        if self.n_ctx < 64 {
            return fail(format!("n_ctx must be at least 64 (got {})", self.n_ctx));
        }
        if self.max_sequences == 0 || self.max_sequences > MAX_SEQUENCES {
            return fail(format!(
                "max_sequences must be between 1 and {MAX_SEQUENCES} (got {})",
                self.max_sequences
            ));
        }
        if self.n_ctx.checked_mul(self.max_sequences).is_none() {
            return fail("n_ctx × max_sequences overflows".into());
        }
        if self.threads == 0 || i32::try_from(self.threads).is_err() {
            return fail(format!("threads must be positive (got {})", self.threads));
        }
        if self.batch_size < self.max_sequences + 1 || self.batch_size > 65_536 {
            return fail(format!(
                "batch_size must be between max_sequences + 1 and 65536 (got {})",
                self.batch_size
            ));
        }
        Ok(())
    }
}

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("invalid local model options: {0}")]
    InvalidOptions(String),
    #[error("model file {} does not exist", .0.display())]
    MissingFile(PathBuf),
    #[error("llama.cpp backend: {0}")]
    Backend(String),
    #[error("loading {}: {source}", path.display())]
    Load {
        path: PathBuf,
        #[source]
        source: llama_cpp_2::LlamaModelLoadError,
    },
    #[error("creating a context of {sequences} × {n_ctx} tokens: {source} (out of memory?)")]
    Context {
        n_ctx: u32,
        sequences: u32,
        #[source]
        source: llama_cpp_2::LlamaContextLoadError,
    },
    #[error("chat template: {0}")]
    Template(String),
    #[error("starting the model thread: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the model thread stopped while loading")]
    WorkerStopped,
}

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
    /// Prompt tokens actually decoded (the rest came from a session's KV cache).
    pub processed_prompt_tokens: u64,
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

type Reply = oneshot::Sender<Result<Completion, BackendError>>;

pub(crate) struct Job {
    request: CompletionRequest,
    reply: Reply,
}

/// A GGUF model served by a dedicated worker thread. Cheap to share behind an `Arc`; dropping the
/// last handle lets the worker finish and free the model.
pub struct LocalModel {
    jobs: mpsc::UnboundedSender<Job>,
    stats: Arc<Mutex<LocalStats>>,
    info: LocalModelInfo,
    name: String,
}

impl LocalModel {
    /// Loads the model on a new worker thread and waits until it is ready (blocking: call it from
    /// `spawn_blocking` inside an async runtime if the load time matters).
    pub fn load(path: &Path, options: LocalOptions) -> Result<LocalModel, LocalError> {
        options.validate()?;
        if !path.is_file() {
            return Err(LocalError::MissingFile(path.to_path_buf()));
        }
        let (jobs, job_rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let stats = Arc::new(Mutex::new(LocalStats::default()));
        let worker_stats = Arc::clone(&stats);
        let worker_path = path.to_path_buf();
        std::thread::Builder::new()
            .name("moot-local".into())
            .spawn(move || worker::run(worker_path, options, ready_tx, job_rx, worker_stats))
            .map_err(LocalError::Spawn)?;
        let info = ready_rx.recv().map_err(|_| LocalError::WorkerStopped)??;
        let stem = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into(),
        );
        Ok(LocalModel {
            jobs,
            stats,
            info,
            name: format!("local:{stem}"),
        })
    }

    pub fn info(&self) -> &LocalModelInfo {
        &self.info
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> LocalStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            seed: true,
            sessions: true,
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { request, reply })
            .map_err(|_| BackendError::Model("the local model thread has stopped".into()))?;
        // Dropping this future drops `answer`; the worker sees the closed channel and stops.
        answer.await.map_err(|_| {
            BackendError::Model("the local model thread stopped before answering".into())
        })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert!(LocalOptions::default().validate().is_ok());
        let bad = [
            LocalOptions {
                n_ctx: 10,
                ..LocalOptions::default()
            },
            LocalOptions {
                max_sequences: 0,
                ..LocalOptions::default()
            },
            LocalOptions {
                max_sequences: 300,
                ..LocalOptions::default()
            },
            LocalOptions {
                threads: 0,
                ..LocalOptions::default()
            },
            LocalOptions {
                batch_size: 4,
                ..LocalOptions::default()
            },
        ];
        for options in bad {
            assert!(
                matches!(options.validate(), Err(LocalError::InvalidOptions(_))),
                "{options:?}"
            );
        }
    }

    #[test]
    fn a_missing_file_is_a_clear_error() {
        let err = LocalModel::load(Path::new("/nonexistent/x.gguf"), LocalOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/x.gguf"), "{err}");
    }
}
