//! How big a debate may be: the caps on rounds and agents, what a token budget raises them to,
//! and the quorum and topology options the agents must be able to satisfy.

use moot_core::text::plural;

use crate::error::{invalid, ConfigError};
use crate::field::{Field, Via};

/// The most debate rounds a debate runs without a token budget. Every round is one call per
/// agent, and every call is stored, so a slip such as `--rounds 1000000` would otherwise run for
/// hours and fill the store; the papers debate for 1 to 5 rounds, and answers rarely change after
/// a few. A `budget.max_total_tokens` that pays for more raises it.
pub const MAX_ROUNDS: usize = 10;

/// The most agents a debate has without a token budget: more than the papers use (3 to 9), and as
/// many as the embedded model serves as parallel sequences. A `budget.max_total_tokens` that pays
/// for more raises it.
pub const MAX_AGENTS: usize = 16;

/// What no budget raises: every debate holds an agents × rounds grid in memory, and each of an
/// agent's prompts carries its peers' responses (cost grows with the square of the agents).
pub const CEILING_ROUNDS: usize = 1000;
/// See [`CEILING_ROUNDS`].
pub const CEILING_AGENTS: usize = 256;

/// The least one call is taken to cost when a token budget raises [`MAX_ROUNDS`] or
/// [`MAX_AGENTS`]: a prompt with the question and the answer format plus a reply hardly ever take
/// fewer tokens. A budget of T tokens thus pays for at most T / 100 calls; a debate that planned
/// more would only record the rest as skipped.
pub const MIN_TOKENS_PER_CALL: u64 = 100;

/// The size of the debates a configuration is checked for (by `Config::validate_size`) and
/// where each number came from, so that an error names what the user set: the request's field
/// as its front end names it (`--agents`, `agents=`, `"agents"`), or the configuration's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebateSize {
    pub agents: usize,
    /// Debate rounds after round 0, as requested (before a protocol's own shape).
    pub rounds: usize,
    /// The request that set the number of agents (`None`: the `[[agents]]` list or the
    /// default team).
    pub agents_from: Option<Via>,
    /// The request that set the number of rounds (`None`: `debate.rounds`).
    pub rounds_from: Option<Via>,
    /// The configuration file, named in errors about its keys.
    pub file: Option<String>,
}

impl DebateSize {
    /// `key` as an error names it: prefixed with the configuration file, if there is one.
    fn config_key(&self, key: &str) -> String {
        match &self.file {
            Some(f) => format!("{f}: {key}"),
            None => key.to_string(),
        }
    }

    /// How the number of agents was given, e.g. `--agents 20`, `agents=20` or
    /// `agents (20 configured)`.
    fn agents_key(&self) -> String {
        match self.agents_from {
            Some(via) => via.assignment(Field::Agents, self.agents),
            None => self.config_key(&format!("agents ({} configured)", self.agents)),
        }
    }

    /// How the number of rounds was given, e.g. `--rounds 50`, `rounds=50` or
    /// `debate.rounds = 50`.
    fn rounds_key(&self) -> String {
        match self.rounds_from {
            Some(via) => via.assignment(Field::Rounds, self.rounds),
            None => self.config_key(&format!("debate.rounds = {}", self.rounds)),
        }
    }

    /// "the debate's 3 agents" / "the 2 agents --agents asks for".
    pub(crate) fn the_agents(&self) -> String {
        match self.agents_from {
            Some(via) => format!(
                "the {} {} asks for",
                plural(self.agents, "agent"),
                via.name(Field::Agents)
            ),
            None => format!("the debate's {}", plural(self.agents, "agent")),
        }
    }

