//! `scripted`: fixed replies in order (the last repeats), for tests and demonstrations.

use std::sync::Arc;

use moot_backends::scripted::{Scripted as Reply, ScriptedModel};
use moot_backends::LanguageModel;

use super::entry::{Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building};
use super::keys::{Key, Keys, Kind};
use crate::error::{fail, ConfigError};

pub const ENTRY: BackendEntry = BackendEntry {
    name: "scripted",
    summary: "fixed replies, for tests and demonstrations",
    keys: &[Key::new("responses", Kind::Texts)],
    refuses: &[],
    samples: false,
    max_temperature: 2.0,
    example: "responses = [\"42\"]\n",
    retries: false,
    always_logprobs: false,
    in_process: true,
    health_checks: "nothing: it runs in moot's process and is not called",
    read,
};

#[derive(Debug, Clone, PartialEq)]
pub struct Scripted {
    pub responses: Vec<String>,
}

fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    let responses = keys.texts("responses");
    if responses.is_empty() {
        return fail(
            at,
            "responses",
            format!("{at}: backend \"scripted\" needs responses"),
        );
    }
    Ok(Backend::new(Scripted {
        responses: responses.to_vec(),
    }))
}

impl BackendSettings for Scripted {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        keys.set_texts("responses", self.responses.clone());
    }

    fn build(
        &self,
        _: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        Ok(Arc::new(ScriptedModel::new(
            agent.id.to_string(),
            self.responses.iter().map(Reply::reply),
        )))
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// Fixed replies.
    fn self_contained(&self) -> bool {
        true
    }
}
