//! `openai`: an OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama), one or replicas,
//! with logprobs, streaming and the server's dialect.

use std::sync::Arc;

use moot_backends::openai::{OpenAiConfig, OpenAiModel};
use moot_backends::LanguageModel;

use super::entry::{
    Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building, ModelSwap,
};
use super::http::{self, Http};
use super::keys::{Key, Keys, Kind};
use crate::error::ConfigError;
use crate::names::ServerKindSetting;

pub const ENTRY: BackendEntry = BackendEntry {
    name: "openai",
    summary: "an OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama",
    keys: &[
        http::MODEL,
        http::BASE_URL,
        http::BASE_URLS,
        http::API_KEY_ENV,
        Key::new("logprobs", Kind::Flag),
        http::STREAM,
        http::PROMPT_CACHE,
        Key::owned(
            "dialect",
            Kind::Choice {
                check: |s| {
                    s.parse::<ServerKindSetting>()
                        .map(String::from)
                        .map_err(|e| e.to_string())
                },
                example: "vllm",
            },
        ),
    ],
    refuses: &[],
    samples: true,
    max_temperature: 2.0,
    example: "model = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    retries: true,
    always_logprobs: false,
    in_process: false,
    health_checks: "the variable named by api_key_env, if any, is set",
    read,
};

#[derive(Debug, Clone, PartialEq)]
pub struct OpenAi {
    pub http: Http,
    /// Which kind of server it is (the `dialect` key).
    pub server_kind: Option<ServerKindSetting>,
}

fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    let server_kind = match keys.text("dialect") {
        Some(d) => Some(d.parse::<ServerKindSetting>().map_err(|e| {
            ConfigError::new(format!("{at}.dialect"), format!("{at}.dialect: {e}"))
        })?),
        None => None,
    };
    Ok(Backend::new(OpenAi {
        http: Http::read(keys, at, ENTRY.name, true)?,
        server_kind,
    }))
}

impl BackendSettings for OpenAi {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        self.http.write_back(keys);
        keys.set_text("dialect", self.server_kind.map(String::from));
    }

    fn build(
        &self,
        _: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        let http = &self.http;
        http.balanced(ENTRY.name, "", |url| {
            let mut c = OpenAiConfig::new(url, http.model.clone());
            c.api_key_env = http.api_key_env.clone();
            c.stream = http.stream;
            c.prompt_cache = http.prompt_cache;
            c.server_kind = self.server_kind.unwrap_or_default().for_url(&c.base_url);
            Ok(Arc::new(OpenAiModel::new(c)?))
        })
        .map_err(|e| BuildError::failed(agent.label(), e))
    }

    fn api_key_env(&self) -> Option<&str> {
        self.http.api_key_env.as_deref()
    }

    fn credentials(&self) -> Vec<String> {
        self.http.credentials()
    }

    /// A server, maybe with this machine's key.
    fn self_contained(&self) -> bool {
        false
    }

    fn ready(&self) -> Result<(), String> {
        self.http.api_key_set()
    }

    fn with_model(&self, model: &str) -> ModelSwap {
        ModelSwap::Swapped(Backend::new(OpenAi {
            http: self.http.with_model(model),
            server_kind: self.server_kind,
        }))
    }
}
