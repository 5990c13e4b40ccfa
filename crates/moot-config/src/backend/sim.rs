//! `sim`: a simulated agent with set accuracy and conformity, for research and tests; it needs
//! the gold answer.

use std::sync::Arc;

use moot_backends::sim::{SimAgent, SimModel, PRESETS};
use moot_backends::LanguageModel;

use super::entry::{
    Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building, ModelSwap,
};
use super::keys::{Key, Keys, Kind};
use crate::error::{fail, ConfigError};

pub const ENTRY: BackendEntry = BackendEntry {
    name: "sim",
    summary: "a simulated agent with set accuracy and conformity (needs the gold answer)",
    keys: &[Key::new("sim", Kind::Sim), Key::new("logprobs", Kind::Flag)],
    refuses: &[],
    samples: false,
    max_temperature: 2.0,
    example: "",
    retries: false,
    always_logprobs: true,
    in_process: true,
    health_checks: "nothing: it runs in moot's process and is not called",
    read,
};

/// Its parameters (the defaults when unset).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sim {
    pub sim: Option<SimAgent>,
}

/// A simulated agent's parameters are ones the sim can use: chances are probabilities, and
/// conformities and recency are finite and small enough for `exp()` ([`SimAgent::check`]).
fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    let sim = keys.sim("sim");
    if let Some(sim) = sim {
        if let Err(e) = sim.check() {
            let key = format!("sim.{}", e.field());
            return fail(at, &key, format!("{at}.{key} = {e}"));
        }
    }
    Ok(Backend::new(Sim { sim: sim.cloned() }))
}

impl BackendSettings for Sim {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        keys.set_sim("sim", self.sim.clone());
    }

    fn build(
        &self,
        b: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        let Some(gold) = b.gold else {
            return Err(BuildError::Needs(format!(
                "agents[{}]: a sim agent needs debate.gold",
                agent.index
            )));
        };
        Ok(Arc::new(SimModel::new(
            self.sim.clone().unwrap_or_default(),
            gold.to_string(),
            b.kind,
            agent.seed,
        )))
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// A simulation inside moot.
    fn self_contained(&self) -> bool {
        true
    }

    /// A preset of the population.
    fn with_model(&self, model: &str) -> ModelSwap {
        match SimAgent::preset(model) {
            Some(preset) => ModelSwap::Swapped(Backend::new(Sim { sim: Some(preset) })),
            None => ModelSwap::NotOneOf(PRESETS.iter().map(|(n, _)| *n).collect()),
        }
    }
}
