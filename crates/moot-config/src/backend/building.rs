//! What building the agents of one configuration shares, and how building one fails.

#[cfg(feature = "local")]
use std::collections::HashMap;
#[cfg(feature = "local")]
use std::path::PathBuf;
#[cfg(feature = "local")]
use std::sync::Arc;

use moot_core::answer::AnswerKind;

use crate::config::Config;

/// What building the agents of one configuration shares: the configuration, the answer kind
/// (sim agents need it), the embedded models loaded so far, and where to say what is happening
/// (pulling or loading a model).
pub struct Building<'a> {
    pub(crate) config: &'a Config,
    pub(crate) kind: AnswerKind,
    /// Embedded models loaded once per model file, shared by the agents that run on them.
    #[cfg(feature = "local")]
    pub(crate) local_models: HashMap<PathBuf, Arc<moot_local::LocalModel>>,
    /// Only pulling and loading the embedded model is reported, so without it nothing is.
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub(crate) progress: &'a mut dyn FnMut(&str),
}

impl<'a> Building<'a> {
    pub fn new(
        config: &'a Config,
        kind: AnswerKind,
        progress: &'a mut dyn FnMut(&str),
    ) -> Building<'a> {
        Building {
            config,
            kind,
            #[cfg(feature = "local")]
            local_models: HashMap::new(),
            progress,
        }
    }

    /// The embedded models the agents built so far run on (for throughput reporting).
    #[cfg(feature = "local")]
    pub fn into_local_models(self) -> Vec<Arc<moot_local::LocalModel>> {
        self.local_models.into_values().collect()
    }
}

/// Why an agent's model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// What was being done (`agents[0] (a)`, `loading model.gguf`), and the error that stopped
    /// it.
    #[error("{doing}")]
    Failed {
        doing: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The configuration lacks what the agent needs (`debate.gold` for a sim agent).
    #[error("{0}")]
    Needs(String),
    /// This build of moot lacks the backend (a feature left out of it): the user's to change.
    #[error("{0}")]
    NotCompiled(String),
}

impl BuildError {
    pub fn failed(
        doing: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> BuildError {
        BuildError::Failed {
            doing: doing.into(),
            source: Box::new(source),
        }
    }
}