    /// [`MAX_ROUNDS`] and [`MAX_AGENTS`], raised (up to [`CEILING_ROUNDS`] and
    /// [`CEILING_AGENTS`]) by a token budget that pays for the calls.
    /// The most agents a debate of `rounds` debate rounds may have under a token budget of
    /// `max_total_tokens`: [`MAX_AGENTS`], more when the budget pays for them (at
    /// [`MIN_TOKENS_PER_CALL`] per call), never over [`CEILING_AGENTS`] (what
    /// [`DebateSize::check_caps`] allows).
    pub fn most_agents(rounds: usize, max_total_tokens: Option<u64>) -> usize {
        let calls_per_agent = (rounds as u64).saturating_add(1);
        let paid = max_total_tokens.map_or(0, |t| t / MIN_TOKENS_PER_CALL / calls_per_agent);
        let paid = usize::try_from(paid).unwrap_or(usize::MAX);
        paid.clamp(MAX_AGENTS, CEILING_AGENTS)
    }

    pub(crate) fn check_caps(&self, max_total_tokens: Option<u64>) -> Result<(), ConfigError> {
        for (over, key, ceiling, noun) in [
            (
                self.rounds > CEILING_ROUNDS,
                self.rounds_key(),
                CEILING_ROUNDS,
                "debate round",
            ),
            (
                self.agents > CEILING_AGENTS,
                self.agents_key(),
                CEILING_AGENTS,
                "agent",
            ),
        ] {
            if over {
                return invalid(
                    key.clone(),
                    format!(
                        "{key} is over the limit of {}, the most one debate may have whatever its budget",
                        plural(ceiling, noun)
                    ),
                );
            }
        }
        let calls = (self.agents as u64).saturating_mul((self.rounds as u64).saturating_add(1));
        let needed = calls.saturating_mul(MIN_TOKENS_PER_CALL);
        if max_total_tokens.is_some_and(|t| t >= needed) {
            return Ok(());
        }
        let (key, limit) = if self.rounds > MAX_ROUNDS {
            (self.rounds_key(), plural(MAX_ROUNDS, "debate round"))
        } else if self.agents > MAX_AGENTS {
            (self.agents_key(), plural(MAX_AGENTS, "agent"))
        } else {
            return Ok(());
        };
        let how = match max_total_tokens {
            None => format!("set budget.max_total_tokens to at least {needed}"),
            Some(t) => format!("raise budget.max_total_tokens from {t} to at least {needed}"),
        };
        invalid(
            key.clone(),
            format!(
                "{key} is over the limit of {limit} a debate has without a token budget that pays for it; to raise the limit, {how} in the configuration ({} × {} at {MIN_TOKENS_PER_CALL} tokens per call)",
                plural(self.agents, "agent"),
                plural(self.rounds.saturating_add(1), "round"),
            ),
        )
    }

    /// `debate.min_agents` no more than the agents.
    pub(crate) fn check_quorum(&self, min_agents: Option<usize>) -> Result<(), ConfigError> {
        match min_agents {
            Some(m) if m > self.agents => invalid(
                "debate.min_agents",
                format!(
                    "{} is more than {}: a round could never reach its quorum (lower debate.min_agents or add agents)",
                    self.config_key(&format!("debate.min_agents = {m}")),
                    self.the_agents()
                ),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod most_agents_tests {
    use super::*;

    /// `most_agents` is exactly what `check_caps` allows: that many pass, one more does not.
    #[test]
    fn most_agents_is_the_size_check_s_own_limit() {
        for rounds in [0usize, 1, 3] {
            for budget in [None, Some(500), Some(1_600), Some(10_000), Some(1_000_000)] {
                let most = DebateSize::most_agents(rounds, budget);
                let size = |agents| DebateSize {
                    agents,
                    rounds,
                    agents_from: None,
                    rounds_from: None,
                    file: None,
                };
                assert!(
                    size(most).check_caps(budget).is_ok(),
                    "{rounds} {budget:?} {most}"
                );
                assert!(
                    size(most + 1).check_caps(budget).is_err(),
                    "{rounds} {budget:?} {most}"
                );
            }
        }
    }
}
