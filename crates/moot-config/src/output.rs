//! `[output]`: files written beside the store after each debate (freemad's `output` block).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

/// The format of the transcript files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptFormat {
    #[default]
    Json,
    Markdown,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// After each `moot ask`, write the run's transcript in freemad's format into this folder
    /// (`transcript-<UTC time>-<run id>.json` or `.md`); unset writes none. The store keeps the
    /// run either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_dir: Option<PathBuf>,
    pub transcript_format: TranscriptFormat,
}

impl OutputSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self
            .transcript_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return invalid(
                "output.transcript_dir",
                "output.transcript_dir must not be empty (leave it unset to write no transcript)",
            );
        }
        Ok(())
    }
}
