//! One name, one benchmark: `moot bench --name B` run again continues B (its finished debates
//! are read back, the rest are run) only when it asks what B asked. Everything that changes a
//! debate's result — the dataset and its draw, the protocols, the team (agents, their models,
//! roles, personas and sampling), rounds, prompts, decision settings, protocol options, token
//! budgets, the sandbox and the request cache — must be the stored benchmark's; otherwise the
//! store would hold debates of two configurations under one name, and every report of it would
//! mix them. What only says how this process runs (concurrency, deadlines, retries, logging,
//! rate limits, where transcripts go: this machine's authority, as [`crate::stored`] names it)
//! may differ.
//!
//! Checked before any agent is built or model loaded, and before anything is stored.

use moot_config::{Config, Field, Via};
use moot_store::BenchRecord;
use serde_json::Value;

use crate::error::InputError;

/// How many differences a refusal lists before it counts the rest.
const SHOWN: usize = 6;

/// What a benchmark rerun would ask, to compare with the stored one.
pub struct Asked<'a> {
    pub dataset: &'a str,
    pub protocols: &'a [String],
    pub limit: Option<u64>,
    pub seed: u64,
    /// The configuration, applied and with its team fitted, as the benchmark would store it.
    pub config: &'a Config,
}

/// Refused when `asked` differs from the stored benchmark `existing` in anything that changes
/// results, naming each difference (the stored value and the new one) and the ways out.
pub fn check(existing: &BenchRecord, asked: &Asked<'_>, via: Via) -> Result<(), InputError> {
    let mut differences = Vec::new();
    let mut differ = |key: &str, stored: String, now: String| {
        if stored != now {
            differences.push(format!("{key}: {stored} in the store, {now} now"));
        }
    };
    differ(
        &via.name(Field::Dataset),
        existing.dataset.clone(),
        asked.dataset.to_string(),
    );
    differ(
        &via.name(Field::Protocol),
        existing.protocols.join(","),
        asked.protocols.join(","),
    );
    let limit = |l: Option<u64>| l.map_or("none".to_string(), |l| l.to_string());
    differ(
        &via.name(Field::Limit),
        limit(existing.limit),
        limit(asked.limit),
    );
    differ("seed", existing.seed.to_string(), asked.seed.to_string());
    let stored = match moot_config::dialect::native::from_value(existing.config.clone()) {
        Ok(config) => what_it_asks(&config),
        // Written by a moot whose configuration this one does not read: compared as stored.
        Err(_) => Ok(existing.config.clone()),
    };
    match (stored, what_it_asks(asked.config)) {
        (Ok(stored), Ok(now)) => json_differences("", &stored, &now, &mut differences),
        (Err(e), _) | (_, Err(e)) => {
            return Err(InputError(format!(
                "benchmark {}: its configuration cannot be compared: {e}",
                moot_core::escape::terminal(&existing.name)
            )))
        }
    }
    if differences.is_empty() {
        return Ok(());
    }
    let name = moot_core::escape::terminal(&existing.name);
    let more = differences.len().saturating_sub(SHOWN);
    let mut listed = differences
        .iter()
        .take(SHOWN)
        .map(|d| moot_core::escape::terminal(d).into_owned())
        .collect::<Vec<_>>()
        .join("; ");
    if more > 0 {
        listed.push_str(&format!("; and {more} more"));
    }
    let resume = match via {
        Via::Cli => format!(
            "moot resume {} (with --config FILE when its agents are this machine's)",
            crate::shell::shell_word(&existing.name)
        ),
        _ => format!("moot resume {}", crate::shell::shell_word(&existing.name)),
    };
    Err(InputError(format!(
        "benchmark {name:?} already exists with other settings ({listed}); a benchmark's debates all run one configuration, so that its reports never mix two: give {} another name, or finish it as it was with {resume}",
        via.name(Field::BenchName),
    )))
}

