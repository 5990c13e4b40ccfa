//! What can go wrong in a sweep: the spec (the user's to fix), a debate, or writing the outputs.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The spec file could not be read: the system's reason, or a FIFO, a device, a folder, a
    /// file past [`crate::MAX_SPEC_BYTES`].
    #[error(transparent)]
    Read(#[from] moot_files::FileError),
    /// The spec is not valid TOML of the sweep's shape (the message names the key and line).
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// The spec parses but asks for something that cannot run; `field` is the key at fault
    /// (`x.param`, `arms[1].rule`, `agent.accuracy`, …).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// A debate failed (a cell's coordinates and the seed are in the message).
    #[error("debate failed: {0}")]
    Debate(String),
    /// A task running debates panicked or was cancelled.
    #[error("sweep task: {0}")]
    Task(String),
    /// An output folder could not be made.
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An output file could not be written (a FIFO or folder at its path is refused by kind).
    #[error(transparent)]
    Output(#[from] moot_files::WriteError),
    /// A plot could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
    #[error(transparent)]
    Csv(#[from] csv::Error),
}

impl SweepError {
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> SweepError {
        SweepError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Whether the error is in what the user gave (the spec or its file), rather than in
    /// running it.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            SweepError::Read(_) | SweepError::Parse { .. } | SweepError::Invalid { .. }
        )
    }
}
