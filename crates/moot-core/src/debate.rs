//! A debate's fixed inputs ([`DebateSpec`]) and what has happened so far ([`Transcript`]).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::answer::{Answer, AnswerKind, ExtractContext};
use crate::chat::CallMode;
use crate::chat::LogprobSummary;
use crate::contract::{self, ContractNote, Critique, Decision, ReplyContract};
use crate::layout::Layout;
use crate::trajectory::{Cell, Trajectory};

/// One participant as protocols see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub id: String,
    /// Optional persona, prepended to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// How the agent lays out its replies (moot's final line, or freemad's sections).
    #[serde(default, skip_serializing_if = "ReplyContract::is_moot")]
    pub contract: ReplyContract,
    /// What the agent does in the debate. Debaters are stored without the key, so specs stored
    /// before roles existed read back as debaters and a debaters' spec is stored as before.
    #[serde(default, skip_serializing_if = "AgentRole::is_debater")]
    pub role: AgentRole,
}

/// What an agent does in a debate. A protocol's shape (how many agents it runs) counts the
/// debaters only; agents with another role are never trimmed away to fit it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentRole {
    /// Answers the question and takes part in the rounds.
    #[default]
    Debater,
    /// Judges the debaters' answers.
    Judge,
    /// Combines the debaters' answers into one (mixture of agents).
    Aggregator,
    /// Chairs a council: sums up its members' answers.
    Chairman,
}

impl AgentRole {
    pub fn is_debater(&self) -> bool {
        *self == AgentRole::Debater
    }

    /// The role's name as configurations spell it.
    pub fn name(&self) -> &'static str {
        match self {
            AgentRole::Debater => "debater",
            AgentRole::Judge => "judge",
            AgentRole::Aggregator => "aggregator",
            AgentRole::Chairman => "chairman",
        }
    }
}

/// An agent is named by its id: what topologies that seed on names (freemad's `k_reviewers`)
/// read, without a list of the ids built for every agent's peers.
impl AsRef<str> for AgentSpec {
    fn as_ref(&self) -> &str {
        &self.id
    }
}

impl AgentSpec {
    /// An agent called `id` with no persona, on moot's contract.
    pub fn named(id: impl Into<String>) -> AgentSpec {
        AgentSpec {
            id: id.into(),
            persona: None,
            contract: ReplyContract::Moot,
            role: AgentRole::Debater,
        }
    }
}

impl DebateSpec {
    /// How many agents lead the list as debaters, before the first agent with another role.
    pub fn leading_debaters(&self) -> usize {
        self.agents
            .iter()
            .position(|a| !a.role.is_debater())
            .unwrap_or(self.agents.len())
    }

    /// Agents with a role other than debater (judges, aggregators, chairmen), in list order.
    pub fn deciders(&self) -> Vec<usize> {
        self.agents
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.role.is_debater())
            .map(|(i, _)| i)
            .collect()
    }
}

/// An answer read from a reply, with what its contract records.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub answer: Option<Answer>,
    pub note: Option<ContractNote>,
}

/// The question and the shape of the debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateSpec {
    pub question: String,
    pub kind: AnswerKind,
    /// Option texts A, B, … for choice questions (stored as `options`, as every version
    /// stored them).
    #[serde(default, rename = "options")]
    pub choices: Vec<String>,
    pub agents: Vec<AgentSpec>,
    /// Debate rounds after round 0.
    pub rounds: usize,
    pub seed: u64,
    /// Tests that code answers must pass (a dataset item's, or the user's `--tests FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<crate::validation::TestSuite>,
    /// How debate prompts are laid out; stored only when it is not the papers' layout, so specs
    /// stored before layouts existed read back, and a papers' spec is stored as before.
    #[serde(default, skip_serializing_if = "Layout::is_papers")]
    pub layout: Layout,
    /// A passage the question is about (hidden evidence, see [`crate::evidence`]): put before
    /// the question in every debater's prompt, never in a deciding agent's. Stored only when
    /// there is one, so specs stored before passages existed read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
}

