//! What the HTTP backends (`openai`, `anthropic`) share: their keys, their settings, building
//! one model per endpoint, the API key check, and the credentials their URLs carry.

use std::sync::Arc;

use moot_backends::http::{display_base_url, url_credentials};
use moot_backends::{BackendError, LanguageModel};

use super::keys::{Key, Keys, Kind};
use crate::error::{fail, ConfigError};

/// The keys every HTTP backend reads: a model, one endpoint or replicas, the key's variable.
pub const MODEL: Key = Key::new("model", Kind::Text);
pub const BASE_URL: Key = Key::new("base_url", Kind::Text);
pub const BASE_URLS: Key = Key::new("base_urls", Kind::Texts);
pub const API_KEY_ENV: Key = Key::new("api_key_env", Kind::Text);
pub const STREAM: Key = Key::new("stream", Kind::Flag);
/// `prompt_cache = false` stops telling the provider's prompt cache what a debate's calls share
/// (Anthropic's cache breakpoints, OpenAI's `prompt_cache_key`); on by default.
pub const PROMPT_CACHE: Key = Key::new("prompt_cache", Kind::Switch);

/// What the HTTP backends share.
#[derive(Debug, Clone, PartialEq)]
pub struct Http {
    pub model: String,
    pub endpoints: Endpoints,
    /// The NAME of the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Use server-sent events.
    pub stream: bool,
    /// Help the provider's prompt cache (the `prompt_cache` key; on unless set to false).
    pub prompt_cache: bool,
}

/// An HTTP agent's server: one (`base_url`; the provider's own when unset) or several replicas
/// serving the same model (`base_urls`), used in turn with failover.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoints {
    One(Option<String>),
    Replicas(Vec<String>),
}

impl Http {
    /// The keys of an HTTP agent of `backend`: a model and, when `needs_url`, a server.
    pub(crate) fn read(
        keys: &Keys,
        at: &str,
        backend: &str,
        needs_url: bool,
    ) -> Result<Http, ConfigError> {
        let (base_url, base_urls) = (keys.text("base_url"), keys.texts("base_urls"));
        if base_url.is_some() && !base_urls.is_empty() {
            return fail(
                at,
                "base_urls",
                format!("{at}: give base_url or base_urls, not both"),
            );
        }
        let no_url = base_url.is_none() && base_urls.is_empty();
        let model = match keys.text("model") {
            Some(model) if !(needs_url && no_url) => model.to_string(),
            _ if needs_url => {
                return fail(
                    at,
                    "",
                    format!("{at}: backend {backend:?} needs base_url (or base_urls) and model"),
                )
            }
            _ => {
                return fail(
                    at,
                    "model",
                    format!("{at}: backend {backend:?} needs model"),
                )
            }
        };
        Ok(Http {
            model,
            endpoints: if base_urls.is_empty() {
                Endpoints::One(base_url.map(str::to_string))
            } else {
                Endpoints::Replicas(base_urls.to_vec())
            },
            api_key_env: keys.text("api_key_env").map(str::to_string),
            stream: keys.flag("stream"),
            prompt_cache: keys.switch("prompt_cache").unwrap_or(true),
        })
    }

    pub(crate) fn write_back(&self, keys: &mut Keys) {
        keys.set_text("model", Some(self.model.clone()));
        match &self.endpoints {
            Endpoints::One(url) => keys.set_text("base_url", url.clone()),
            Endpoints::Replicas(urls) => keys.set_texts("base_urls", urls.clone()),
        }
        keys.set_text("api_key_env", self.api_key_env.clone());
        keys.set_flag("stream", self.stream);
        // Written only when off, the default being on.
        keys.set_switch("prompt_cache", (!self.prompt_cache).then_some(false));
    }

    /// The same endpoints and key, another model.
    pub(crate) fn with_model(&self, model: &str) -> Http {
        Http {
            model: model.to_string(),
            ..self.clone()
        }
    }

    /// The model: one endpoint (`base_url`, else `default_url`), or several (`base_urls`)
    /// used in turn with failover, each built by `build` from its URL.
    pub(crate) fn balanced(
        &self,
        backend: &str,
        default_url: &str,
        build: impl Fn(String) -> Result<Arc<dyn LanguageModel>, BackendError>,
    ) -> Result<Arc<dyn LanguageModel>, BackendError> {
        let urls = match &self.endpoints {
            Endpoints::One(url) => {
                return build(url.clone().unwrap_or_else(|| default_url.to_string()))
            }
            Endpoints::Replicas(urls) => urls,
        };
        let endpoints = urls
            .iter()
            .map(|u| build(u.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let shown: Vec<String> = urls.iter().map(|u| display_base_url(u)).collect();
        let name = format!("{backend}:{}@{}", self.model, shown.join(","));
        Ok(Arc::new(moot_backends::balance::BalancedModel::new(
            name,
            endpoints,
            moot_backends::balance::DEFAULT_COOLDOWN,
        )?))
    }

    /// The credentials its URLs carry (see [`url_credentials`]).
    pub(crate) fn credentials(&self) -> Vec<String> {
        let urls: Vec<&String> = match &self.endpoints {
            Endpoints::One(url) => url.iter().collect(),
            Endpoints::Replicas(urls) => urls.iter().collect(),
        };
        urls.into_iter().flat_map(|u| url_credentials(u)).collect()
    }

    /// The variable the key is read from, when it names one, is set and not empty.
    pub(crate) fn api_key_set(&self) -> Result<(), String> {
        match &self.api_key_env {
            Some(var) if std::env::var_os(var).is_none_or(|v| v.is_empty()) => {
                Err(format!("the API key variable {var} is not set"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_api_key_variable_is_named() {
        let http = Http {
            model: "m".into(),
            endpoints: Endpoints::One(None),
            api_key_env: Some("MOOT_TEST_NO_SUCH_KEY_VARIABLE".into()),
            stream: false,
            prompt_cache: true,
        };
        let e = http.api_key_set().unwrap_err();
        assert!(e.contains("MOOT_TEST_NO_SUCH_KEY_VARIABLE"), "{e}");
    }
}