/// The part of `config` that changes a debate's result, as JSON: this machine's authority
/// (see [`crate::stored`]) and what says only how the process runs are left at their
/// defaults, so that they compare equal.
fn what_it_asks(config: &Config) -> Result<Value, serde_json::Error> {
    let mut c = config.clone();
    let d = Config::default();
    c.security = d.security;
    c.retry = d.retry;
    c.logging = d.logging;
    c.output = d.output;
    c.serve = d.serve;
    c.telemetry = d.telemetry;
    c.validation.python = d.validation.python;
    // The request cache's own size and its use by `ask` say nothing of a benchmark's results;
    // whether a benchmark's calls may be answered from it does (`cache.benchmarks`).
    c.cache.enabled = d.cache.enabled;
    c.cache.max_entries = d.cache.max_entries;
    // Deadlines, parallelism and the question bound are this machine's; a benchmark's
    // protocols are its list, not the configuration's one protocol, and its gold answers
    // are its items'.
    c.debate.soft_timeout_ms = d.debate.soft_timeout_ms;
    c.debate.hard_timeout_ms = d.debate.hard_timeout_ms;
    c.debate.max_concurrent_calls = d.debate.max_concurrent_calls;
    c.debate.max_question_bytes = d.debate.max_question_bytes;
    c.debate.protocol = d.debate.protocol;
    c.debate.gold = d.debate.gold;
    c.budget.max_total_time_sec = d.budget.max_total_time_sec;
    c.budget.max_round_time_sec = d.budget.max_round_time_sec;
    c.budget.max_agent_time_sec = d.budget.max_agent_time_sec;
    for agent in &mut c.agents {
        agent.limits = Default::default();
    }
    serde_json::to_value(&c)
}

/// Each key path where `stored` and `now` differ, with both values: a list of another length
/// is one difference (its lengths), objects are compared key by key. A stored key is data:
/// each is cut short as values are, so no key makes an error line long.
fn json_differences(path: &str, stored: &Value, now: &Value, out: &mut Vec<String>) {
    let at = |key: &str| {
        let key = cut(key, 40);
        if path.is_empty() {
            key
        } else {
            cut(&format!("{path}.{key}"), 120)
        }
    };
    match (stored, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (x, y) = (
                    a.get(key).unwrap_or(&Value::Null),
                    b.get(key).unwrap_or(&Value::Null),
                );
                json_differences(&at(key), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                json_differences(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            out.push(format!("{path}: {} in the store, {} now", a.len(), b.len()))
        }
        (a, b) if a != b => out.push(format!(
            "{path}: {} in the store, {} now",
            shown(a),
            shown(b)
        )),
        _ => {}
    }
}

/// A value as a difference shows it: short, on one line.
fn shown(value: &Value) -> String {
    let text = match value {
        Value::Null => "unset".to_string(),
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    cut(&text, 60)
}

/// `text` cut to `max` characters, `…` where it was cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let kept: String = text.chars().take(max).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn differences(a: Value, b: Value) -> Vec<String> {
        let mut out = Vec::new();
        json_differences("", &a, &b, &mut out);
        out
    }

    #[test]
    fn differences_name_each_key_path_with_both_values() {
        let found = differences(
            json!({"debate": {"rounds": 2, "seed": 1}, "agents": [{"id": "a"}, {"id": "b"}]}),
            json!({"debate": {"rounds": 3, "seed": 1}, "agents": [{"id": "a"}, {"id": "c"}]}),
        );
        assert_eq!(
            found,
            vec![
                "agents[1].id: \"b\" in the store, \"c\" now".to_string(),
                "debate.rounds: 2 in the store, 3 now".to_string(),
            ]
        );
    }

    #[test]
    fn a_list_of_another_length_is_one_difference_and_a_missing_key_is_unset() {
        let found = differences(
            json!({"agents": [1, 2, 3, 4, 5], "protocol": {}}),
            json!({"agents": [1, 2, 3], "protocol": {"topology": "ring"}}),
        );
        assert_eq!(
            found,
            vec![
                "agents: 5 in the store, 3 now".to_string(),
                "protocol.topology: unset in the store, \"ring\" now".to_string(),
            ]
        );
    }

    #[test]
    fn how_a_process_runs_compares_equal() {
        let stored = Config::default();
        let mut now = Config::default();
        now.debate.max_concurrent_calls += 7;
        now.debate.hard_timeout_ms += 1000;
        now.budget.max_total_time_sec = Some(5.0);
        assert_eq!(what_it_asks(&stored).unwrap(), what_it_asks(&now).unwrap());
        now.debate.rounds += 1;
        assert_ne!(what_it_asks(&stored).unwrap(), what_it_asks(&now).unwrap());
    }
}