impl DebateSpec {
    /// The question as a debater reads it: after the passage, when the debate has one. (A
    /// protocol with a deciding agent gives its debaters a spec whose question already holds
    /// the passage, with word of the judge and how to quote; see [`crate::evidence`].)
    pub fn debater_question(&self) -> std::borrow::Cow<'_, str> {
        match &self.passage {
            None => std::borrow::Cow::Borrowed(&self.question),
            Some(passage) => std::borrow::Cow::Owned(crate::prompts::passage_and_question(
                passage,
                &self.question,
                None,
            )),
        }
    }

    /// A spec with `agents` agents named `a0`, `a1`, … and no personas or options.
    pub fn with_agents(
        question: impl Into<String>,
        kind: AnswerKind,
        agents: usize,
        rounds: usize,
        seed: u64,
    ) -> DebateSpec {
        DebateSpec {
            question: question.into(),
            kind,
            choices: vec![],
            agents: (0..agents)
                .map(|i| AgentSpec::named(format!("a{i}")))
                .collect(),
            rounds,
            seed,
            tests: None,
            layout: Layout::Papers,
            passage: None,
        }
    }

    pub fn extract_context(&self) -> ExtractContext<'_> {
        ExtractContext {
            choices: &self.choices,
        }
    }

    /// Reads the answer of a response under this debate's answer kind and options.
    pub fn extract(&self, text: &str) -> Option<Answer> {
        Answer::extract(self.kind, text, &self.extract_context())
    }

    /// The contract `agent` replies under.
    pub fn contract(&self, agent: usize) -> ReplyContract {
        self.agents
            .get(agent)
            .map_or(ReplyContract::Moot, |a| a.contract)
    }

    /// Reads `agent`'s reply `text` to a call in `mode` under the agent's contract. Under
    /// freemad's, a critique's KEEP stands for `previous` (the answer the agent held before),
    /// and the reading is noted with whether the answer changed.
    pub fn read_reply(
        &self,
        agent: usize,
        mode: CallMode,
        text: &str,
        previous: Option<&Answer>,
    ) -> Reading {
        if self.contract(agent) == ReplyContract::Moot {
            return Reading {
                answer: self.extract(text),
                note: None,
            };
        }
        let (answer, decision) = match mode {
            CallMode::Generate => (
                contract::solution(text).and_then(|s| self.read_solution(&s)),
                None,
            ),
            CallMode::Critique => match contract::critique(text) {
                Critique::Keep => (previous.cloned(), Some(Decision::Keep)),
                Critique::Revise(s) => (self.read_solution(&s), Some(Decision::Revise)),
                Critique::Unparsed => (None, Some(Decision::Unparsed)),
            },
        };
        let changed = match (&answer, previous) {
            (Some(a), Some(p)) => !a.equivalent(p),
            (Some(_), None) => mode == CallMode::Critique,
            (None, _) => false,
        };
        Reading {
            answer,
            note: Some(ContractNote { decision, changed }),
        }
    }

    /// The answer a freemad solution stands for: the whole solution read as an answer of this
    /// debate's kind, else the answer found in it.
    fn read_solution(&self, solution: &str) -> Option<Answer> {
        let ctx = self.extract_context();
        Answer::parse(self.kind, solution, &ctx)
            .or_else(|| Answer::extract(self.kind, solution, &ctx))
    }
}

/// Which call of an agent in a round: its answer, or one of the extra calls some protocols make
/// (MAD-M² judgements, SVR-MAD challenges).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "peer")]
pub enum Slot {
    /// The agent's answer in the round (a cell of the trajectory).
    Answer,
    /// The agent judges `target`'s response of this round (MAD-M² subjective masking).
    Judge(usize),
    /// The agent, as receiver, answers again after reading `challenger`'s pre-debate response
    /// (SVR-MAD); the round is the SVR-MAD iteration, from 1.
    Challenge(usize),
}

impl Slot {
    /// `answer`, `judge:2`, `challenge:0`: the form stored with each call.
    pub fn label(&self) -> String {
        match self {
            Slot::Answer => "answer".into(),
            Slot::Judge(p) => format!("judge:{p}"),
            Slot::Challenge(p) => format!("challenge:{p}"),
        }
    }

    pub fn parse(label: &str) -> Option<Slot> {
        match label.split_once(':') {
            None if label == "answer" => Some(Slot::Answer),
            Some(("judge", p)) => p.parse().ok().map(Slot::Judge),
            Some(("challenge", p)) => p.parse().ok().map(Slot::Challenge),
            _ => None,
        }
    }
}

/// One call's identity within a debate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CallKey {
    pub round: usize,
    pub agent: usize,
    pub slot: Slot,
}

