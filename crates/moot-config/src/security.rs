//! `[security]`: what `cli` agents may run and see, and which secrets never reach the store.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecuritySection {
    /// Commands `cli` agents may run (exact string or the same resolved file).
    pub cli_allowed_commands: Vec<String>,
    /// The environment `cli` agents get: `clear` (PATH, HOME, LANG and `cli_env_allow`; moot's
    /// default) or `inherit` (moot's whole environment, as freemad does; a freemad
    /// configuration's default).
    pub cli_env: moot_backends::cli::CliEnv,
    /// Environment variables passed to `cli` agents besides PATH, HOME and LANG (with
    /// `cli_env = "clear"`).
    pub cli_env_allow: Vec<String>,
    /// Regular expressions of secrets to remove from everything stored or printed, besides the
    /// built-in ones (`sk-…` keys, `Bearer …` tokens, …) and the API keys agents name.
    pub redact: Vec<String>,
    /// Cap on a `cli` agent's stdout and on its stderr, in bytes (freemad's
    /// `max_solution_size`).
    pub cli_max_output_bytes: usize,
    /// Cap on the prompt a `cli` agent is given, in bytes (freemad's `max_requirement_size`).
    pub cli_max_input_bytes: usize,
}

impl Default for SecuritySection {
    fn default() -> Self {
        SecuritySection {
            cli_allowed_commands: Vec::new(),
            cli_env: moot_backends::cli::CliEnv::Clear,
            cli_env_allow: Vec::new(),
            redact: Vec::new(),
            cli_max_output_bytes: moot_backends::cli::DEFAULT_MAX_OUTPUT_BYTES,
            cli_max_input_bytes: moot_backends::cli::DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

impl SecuritySection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Err(e) = moot_core::redact::Redactor::new(&self.redact, Vec::new()) {
            return invalid("security.redact", format!("security.redact: {e}"));
        }
        for (key, v) in [
            ("cli_max_output_bytes", self.cli_max_output_bytes),
            ("cli_max_input_bytes", self.cli_max_input_bytes),
        ] {
            if v == 0 {
                return invalid(
                    format!("security.{key}"),
                    format!("security.{key} must be > 0"),
                );
            }
        }
        Ok(())
    }

    /// Whether `command` may be run by a `cli` agent.
    pub fn allows(&self, command: &str) -> bool {
        self.cli_allowed_commands.iter().any(|c| c == command)
    }
}
