//! The values of the configuration that name one of a fixed set — protocol, answer kind,
//! tie-break, OpenAI dialect — as types that serde (configuration files) and clap (flags) both
//! read, so that a flag and a key take the same words and a typo is refused the same way.
//! Sets that have a registry (protocols, answer kinds, dialects) take their words from it.

use std::fmt;
use std::str::FromStr;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use moot_backends::openai::ServerKind;
use moot_core::answer::AnswerKind;
use moot_core::protocol::{protocol_names, PROTOCOLS};
use serde::{Deserialize, Serialize};

/// A debate protocol's name, checked against the registry ([`PROTOCOLS`]) when read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct ProtocolName(&'static str);

impl<'de> Deserialize<'de> for ProtocolName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl ProtocolName {
    pub fn as_str(&self) -> &'static str {
        self.0
    }

    /// For clap: `--protocol` lists the registry's names in `--help` and refuses others.
    pub fn parser() -> impl TypedValueParser<Value = ProtocolName> {
        PossibleValuesParser::new(protocol_names()).try_map(|s| s.parse::<ProtocolName>())
    }
}

impl Default for ProtocolName {
    /// FREE-MAD with conformity prompts: the paper's best setting and moot's default.
    fn default() -> Self {
        ProtocolName("free-mad-n")
    }
}

/// A name that is not a protocol, with the ones that are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a protocol (expected one of {names})", names = protocol_names().join(", "))]
pub struct UnknownProtocol(pub String);

impl FromStr for ProtocolName {
    type Err = UnknownProtocol;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PROTOCOLS
            .iter()
            .find(|p| p.name == s)
            .map(|p| ProtocolName(p.name))
            .ok_or_else(|| UnknownProtocol(s.to_string()))
    }
}

impl From<ProtocolName> for String {
    fn from(p: ProtocolName) -> String {
        p.0.to_string()
    }
}

impl fmt::Display for ProtocolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<str> for ProtocolName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// The kind of answer a debate compares: one of the [`AnswerKind`]s, or `auto` (guessed from
/// the question and its options when the debate starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AnswerSetting {
    #[default]
    Auto,
    Kind(AnswerKind),
}

impl AnswerSetting {
    /// Every word the setting takes: `auto` and the answer kinds' names.
    pub fn names() -> Vec<&'static str> {
        std::iter::once("auto")
            .chain(AnswerKind::ALL.iter().map(|k| k.name()))
            .collect()
    }

    /// For clap: `--answer` lists [`AnswerSetting::names`] in `--help`.
    pub fn parser() -> impl TypedValueParser<Value = AnswerSetting> {
        PossibleValuesParser::new(Self::names()).try_map(|s| s.parse::<AnswerSetting>())
    }

    /// The kind for a question: the configured one, or the guess from `question` and `options`.
    pub fn resolve(self, question: &str, options: &[String]) -> AnswerKind {
        match self {
            AnswerSetting::Kind(k) => k,
            AnswerSetting::Auto => AnswerKind::guess(question, options),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an answer kind (expected one of {names})", names = AnswerSetting::names().join(", "))]
pub struct UnknownAnswerSetting(pub String);

impl FromStr for AnswerSetting {
    type Err = UnknownAnswerSetting;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "auto" {
            return Ok(AnswerSetting::Auto);
        }
        s.parse::<AnswerKind>()
            .map(AnswerSetting::Kind)
            .map_err(|_| UnknownAnswerSetting(s.to_string()))
    }
}

impl TryFrom<String> for AnswerSetting {
    type Error = UnknownAnswerSetting;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<AnswerSetting> for String {
    fn from(a: AnswerSetting) -> String {
        a.to_string()
    }
}

impl fmt::Display for AnswerSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnswerSetting::Auto => f.write_str("auto"),
            AnswerSetting::Kind(k) => f.write_str(k.name()),
        }
    }
}

/// How a tie between equally scored answers is broken (the seed of `random` is the debate's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TieBreakSetting {
    /// The tied answer seen first, in the order the rule documents.
    #[default]
    Deterministic,
    /// A seeded uniform choice among the tied answers.
    Random,
}

impl TieBreakSetting {
    /// The decision rules' tie-break, seeded with `seed` when random.
    pub fn with_seed(self, seed: u64) -> moot_core::decision::TieBreak {
        match self {
            TieBreakSetting::Deterministic => moot_core::decision::TieBreak::Deterministic,
            TieBreakSetting::Random => moot_core::decision::TieBreak::Random { seed },
        }
    }
}

/// Which OpenAI-compatible server an `openai` agent talks to: named, or `auto` (guessed from
/// the URL when the agent is built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ServerKindSetting {
    #[default]
    Auto,
    Named(ServerKind),
}

impl ServerKindSetting {
    /// The dialect for an endpoint at `base_url`.
    pub fn for_url(self, base_url: &str) -> ServerKind {
        match self {
            ServerKindSetting::Named(d) => d,
            ServerKindSetting::Auto => ServerKind::detect(base_url),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dialect {0:?} is not one of {names}", names = ServerKind::NAMES.join(", "))]
pub struct UnknownServerKind(pub String);

impl FromStr for ServerKindSetting {
    type Err = UnknownServerKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(ServerKindSetting::Auto),
            name => ServerKind::resolve(Some(name), "")
                .map(ServerKindSetting::Named)
                .map_err(|_| UnknownServerKind(s.to_string())),
        }
    }
}

impl TryFrom<String> for ServerKindSetting {
    type Error = UnknownServerKind;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ServerKindSetting> for String {
    fn from(d: ServerKindSetting) -> String {
        match d {
            ServerKindSetting::Auto => "auto".into(),
            ServerKindSetting::Named(d) => d.as_str().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_reads_and_prints_back() {
        for p in PROTOCOLS {
            let name: ProtocolName = p.name.parse().unwrap();
            assert_eq!(name.to_string(), p.name);
        }
        for word in AnswerSetting::names() {
            assert_eq!(word.parse::<AnswerSetting>().unwrap().to_string(), word);
        }
        for word in ServerKind::NAMES {
            assert_eq!(
                String::from(word.parse::<ServerKindSetting>().unwrap()),
                *word
            );
        }
        let e = "vote".parse::<ProtocolName>().unwrap_err().to_string();
        assert!(
            e.contains("\"vote\" is not a protocol") && e.contains("free-mad-n"),
            "{e}"
        );
        let e = "number".parse::<AnswerSetting>().unwrap_err().to_string();
        assert!(e.contains("numeric, choice"), "{e}");
    }

    #[test]
    fn serde_and_clap_take_the_same_words() {
        use clap::ValueEnum;
        for v in TieBreakSetting::value_variants() {
            let word = v.to_possible_value().unwrap().get_name().to_string();
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::Value::String(word));
        }
        let cmd = clap::Command::new("t")
            .arg(
                clap::Arg::new("p")
                    .long("protocol")
                    .value_parser(ProtocolName::parser()),
            )
            .arg(
                clap::Arg::new("a")
                    .long("answer")
                    .value_parser(AnswerSetting::parser()),
            );
        let m = cmd
            .clone()
            .try_get_matches_from(["t", "--protocol", "madc", "--answer", "yes-no"])
            .unwrap();
        assert_eq!(m.get_one::<ProtocolName>("p").unwrap().as_str(), "madc");
        assert_eq!(
            m.get_one::<AnswerSetting>("a").unwrap(),
            &AnswerSetting::Kind(AnswerKind::YesNo)
        );
        let e = cmd
            .try_get_matches_from(["t", "--protocol", "vote"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("possible values") && e.contains("svr-mad"),
            "{e}"
        );
    }
}
