//! [`LocalError`]: why a model could not be loaded.

use std::path::PathBuf;

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
    // Not a `#[source]`: the message holds it already, and `{:#}` would say it twice.
    #[error("starting the model thread: {0}")]
    Spawn(std::io::Error),
    #[error("the model thread stopped while loading")]
    WorkerStopped,
}
