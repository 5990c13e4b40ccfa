//! `local`: the embedded model (llama.cpp in-process, crate `moot-local` behind this crate's
//! `local` feature), a known model name or a `.gguf` path; the default team's backend.

use std::sync::Arc;

use moot_backends::models::ModelRef;
use moot_backends::LanguageModel;

use super::entry::{
    Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building, ModelSwap,
};
use super::keys::{Key, Keys, Kind};
use crate::error::{fail, ConfigError};

pub const ENTRY: BackendEntry = BackendEntry {
    name: "local",
    summary: "the embedded model (llama.cpp in-process; a known name or a .gguf path)",
    keys: &[
        Key::new("model", Kind::Text),
        Key::new("logprobs", Kind::Flag),
    ],
    refuses: &[],
    samples: true,
    max_temperature: 2.0,
    example: "",
    retries: false,
    always_logprobs: true,
    in_process: false,
    health_checks: "the model is pulled (health never downloads it) or its .gguf file exists",
    read,
};

/// The model: a known name or a `.gguf` path (the default model when unset).
#[derive(Debug, Clone, PartialEq)]
pub struct Local {
    pub model: Option<String>,
}

fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    let model = keys.text("model");
    if let Some(m) = model {
        if let Err(e) = ModelRef::parse(m) {
            return fail(at, "model", format!("{at}.model: {e}"));
        }
    }
    Ok(Backend::new(Local {
        model: model.map(str::to_string),
    }))
}

impl BackendSettings for Local {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        keys.set_text("model", self.model.clone());
    }

    fn build(
        &self,
        b: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        local_model(b, agent.index, self.model.as_deref())
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// A known model is fetched from moot's own registry (as the default team's is); a model
    /// file is this machine's to name.
    fn self_contained(&self) -> bool {
        self.model
            .as_deref()
            .is_none_or(|m| matches!(ModelRef::parse(m), Ok(ModelRef::Known(_))))
    }

    /// A known model must already be pulled (health never downloads); a path must exist.
    fn ready(&self) -> Result<(), String> {
        use moot_backends::models::{ModelCache, ModelStatus};
        let name = self
            .model
            .as_deref()
            .unwrap_or(moot_backends::models::default_model().name);
        match ModelRef::parse(name).map_err(|e| e.to_string())? {
            ModelRef::Known(m) => {
                let cache = ModelCache::from_env().map_err(|e| e.to_string())?;
                match cache.status(m) {
                    ModelStatus::Missing => Err(format!(
                        "model {} is not pulled (moot model pull {})",
                        m.name, m.name
                    )),
                    _ => Ok(()),
                }
            }
            ModelRef::Path(p) if p.is_file() => Ok(()),
            ModelRef::Path(p) => Err(format!("model file {} does not exist", p.display())),
        }
    }

    fn with_model(&self, model: &str) -> ModelSwap {
        ModelSwap::Swapped(Backend::new(Local {
            model: Some(model.to_string()),
        }))
    }
}

/// The embedded model agent `i` runs on, loaded once per model file: agents on the same model
/// share its context as separate sequences.
#[cfg(feature = "local")]
fn local_model(
    b: &mut Building<'_>,
    i: usize,
    model: Option<&str>,
) -> Result<Arc<dyn LanguageModel>, BuildError> {
    use moot_local::{LocalModel, LocalOptions};
    let spec = model.map_or_else(
        || moot_backends::models::default_model().name.to_string(),
        str::to_string,
    );
    let model_ref =
        ModelRef::parse(&spec).map_err(|e| BuildError::failed(format!("agents[{i}].model"), e))?;
    let path = model_ref
        .ensure(&mut *b.progress)
        .map_err(|e| BuildError::failed(format!("agents[{i}]: model {spec}"), e))?;
    if let Some(m) = b.local_models.get(&path) {
        return Ok(m.clone());
    }
    (b.progress)(&format!("loading {}", model_ref.label()));
    let sharing = b
        .backends
        .iter()
        .filter_map(|b| b.settings::<Local>())
        .filter(|l| l.model.as_deref() == model)
        .count();
    // One sequence per agent keeps its KV cache across rounds; two more serve calls outside any
    // agent's conversation (MAD-M² judgements) without evicting an agent's cache.
    let options = LocalOptions {
        max_sequences: (sharing as u32 + 2).clamp(1, 16),
        ..LocalOptions::default()
    }
    .with_env_threads()
    .map_err(|e| BuildError::failed(format!("agents[{i}]: model {spec}"), e))?;
    let m = Arc::new(
        LocalModel::load(&path, options)
            .map_err(|e| BuildError::failed(format!("loading {}", path.display()), e))?,
    );
    b.local_models.insert(path, m.clone());
    Ok(m)
}

/// Without the embedded backend compiled in, a local agent cannot run.
#[cfg(not(feature = "local"))]
fn local_model(
    _: &mut Building<'_>,
    i: usize,
    _: Option<&str>,
) -> Result<Arc<dyn LanguageModel>, BuildError> {
    Err(BuildError::NotCompiled(format!(
        "agents[{i}]: backend \"local\" (the embedded model) is not compiled into this build of moot (feature `local`)"
    )))
}
