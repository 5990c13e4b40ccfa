//! `[serve]`: what `moot serve` needs beyond the team — the OpenAI-compatible upstream that
//! `moot/PROTOCOL/MODEL` debates on.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeSection {
    /// The OpenAI-compatible server (`http://127.0.0.1:8080/v1`) whose models
    /// `moot/PROTOCOL/MODEL` builds a team on; unset, those models are refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The environment variable holding the upstream's API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_api_key_env: Option<String>,
}

impl ServeSection {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(u) = &self.upstream {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return invalid(
                    "serve.upstream",
                    format!("serve.upstream = {u:?} must be an http:// or https:// URL"),
                );
            }
        }
        Ok(())
    }
}
