//! Decision rules applied again to a trajectory or to a stored run (`moot decide`), under the
//! run's own decision settings unless the caller overrides them.
//!
//! A trajectory document is `{"answers": [[agent0 round0, agent0 round1, …], [agent1 …], …]}`.
//! A cell is an answer string, `null` (the agent responded without an answer) or
//! `{"missing": true}` (the agent gave no response that round).

use anyhow::{Context, Result};
use moot_config::TieBreakSetting;
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::decision::{
    build_rule, rule_names, DecisionConfig, Evidence, FreeMadWeights, RULES,
};
use moot_core::trajectory_json::parse_trajectory;
use moot_store::{CallRecord, Store, StoreError};
use serde_json::Value;

use crate::error::{bad_input, InputError};

/// The largest trajectory document read (a file or stdin): 64 MiB, as a transcript `moot
/// import` reads, while a debate's trajectory is a few kilobytes of answers.
pub const MAX_TRAJECTORY_BYTES: moot_files::Limit =
    moot_files::Limit::new(64 << 20, "moot reads from a trajectory");

/// A stored run's spec and calls, with what its rules read beyond them.
pub struct StoredRun {
    pub spec: DebateSpec,
    pub calls: Vec<CallRecord>,
    /// The run's protocol, when its configuration could be read back.
    pub protocol: Option<Box<dyn moot_core::protocol::Protocol>>,
    /// The decision settings the run was decided with.
    pub settings: Settings,
    /// The sandbox's checks of the run's code answers.
    pub validations: moot_core::validation::Validations,
}

impl StoredRun {
    /// The stored run `run_id` with its calls and its protocol; a run the store does not hold
    /// is a [`NotFound`](crate::not_found::NotFound).
    pub async fn load(store: &dyn Store, run_id: &str) -> Result<StoredRun> {
        let read = async {
            let run = store.run(run_id).await?;
            let calls = store.calls(run_id).await?;
            let validations = moot_engine::stored_validations(store, run_id).await;
            Ok::<_, StoreError>((run, calls, validations))
        };
        let (run, calls, validations) = read.await.map_err(|e| match e {
            StoreError::RunNotFound(_) => {
                anyhow::Error::new(crate::not_found::NotFound::run(run_id))
            }
            other => other.into(),
        })?;
        let validations = validations?;
        let spec = serde_json::from_value(run.spec.clone())
            .with_context(|| format!("run {run_id}: the stored debate spec is unreadable"))?;
        // The run's protocol derives what rules read beyond the trajectory (SVR-MAD challenges,
        // SID-ET early stops).
        let protocol = moot_config::Config::protocol_of_run(&run.config, &run.protocol);
        // A configuration that no longer reads is decided with the defaults.
        let settings = serde_json::from_value::<moot_config::Config>(run.config.clone())
            .ok()
            .map(|c| {
                let d = &c.debate;
                Settings {
                    weights: c.decision().map(|(_, d)| d.weights).unwrap_or_default(),
                    tie_break: d.tie_break,
                    seed: d.tie_break_seed.unwrap_or(d.seed),
                    normalize: d.normalize,
                    require_passing: c.validation.require_passing,
                }
            })
            .unwrap_or_default();
        Ok(StoredRun {
            spec,
            calls,
            protocol,
            settings,
            validations,
        })
    }
}

/// Decision settings before the caller's: a stored run's, or the defaults.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub weights: FreeMadWeights,
    pub tie_break: TieBreakSetting,
    pub seed: u64,
    pub normalize: bool,
    pub require_passing: bool,
}

/// The settings a caller gives (`moot decide`'s flags); each one given replaces the run's.
#[derive(Debug, Clone, Default)]
pub struct SettingOverrides {
    /// FREE-MAD weights `initial,abandon,adopt,keep`.
    pub weights: Option<String>,
    pub tie_break: Option<TieBreakSetting>,
    pub seed: Option<u64>,
    pub normalize: Option<bool>,
    pub require_passing: Option<bool>,
    /// The front end that asked: how messages name what its user set.
    pub via: moot_config::Via,
}

impl SettingOverrides {
    /// The rules' settings: each one given, else the stored run's setting, else the default.
    fn apply(&self, stored: Settings) -> Result<DecisionConfig> {
        let weights = match &self.weights {
            Some(w) => w.parse().map_err(|e| {
                InputError(format!(
                    "{}: {e}",
                    self.via.name(moot_config::Field::Weights)
                ))
            })?,
            None => stored.weights,
        };
        let tie_break = self.tie_break.unwrap_or(stored.tie_break);
        Ok(DecisionConfig {
            tie_break: tie_break.with_seed(self.seed.unwrap_or(stored.seed)),
            weights,
            normalize: self.normalize.unwrap_or(stored.normalize),
            require_passing: self.require_passing.unwrap_or(stored.require_passing),
        })
    }
}

/// Which rules decide: one of the registry's, or every one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rules {
    One(&'static str),
    All,
}

impl Rules {
    /// `all`, or a registered rule's name; anything else is an [`InputError`] listing them.
    pub fn parse(name: &str, via: moot_config::Via) -> Result<Rules> {
        if name == "all" {
            return Ok(Rules::All);
        }
        match RULES.iter().find(|r| r.name == name) {
            Some(rule) => Ok(Rules::One(rule.name)),
            None => bad_input(format!(
                "{} {name:?} is not a decision rule (expected one of {}, all)",
                via.name(moot_config::Field::Rule),
                rule_names().join(", ")
            )),
        }
    }

