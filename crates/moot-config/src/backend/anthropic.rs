//! `anthropic`: Anthropic's Messages API (no logprobs, temperature at most 1).

use std::sync::Arc;

use moot_backends::anthropic::{AnthropicConfig, AnthropicModel, DEFAULT_BASE_URL};
use moot_backends::LanguageModel;

use super::entry::{
    Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building, ModelSwap,
};
use super::http::{self, Http};
use super::keys::Keys;
use crate::error::ConfigError;

pub const ENTRY: BackendEntry = BackendEntry {
    name: "anthropic",
    summary: "Anthropic's Messages API (no logprobs)",
    keys: &[
        http::MODEL,
        http::BASE_URL,
        http::BASE_URLS,
        http::API_KEY_ENV,
        http::STREAM,
        http::PROMPT_CACHE,
    ],
    refuses: &[("logprobs", "has no token logprobs")],
    samples: true,
    max_temperature: 1.0,
    example: "model = \"m\"\n",
    retries: true,
    always_logprobs: false,
    in_process: false,
    health_checks: "the variable named by api_key_env, if any, is set",
    read,
};

#[derive(Debug, Clone, PartialEq)]
pub struct Anthropic {
    pub http: Http,
}

fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    Ok(Backend::new(Anthropic {
        http: Http::read(keys, at, ENTRY.name, false)?,
    }))
}

impl BackendSettings for Anthropic {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        self.http.write_back(keys);
    }

    fn build(
        &self,
        _: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        let http = &self.http;
        http.balanced(ENTRY.name, DEFAULT_BASE_URL, |url| {
            let mut c = AnthropicConfig::new(url, http.model.clone());
            c.api_key_env = http.api_key_env.clone();
            c.stream = http.stream;
            c.prompt_cache = http.prompt_cache;
            Ok(Arc::new(AnthropicModel::new(c)?))
        })
        .map_err(|e| BuildError::failed(agent.label(), e))
    }

    fn api_key_env(&self) -> Option<&str> {
        self.http.api_key_env.as_deref()
    }

    fn credentials(&self) -> Vec<String> {
        self.http.credentials()
    }

    /// A server, with this machine's key.
    fn self_contained(&self) -> bool {
        false
    }

    fn ready(&self) -> Result<(), String> {
        self.http.api_key_set()
    }

    fn with_model(&self, model: &str) -> ModelSwap {
        ModelSwap::Swapped(Backend::new(Anthropic {
            http: self.http.with_model(model),
        }))
    }
}
