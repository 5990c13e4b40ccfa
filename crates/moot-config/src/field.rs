//! Where a value of a request came from, and how a message names it: a user who typed
//! `--rounds 11` reads `--rounds 11` in the error, a Python caller of `moot.ask(rounds=11)` reads
//! `rounds=11`, and an HTTP client that sent `{"rounds": 11}` reads `"rounds": 11`. The
//! application layer words its messages through [`Via::name`] and never spells a front end's
//! names itself; each front end's names are listed here once, and tested against the front end
//! (the CLI's against its clap definitions).

use std::fmt::Display;

/// The front end a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Via {
    /// The `moot` command line: fields are flags.
    #[default]
    Cli,
    /// The Python package: fields are keyword arguments.
    Python,
    /// `moot serve`'s JSON API: fields are the request body's keys.
    Http,
}

/// A value a user sets in a request, rather than in a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The configuration (a file; in Python also a dict).
    Config,
    Protocol,
    Rounds,
    Agents,
    /// Simulated agents instead of the configured ones.
    Sim,
    /// The answer kind.
    Answer,
    /// The gold answer.
    Gold,
    /// One protocol option, `KEY=VALUE`.
    ProtocolOption,
    /// A choice question's option texts.
    Choices,
    /// Tests for a code answer.
    Tests,
    /// A passage the question is about (hidden evidence).
    Context,
    RequirePassing,
    Dataset,
    /// How many items of a dataset.
    Limit,
    /// Debates in flight at once.
    Concurrency,
    /// A benchmark's name.
    BenchName,
    /// Only plan a benchmark, for workers.
    Detach,
    NoCache,
    ScAtBudget,
    /// Leave out a dataset's items that cannot be scored.
    SkipInvalid,
    /// A worker's name.
    WorkerId,
    /// `moot fork`: the agent whose response is changed.
    ForkAgent,
    /// `moot fork`: the text that replaces a response.
    ForkSay,
    /// `moot fork`: the model swapped in.
    ForkModel,
    /// `moot bench --fork-of`: the agent says the item's wrong answer.
    SayWrong,
    /// `moot decide`: the rule to decide with.
    Rule,
    /// `moot decide`: the weights of a weighted rule.
    Weights,
    /// `moot report`: report items not finished under every protocol.
    AllItems,
    /// `moot resume`: resume although the owner looks alive.
    Force,
    /// `moot import`: the largest transcript file read.
    MaxFileBytes,
}

impl Field {
    /// Every field, for the tests that hold each front end's names to its definitions.
    pub const ALL: &'static [Field] = &[
        Field::Config,
        Field::Protocol,
        Field::Rounds,
        Field::Agents,
        Field::Sim,
        Field::Answer,
        Field::Gold,
        Field::ProtocolOption,
        Field::Choices,
        Field::Tests,
        Field::Context,
        Field::RequirePassing,
        Field::Dataset,
        Field::Limit,
        Field::Concurrency,
        Field::BenchName,
        Field::Detach,
        Field::NoCache,
        Field::ScAtBudget,
        Field::SkipInvalid,
        Field::WorkerId,
        Field::ForkAgent,
        Field::ForkSay,
        Field::ForkModel,
        Field::SayWrong,
        Field::Rule,
        Field::Weights,
        Field::AllItems,
        Field::Force,
        Field::MaxFileBytes,
    ];

    /// The command-line flag (without its dashes).
    pub fn flag(self) -> &'static str {
        match self {
            Field::Config => "config",
            Field::Protocol => "protocol",
            Field::Rounds => "rounds",
            Field::Agents => "agents",
            Field::Sim => "sim",
            Field::Answer => "answer",
            Field::Gold => "gold",
            Field::ProtocolOption => "option",
            Field::Choices => "choices",
            Field::Tests => "tests",
            Field::Context => "context",
            Field::RequirePassing => "require-passing",
            Field::Dataset => "dataset",
            Field::Limit => "limit",
            Field::Concurrency => "concurrency",
            Field::BenchName => "name",
            Field::Detach => "detach",
            Field::NoCache => "no-cache",
            Field::ScAtBudget => "sc-at-budget",
            Field::SkipInvalid => "skip-invalid",
            Field::WorkerId => "worker-id",
            Field::ForkAgent => "agent",
            Field::ForkSay => "say",
            Field::ForkModel => "model",
            Field::SayWrong => "say-wrong",
            Field::Rule => "rule",
            Field::Weights => "weights",
            Field::AllItems => "all-items",
            Field::Force => "force",
            Field::MaxFileBytes => "max-file-bytes",
        }
    }

    /// The Python keyword argument, or the JSON key of `moot serve`'s requests: the flag with
    /// `_` for `-`, but where the two front ends chose another word.
    fn key(self, via: Via) -> String {
        match (self, via) {
            (Field::BenchName, _) => "name".into(),
            (Field::ProtocolOption, _) => "options".into(),
            (Field::ForkAgent, _) => "agent".into(),
            _ => self.flag().replace('-', "_"),
        }
    }
}

impl Via {
    /// `field` as this front end's user wrote it: `--rounds`, `rounds=`, `"rounds"`.
    pub fn name(self, field: Field) -> String {
        match self {
            Via::Cli => format!("--{}", field.flag()),
            Via::Python => format!("{}=", field.key(self)),
            Via::Http => format!("\"{}\"", field.key(self)),
        }
    }

    /// `field` set to `value` as this front end's user wrote it: `--rounds 11`, `rounds=11`,
    /// `"rounds": 11`.
    pub fn assignment(self, field: Field, value: impl Display) -> String {
        match self {
            Via::Cli => format!("--{} {value}", field.flag()),
            Via::Python => format!("{}={value}", field.key(self)),
            Via::Http => format!("\"{}\": {value}", field.key(self)),
        }
    }
}

impl Via {
    /// A switch turned on, as this front end's user turns it on: `--detach`, `detach=True`,
    /// `"detach": true`.
    pub fn switch(self, field: Field) -> String {
        match self {
            Via::Cli => format!("--{}", field.flag()),
            Via::Python => format!("{}=True", field.key(self)),
            Via::Http => format!("\"{}\": true", field.key(self)),
        }
    }

    /// One protocol option, `key`, as this front end's user set it: `--option topology`,
    /// `options "topology"`, `"options": "topology"`.
    pub fn protocol_option(self, key: &str) -> String {
        match self {
            Via::Cli => format!("--option {key}"),
            Via::Python => format!("options {key:?}"),
            Via::Http => format!("\"options\": {key:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_front_end_names_a_field_its_own_way() {
        assert_eq!(Via::Cli.name(Field::RequirePassing), "--require-passing");
        assert_eq!(Via::Python.name(Field::RequirePassing), "require_passing=");
        assert_eq!(Via::Http.name(Field::Rounds), "\"rounds\"");
        assert_eq!(Via::Cli.assignment(Field::Rounds, 11), "--rounds 11");
        assert_eq!(Via::Python.assignment(Field::Rounds, 11), "rounds=11");
        assert_eq!(Via::Http.assignment(Field::Agents, 20), "\"agents\": 20");
        assert_eq!(Via::Python.name(Field::BenchName), "name=");
        assert_eq!(Via::Cli.name(Field::BenchName), "--name");
    }
}