    fn names(&self) -> Vec<&'static str> {
        match self {
            Rules::One(name) => vec![*name],
            Rules::All => RULES.iter().map(|r| r.name).collect(),
        }
    }
}

/// What is decided: a trajectory document, or a stored run.
pub enum Decided {
    /// A trajectory document's text, and where it came from (named in its errors).
    Trajectory {
        text: String,
        source: String,
    },
    Stored(Box<StoredRun>),
}

/// Each of `rules`' decisions on `what`, as the engine's decision JSON: an array for
/// [`Rules::All`], one object for one rule. `kind` says how answers compare (a stored run's
/// own kind otherwise; a trajectory's answers compare as exact strings without it).
pub fn decide(
    rules: &Rules,
    what: Decided,
    kind: Option<AnswerKind>,
    overrides: &SettingOverrides,
) -> Result<Value> {
    let mut ids: Vec<String> = Vec::new();
    let (trajectory, evidence, stored, validations) = match what {
        Decided::Trajectory { text, source } => {
            let trajectory =
                parse_trajectory(&text, kind).map_err(|e| InputError(format!("{source}: {e}")))?;
            (
                trajectory,
                Evidence::default(),
                Settings::default(),
                Default::default(),
            )
        }
        Decided::Stored(stored) => {
            let stored = *stored;
            let mut spec = stored.spec;
            ids = spec.agents.iter().map(|a| a.id.clone()).collect();
            if let Some(kind) = kind {
                spec.kind = kind;
            }
            // Decided as the engine decides: through the last round anyone answered.
            let transcript = moot_engine::transcript_of(&spec, &stored.calls)
                .decided_part()
                .into_owned();
            let evidence = match &stored.protocol {
                Some(p) => p.evidence(&spec, &transcript),
                None => Evidence::from_transcript(&spec, &transcript),
            };
            let trajectory = transcript
                .trajectory()
                .ok_or_else(|| InputError("the stored run has no agents".into()))?;
            (trajectory, evidence, stored.settings, stored.validations)
        }
    };
    let config = overrides.apply(stored)?;
    let trajectory = if config.require_passing {
        moot_core::validation::drop_failing(&trajectory, &validations)
    } else {
        trajectory
    };
    let mut decisions = Vec::new();
    for name in rules.names() {
        let rule = build_rule(name, &config)?;
        let mut decision =
            moot_engine::decision_json(&rule.decide_with(&trajectory, &evidence)).value();
        number_agents(&mut decision, &ids);
        decisions.push(decision);
    }
    Ok(match rules {
        Rules::All => Value::Array(decisions),
        Rules::One(_) => decisions.into_iter().next().unwrap_or(Value::Null),
    })
}

/// Each explanation term's agent as `moot show` and `moot fork` number agents: from 1
/// (`"agent": 1` is the first), with its id (`"agent_id"`) when the run names them.
pub fn number_agents(decision: &mut Value, ids: &[String]) {
    let Some(terms) = decision
        .get_mut("explanation")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for term in terms {
        let Some(index) = term.get("agent").and_then(Value::as_u64) else {
            continue;
        };
        term["agent"] = Value::from(index + 1);
        if let Some(id) = usize::try_from(index).ok().and_then(|i| ids.get(i)) {
            term["agent_id"] = Value::from(id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanation_terms_number_agents_from_1_with_their_ids() {
        let mut d = serde_json::json!({"explanation": [
            {"round": 0, "agent": 0, "action": "initial"},
            {"round": 0, "agent": 1, "action": "initial"},
            {"round": 1, "action": "judge"}
        ]});
        number_agents(&mut d, &["alpha".to_string(), "beta".to_string()]);
        assert_eq!(d["explanation"][0]["agent"], 1);
        assert_eq!(d["explanation"][0]["agent_id"], "alpha");
        assert_eq!(d["explanation"][1]["agent"], 2);
        assert!(d["explanation"][2].get("agent").is_none());
    }

    #[test]
    fn rules_parse_names_and_all_and_refuse_others() {
        assert_eq!(
            Rules::parse("all", moot_config::Via::Cli).unwrap(),
            Rules::All
        );
        let first = RULES[0].name;
        assert_eq!(
            Rules::parse(first, moot_config::Via::Cli).unwrap(),
            Rules::One(first)
        );
        let e = Rules::parse("nope", moot_config::Via::Cli).unwrap_err();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e}");
    }

    #[test]
    fn a_trajectory_is_decided_by_every_rule_or_one() {
        let text = r#"{"answers": [["4", "4"], ["5", "4"], ["4", "4"]]}"#;
        let what = || Decided::Trajectory {
            text: text.into(),
            source: "t.json".into(),
        };
        let all = decide(&Rules::All, what(), None, &SettingOverrides::default()).unwrap();
        assert_eq!(all.as_array().map(Vec::len), Some(RULES.len()));
        let one = decide(
            &Rules::One("majority-last"),
            what(),
            None,
            &SettingOverrides::default(),
        )
        .unwrap();
        assert_eq!(one["answer"], "4", "{one}");
    }

    #[test]
    fn a_bad_trajectory_names_its_source() {
        let e = decide(
            &Rules::All,
            Decided::Trajectory {
                text: "[]".into(),
                source: "t.json".into(),
            },
            None,
            &SettingOverrides::default(),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("t.json: "), "{e}");
    }
}
