//! `scripted`: fixed replies in order (the last repeats), for tests and demonstrations.

use std::sync::Arc;

use moot_backends::scripted::{Scripted as Reply, ScriptedModel};
use moot_backends::LanguageModel;

use super::{fail, Backend, BackendEntry, BackendSettings, BuildError, Building, Key, Keys, Kind};
use crate::agent::{AgentConfig, AgentFields};
use crate::config::Config;
use crate::error::ConfigError;

pub const ENTRY: BackendEntry = BackendEntry {
    name: "scripted",
    summary: "fixed replies, for tests and demonstrations",
    keys: &[Key::new("responses", Kind::Texts)],
    refuses: &[],
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

fn read(f: &AgentFields, at: &str) -> Result<Backend, ConfigError> {
    let responses = f.keys.texts("responses");
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
        _: usize,
        agent: &AgentConfig,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        Ok(Arc::new(ScriptedModel::new(
            agent.id.clone(),
            self.responses.iter().map(Reply::reply),
        )))
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// It reaches nothing.
    fn not_allowed(&self, _: &str, _: &Config) -> Option<String> {
        None
    }
}