impl CallKey {
    pub fn answer(round: usize, agent: usize) -> CallKey {
        CallKey {
            round,
            agent,
            slot: Slot::Answer,
        }
    }
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A response (whose answer may be unreadable: `None`), with its token-logprob summary when
    /// the backend returned logprobs.
    Responded {
        text: String,
        answer: Option<Answer>,
        logprobs: Option<LogprobSummary>,
    },
    /// No response: deadline, error or cancellation. Never read as a kept answer.
    Missing { reason: String },
    /// The protocol chose not to ask (S2-MAD: every peer already agrees; SID-ET: the debate was
    /// skipped). The agent keeps its previous answer.
    Skipped { reason: String },
}

impl Outcome {
    pub fn responded(text: impl Into<String>, answer: Option<Answer>) -> Outcome {
        Outcome::Responded {
            text: text.into(),
            answer,
            logprobs: None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Outcome::Responded { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn answer(&self) -> Option<&Answer> {
        match self {
            Outcome::Responded { answer, .. } => answer.as_ref(),
            _ => None,
        }
    }

    pub fn logprobs(&self) -> Option<&LogprobSummary> {
        match self {
            Outcome::Responded { logprobs, .. } => logprobs.as_ref(),
            _ => None,
        }
    }
}

/// Outcomes per round per agent (`None` = not run yet), and the outcomes of extra calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    rounds: Vec<Vec<Option<Outcome>>>,
    extra: BTreeMap<CallKey, Outcome>,
}

impl Transcript {
    pub fn new(agents: usize, rounds: usize) -> Transcript {
        Transcript {
            rounds: vec![vec![None; agents]; rounds + 1],
            extra: BTreeMap::new(),
        }
    }

    /// The outcome of any call.
    pub fn get_call(&self, key: &CallKey) -> Option<&Outcome> {
        match key.slot {
            Slot::Answer => self.get(key.round, key.agent),
            _ => self.extra.get(key),
        }
    }

    /// Records any call's outcome; answers outside the grid and extra calls naming agents that
    /// do not exist are ignored and reported as `false`.
    pub fn set_call(&mut self, key: CallKey, outcome: Outcome) -> bool {
        match key.slot {
            Slot::Answer => self.set(key.round, key.agent, outcome),
            Slot::Judge(p) | Slot::Challenge(p) => {
                if key.agent >= self.agents() || p >= self.agents() {
                    return false;
                }
                self.extra.insert(key, outcome);
                true
            }
        }
    }

    /// Extra calls (judgements, challenges) in key order.
    pub fn extra_calls(&self) -> impl Iterator<Item = (&CallKey, &Outcome)> {
        self.extra.iter()
    }

    /// The agent's answer cell as decision rules see it: a skipped round carries the answer of
    /// the agent's latest earlier round.
    pub fn effective(&self, round: usize, agent: usize) -> Option<&Outcome> {
        let mut r = round;
        loop {
            match self.get(r, agent) {
                Some(Outcome::Skipped { .. }) if r > 0 => r -= 1,
                other => return other,
            }
        }
    }

    /// Number of rounds including round 0.
    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    pub fn agents(&self) -> usize {
        self.rounds.first().map_or(0, Vec::len)
    }

    pub fn get(&self, round: usize, agent: usize) -> Option<&Outcome> {
        self.rounds
            .get(round)
            .and_then(|r| r.get(agent))
            .and_then(Option::as_ref)
    }

    /// Records an outcome. Out-of-range positions are ignored and reported as `false`.
    pub fn set(&mut self, round: usize, agent: usize, outcome: Outcome) -> bool {
        match self.rounds.get_mut(round).and_then(|r| r.get_mut(agent)) {
            Some(slot) => {
                *slot = Some(outcome);
                true
            }
            None => false,
        }
    }

    /// The first round with an agent that has no outcome yet.
    pub fn first_open_round(&self) -> Option<usize> {
        self.rounds
            .iter()
            .position(|r| r.iter().any(Option::is_none))
    }

    /// Agents without an outcome in `round`.
    pub fn open_agents(&self, round: usize) -> Vec<usize> {
        self.rounds
            .get(round)
            .map(|r| {
                r.iter()
                    .enumerate()
                    .filter(|(_, o)| o.is_none())
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The latest round in which any agent responded.
    pub fn last_answered_round(&self) -> Option<usize> {
        (0..self.rounds.len()).rev().find(|&r| {
            self.rounds[r]
                .iter()
                .any(|o| matches!(o, Some(Outcome::Responded { .. })))
        })
    }

    /// This transcript with the text and the answer's shown text of every response of the
    /// first `agents` agents passed through `f` (answer values, logprobs and every other
    /// outcome kept): what a reader who must not see the texts as written is given (a decider:
    /// marks defused, quotes checked under hidden evidence).
    pub fn with_texts(&self, agents: usize, f: impl Fn(&str) -> String) -> Transcript {
        let mapped = |o: &Outcome| match o {
            Outcome::Responded {
                text,
                answer,
                logprobs,
            } => Outcome::Responded {
                text: f(text),
                answer: answer.as_ref().map(|a| a.shown_as(&f)),
                logprobs: *logprobs,
            },
            other => other.clone(),
        };
        Transcript {
            rounds: self
                .rounds
                .iter()
                .map(|r| {
                    r.iter()
                        .enumerate()
                        .map(|(a, o)| match o {
                            Some(o) if a < agents => Some(mapped(o)),
                            o => o.clone(),
                        })
                        .collect()
                })
                .collect(),
            extra: self
                .extra
                .iter()
                .map(|(k, o)| {
                    (
                        *k,
                        if k.agent < agents {
                            mapped(o)
                        } else {
                            o.clone()
                        },
                    )
                })
                .collect(),
        }
    }

    /// The first `agents` agents' part of this transcript (their cells, and the extra calls
    /// among them): what a protocol whose deciding agents are listed after its debaters gives
    /// the debaters' own state machine.
    pub fn first_agents(&self, agents: usize) -> Transcript {
        Transcript {
            rounds: self
                .rounds
                .iter()
                .map(|r| r.iter().take(agents).cloned().collect())
                .collect(),
            extra: self
                .extra
                .iter()
                .filter(|(k, _)| {
                    k.agent < agents
                        && match k.slot {
                            Slot::Answer => true,
                            Slot::Judge(p) | Slot::Challenge(p) => p < agents,
                        }
                })
                .map(|(k, o)| (*k, o.clone()))
                .collect(),
        }
    }

    /// This transcript through round `last` (its later rounds and their extra calls dropped).
    pub fn through(&self, last: usize) -> Transcript {
        Transcript {
            rounds: self.rounds.iter().take(last + 1).cloned().collect(),
            extra: self
                .extra
                .iter()
                .filter(|(k, _)| k.round <= last)
                .map(|(k, o)| (*k, o.clone()))
                .collect(),
        }
    }

    /// What a decision reads: the transcript through its last round in which anyone responded.
    /// Rounds nobody answered (cut by a budget or a failing provider) are not rounds of the
    /// debate; without this, a last-round rule would find no answer at all.
    pub fn decided_part(&self) -> std::borrow::Cow<'_, Transcript> {
        match self.last_answered_round() {
            Some(last) if last + 1 < self.rounds.len() => {
                std::borrow::Cow::Owned(self.through(last))
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }

    pub fn is_complete(&self) -> bool {
        self.first_open_round().is_none()
    }

    /// The answers matrix the decision rules read (not-yet-run cells count as missing).
    pub fn trajectory(&self) -> Option<Trajectory> {
        let agents = self.agents();
        let rows = (0..agents)
            .map(|a| {
                (0..self.rounds.len())
                    .map(|r| match self.effective(r, a) {
                        Some(Outcome::Responded { answer, .. }) => Cell::Answered(answer.clone()),
                        _ => Cell::Missing,
                    })
                    .collect()
            })
            .collect();
        Trajectory::new(rows).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debater_is_stored_without_a_role_and_other_roles_by_name() {
        let debater = serde_json::to_value(AgentSpec::named("a0")).unwrap();
        assert_eq!(debater, serde_json::json!({"id": "a0"}));
        let judge = AgentSpec {
            role: AgentRole::Judge,
            ..AgentSpec::named("j")
        };
        let stored = serde_json::to_value(&judge).unwrap();
        assert_eq!(stored, serde_json::json!({"id": "j", "role": "judge"}));
        assert_eq!(serde_json::from_value::<AgentSpec>(stored).unwrap(), judge);
    }

    #[test]
    fn an_agent_stored_before_roles_existed_reads_back_as_a_debater() {
        let old = r#"{"id": "a1", "persona": "a skeptic"}"#;
        let agent: AgentSpec = serde_json::from_str(old).unwrap();
        assert_eq!(agent.role, AgentRole::Debater);
        assert_eq!(agent.persona.as_deref(), Some("a skeptic"));
    }

    #[test]
    fn every_role_reads_back_from_its_lowercase_name() {
        for (name, role) in [
            ("debater", AgentRole::Debater),
            ("judge", AgentRole::Judge),
            ("aggregator", AgentRole::Aggregator),
            ("chairman", AgentRole::Chairman),
        ] {
            let read: AgentRole = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(read, role);
        }
    }
}
