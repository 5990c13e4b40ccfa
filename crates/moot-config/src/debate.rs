//! `[debate]`: the protocol, its size, the answer kind, deadlines and the decision.

use moot_core::layout::{Layout, UnknownLayout};
use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};
use crate::names::{AnswerSetting, ProtocolName, TieBreakSetting};

/// The seed of every debate when none is configured (and of `moot bench`'s item draw).
pub const DEFAULT_SEED: u64 = 41;

/// The largest question (in bytes) a debate takes unless `debate.max_question_bytes` says
/// otherwise: every prompt of every call carries it, and every call is stored.
pub const DEFAULT_MAX_QUESTION_BYTES: usize = 64 << 10;

/// Debate rounds after round 0 when none are configured: one exchange, the papers' cheapest
/// setting that still debates.
pub const DEFAULT_ROUNDS: usize = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebateSection {
    pub protocol: ProtocolName,
    /// Debate rounds after round 0.
    pub rounds: usize,
    pub answer: AnswerSetting,
    /// Overrides the protocol's default decision rule.
    pub decision: Option<String>,
    pub seed: u64,
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    /// A round proceeds at its soft deadline once this many agents answered; at most the number
    /// of agents (the engine's default when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_agents: Option<usize>,
    pub max_concurrent_calls: usize,
    /// FREE-MAD weights [initial, abandon, adopt, keep].
    pub weights: Option<[f64; 4]>,
    pub tie_break: TieBreakSetting,
    /// The seed of a `random` tie-break (default: `seed`; freemad's `scoring.random_seed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tie_break_seed: Option<u64>,
    /// FREE-MAD: divide each answer's score by the number of agents that ever held it
    /// (freemad's `scoring.normalize`; the paper does not normalise).
    pub normalize: bool,
    /// The gold answer, when known: `sim` agents need it, and the analysis-only orderings
    /// `truth-first` / `truth-last` read it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "moot_core::faults::answer_text"
    )]
    pub gold: Option<String>,
    /// Ask an agent once more, for its final line only, when its answer cannot be read.
    pub reask: bool,
    /// The largest question, in bytes.
    pub max_question_bytes: usize,
    /// How debate prompts are laid out: the papers' order (the default, exactly as always), or
    /// what every agent of a round reads alike first (`shared-first`, for prefix caches). Written
    /// only when it is not the default, so configurations stored before it existed compare equal.
    #[serde(
        skip_serializing_if = "Layout::is_papers",
        deserialize_with = "layout_setting"
    )]
    pub layout: Layout,
}

/// `debate.layout`, refused by name with the layouts there are.
fn layout_setting<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Layout, D::Error> {
    let word = String::deserialize(d)?;
    word.parse()
        .map_err(|e: UnknownLayout| serde::de::Error::custom(format!("debate.layout = {e}")))
}

impl Default for DebateSection {
    /// Deadlines, quorum, parallelism and re-asks are the engine's defaults: one source.
    fn default() -> Self {
        let engine = moot_engine::EngineConfig::default();
        DebateSection {
            protocol: ProtocolName::default(),
            rounds: DEFAULT_ROUNDS,
            answer: AnswerSetting::Auto,
            decision: None,
            seed: DEFAULT_SEED,
            soft_timeout_ms: engine.soft_timeout.as_millis() as u64,
            hard_timeout_ms: engine.hard_timeout.as_millis() as u64,
            min_agents: None,
            max_concurrent_calls: engine.max_concurrent_calls,
            weights: None,
            tie_break: TieBreakSetting::Deterministic,
            tie_break_seed: None,
            normalize: false,
            gold: None,
            reask: engine.reask,
            max_question_bytes: DEFAULT_MAX_QUESTION_BYTES,
            layout: Layout::Papers,
        }
    }
}

impl DebateSection {
    /// `question`, with the passage it is about when it has one, is within
    /// `debate.max_question_bytes`: checked before anything is built or stored for it.
    pub fn check_question(&self, question: &str, passage: Option<&str>) -> Result<(), ConfigError> {
        let bytes = question.len() + passage.map_or(0, str::len);
        if bytes <= self.max_question_bytes {
            return Ok(());
        }
        let what = if passage.is_some() {
            "the question and its passage are"
        } else {
            "the question is"
        };
        invalid(
            "debate.max_question_bytes",
            format!(
                "{what} {bytes} bytes, more than debate.max_question_bytes = {} (every call carries it, and every call is stored); raise debate.max_question_bytes to debate it",
                self.max_question_bytes
            ),
        )
    }

