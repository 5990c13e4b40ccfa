//! The embedded local-model backend (see docs/architecture.md, Backends): a GGUF model run
//! in-process with llama.cpp (through `llama-cpp-2`), so `moot` works offline.
//!
//! One dedicated worker thread owns the llama.cpp backend, model and context. Calls to
//! [`LocalModel::complete`](moot_backends::LanguageModel::complete) are sent to it over a channel
//! and answered on a oneshot channel. The worker:
//!
//! - **batches continuously**: every request in flight is a separate sequence of one context and
//!   all of them advance together, one `decode` per step; new requests join between steps;
//! - **keeps a KV cache per conversation**: a request's `conversation` (the agent id in a debate) owns a
//!   sequence slot whose cache survives the call, so the next call only decodes the prompt tokens
//!   after the prefix it shares with the cache (a debate round re-sends the whole conversation,
//!   which is mostly cached). Requests without a conversation use a free slot; when slots run
//!   out, the least-recently-used idle conversation is evicted;
//! - **shares prefixes across sequences** ([`LocalOptions::share_prefixes`]): when another
//!   sequence's cache holds a longer prefix of the prompt than the request's own slot (another
//!   agent read the same question and answers), that prefix is copied instead of decoded, and a
//!   prompt another sequence is still prefilling is waited for, so identical prompts sent
//!   together (a debate's first round) are prefilled once. The copy is exact: the same cached
//!   keys and values, not an approximation;
//! - **stops on cancellation**: dropping the `complete` future closes its reply channel, and the
//!   worker drops that sequence before its next step.
//!
//! Sampling follows [`SamplingParams`](moot_backends::SamplingParams): temperature (default 0.7;
//! 0 is greedy), then top-p, then a draw seeded per request; `max_tokens` defaults to 512. The
//! log-probability of every sampled token is computed from the model's raw distribution
//! (temperature 1, before truncation, as OpenAI reports it) when the request asks for it (a
//! softmax over the whole vocabulary per token, skipped otherwise).

mod error;
mod job;
mod options;
mod slots;
mod stats;
mod utf8;
mod worker;

pub use error::LocalError;
pub use options::{
    LocalOptions, DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, MAX_SEQUENCES, THREADS_ENV,
};
pub use stats::{LocalModelInfo, LocalStats};

use job::Job;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use moot_backends::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel};
use tokio::sync::{mpsc, oneshot};
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
            conversations: true,
            prompt_cache: false,
            person: false,
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
