//! `human`: a person answers for the agent: on the terminal under `moot ask`, on its page
//! under `moot serve` (see `moot_backends::human`). Any role fits; a person as the judge is the
//! oversight setting.

use std::sync::Arc;
use std::time::Duration;

use moot_backends::human::HumanModel;
use moot_backends::LanguageModel;

use super::entry::{Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building};
use super::keys::{Key, Keys, Kind};
use crate::error::ConfigError;

/// How long a person has for one answer unless `answer_within` says otherwise.
pub const DEFAULT_ANSWER_WITHIN: Duration = Duration::from_secs(300);

pub const ENTRY: BackendEntry = BackendEntry {
    name: "human",
    summary: "a person answers: on the terminal (moot ask) or on moot serve's page",
    keys: &[Key::new(
        "answer_within",
        Kind::Choice {
            check: answer_within,
            example: "10m",
        },
    )],
    refuses: &[],
    samples: false,
    max_temperature: 2.0,
    example: "answer_within = \"10m\"\n",
    retries: false,
    always_logprobs: false,
    in_process: true,
    health_checks: "nothing: a person is not called ahead of a debate",
    read,
};

/// `answer_within`: seconds (`90`, `90s`), minutes (`10m`) or hours (`1h`), 1 s to 24 h;
/// spelled back in seconds.
fn answer_within(value: &str) -> Result<String, String> {
    secs(value).map(|s| format!("{s}s")).ok_or_else(|| {
        format!(
            "answer_within = {value:?}: expected a duration of 1 s to 24 h, as 90, 90s, 10m or 1h"
        )
    })
}

fn secs(value: &str) -> Option<u64> {
    let v = value.trim();
    let (number, unit) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => v.split_at(i),
        None => (v, "s"),
    };
    let n: u64 = number.parse().ok()?;
    let s = n.checked_mul(match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    })?;
    (1..=24 * 3600).contains(&s).then_some(s)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Human {
    pub answer_within: Duration,
}

fn read(keys: &Keys, _at: &str) -> Result<Backend, ConfigError> {
    let answer_within = keys
        .text("answer_within")
        .and_then(secs)
        .map_or(DEFAULT_ANSWER_WITHIN, Duration::from_secs);
    Ok(Backend::new(Human { answer_within }))
}

impl BackendSettings for Human {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        if self.answer_within != DEFAULT_ANSWER_WITHIN {
            keys.set_text(
                "answer_within",
                Some(format!("{}s", self.answer_within.as_secs())),
            );
        }
    }

    fn build(
        &self,
        building: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        let desk = building.desk.clone().ok_or_else(|| {
            BuildError::Needs(format!(
                "agent {:?} is answered by a person (backend \"human\"), and nothing here can \
                 ask one: `moot ask` asks on the terminal and `moot serve` on its page \
                 (/people); benchmarks, workers and resumed runs cannot",
                agent.id
            ))
        })?;
        Ok(Arc::new(HumanModel::new(
            agent.id.to_string(),
            desk,
            self.answer_within,
        )))
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// The person at hand: the front end's.
    fn self_contained(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_within_reads_seconds_minutes_and_hours_within_a_day() {
        assert_eq!(answer_within("90").as_deref(), Ok("90s"));
        assert_eq!(answer_within("10m").as_deref(), Ok("600s"));
        assert_eq!(answer_within("1h").as_deref(), Ok("3600s"));
        for bad in ["0", "25h", "ten", "5d", "-3", "99999999999999999999m"] {
            assert!(answer_within(bad).is_err(), "{bad}");
        }
    }
}