    /// The checks of this section alone (the debate's size is checked apart, see
    /// [`crate::DebateSize`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(rule) = &self.decision {
            let names = moot_core::decision::rule_names();
            if !names.contains(&rule.as_str()) {
                return invalid(
                    "debate.decision",
                    format!(
                        "debate.decision = {rule:?} is not a decision rule (expected one of {})",
                        names.join(", ")
                    ),
                );
            }
        }
        if self.hard_timeout_ms < self.soft_timeout_ms {
            return invalid(
                "debate.hard_timeout_ms",
                format!(
                    "debate.hard_timeout_ms ({}) must be >= debate.soft_timeout_ms ({})",
                    self.hard_timeout_ms, self.soft_timeout_ms
                ),
            );
        }
        if self.soft_timeout_ms == 0 {
            return invalid(
                "debate.soft_timeout_ms",
                "debate.soft_timeout_ms must be > 0",
            );
        }
        if self.min_agents == Some(0) {
            return invalid("debate.min_agents", "debate.min_agents must be >= 1");
        }
        if self.max_concurrent_calls == 0 {
            return invalid(
                "debate.max_concurrent_calls",
                "debate.max_concurrent_calls must be >= 1",
            );
        }
        if let Some(w) = self.weights {
            if let Some((i, v)) = w
                .iter()
                .enumerate()
                .find(|(_, v)| !v.is_finite() || **v < 0.0)
            {
                return invalid(
                    "debate.weights",
                    format!("debate.weights[{i}] = {v} must be a finite number >= 0"),
                );
            }
        }
        Ok(())
    }

    /// The configured decision rule, if `debate.decision` names one, and the rules' settings.
    pub fn decision(
        &self,
    ) -> Result<(Option<&'static str>, moot_core::decision::DecisionConfig), ConfigError> {
        use moot_core::decision::{DecisionConfig, FreeMadWeights, RULES};
        let rule = match &self.decision {
            Some(r) => Some(
                RULES
                    .iter()
                    .find(|x| x.name == r)
                    .map(|x| x.name)
                    .ok_or_else(|| {
                        ConfigError::new("debate.decision", format!("unknown decision rule {r:?}"))
                    })?,
            ),
            None => None,
        };
        let config = DecisionConfig {
            tie_break: self
                .tie_break
                .with_seed(self.tie_break_seed.unwrap_or(self.seed)),
            weights: match self.weights {
                Some(w) => FreeMadWeights::new(w).map_err(|err| {
                    ConfigError::new("debate.weights", format!("debate.weights: {err}"))
                })?,
                None => FreeMadWeights::default(),
            },
            normalize: self.normalize,
            // A `[validation]` setting; Config::decision sets it.
            require_passing: false,
        };
        Ok((rule, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::native::from_toml;

    #[test]
    fn a_layout_is_read_and_only_a_non_default_one_is_written() {
        let shared = from_toml("[debate]\nlayout = \"shared-first\"\n").unwrap();
        assert_eq!(shared.debate.layout, Layout::SharedFirst);
        let written = toml::to_string(&shared).unwrap();
        assert!(written.contains("layout = \"shared-first\""), "{written}");
        let papers = from_toml("[debate]\nlayout = \"papers\"\n").unwrap();
        assert_eq!(papers.debate.layout, Layout::Papers);
        assert_eq!(from_toml("").unwrap().debate.layout, Layout::Papers);
        let written = toml::to_string(&papers).unwrap();
        assert!(!written.contains("layout"), "{written}");
    }

    #[test]
    fn a_wrong_layout_is_refused_by_its_key_with_the_layouts_there_are() {
        for text in [
            "[debate]\nlayout = \"shared_first\"\n",
            "[debate]\nlayout = \"\"\n",
        ] {
            let e = from_toml(text).unwrap_err().to_string();
            assert!(
                e.contains("debate.layout = \"")
                    && e.contains("is not a prompt layout (expected one of papers, shared-first)"),
                "{e}"
            );
        }
        let e = from_toml("[debate]\nlayout = 1\n").unwrap_err().to_string();
        assert!(e.contains("layout"), "{e}");
        // A stored configuration (JSON) names the key the same way.
        let e =
            crate::dialect::native::from_value(serde_json::json!({"debate": {"layout": "first"}}))
                .unwrap_err();
        assert_eq!(e.key, "debate.layout");
        assert!(
            e.message
                .starts_with("debate.layout = \"first\" is not a prompt layout"),
            "{}",
            e.message
        );
    }
}
