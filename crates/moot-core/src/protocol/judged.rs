//! Protocols in which an agent with a deciding role speaks last: `judge`, `assigned`,
//! `consultancy`, `moa` and `council`.
//!
//! The team is its debaters followed by its deciding agents (judges, aggregators or chairmen:
//! agents whose role is the protocol's). The debaters run their own state machine — a round
//! table, assigned positions, a council's ranking round — on the debaters alone. The deciding
//! agents are rows of the same transcript: their cells are recorded as skipped ("speaks after
//! the debate") in every round before the last, and in the last round, once every debater's
//! call of that round has an outcome, each deciding agent makes one call built by the
//! protocol's [`Finale`]. Its answer is an answer like any other: it is the last round's cell
//! of that agent, so every rule, `moot decide` and the reports read it, and the `verdict` rule
//! takes it.
//!
//! Faults (cut-off, drop, delay, malicious) act on the debate among the debaters; the deciding
//! agents' calls are not subject to them.

use super::opening::system_message;
use super::plan::{PlannedCall, Protocol, ProtocolError, Step};
use crate::chat::{CallMode, ChatMessage};
use crate::contract::ReplyContract;
use crate::debate::{AgentRole, DebateSpec, Outcome, Slot, Transcript};
use crate::evidence::{without_passage, QuoteCheck};
use crate::faults::Faults;
use crate::prompts;

/// How a protocol's deciding agent is asked, once the debaters are done.
pub(crate) trait Finale: Send + Sync {
    /// The call of deciding `agent` in the last round `round`, or why it is not asked (it is
    /// then recorded as skipped with that reason, and the `verdict` rule falls back to the
    /// debaters' vote). `debaters` is how many agents lead the list as debaters.
    fn call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
        agent: usize,
    ) -> Result<PlannedCall, String>;
}

/// A debate among debaters, then one call per deciding agent.
pub struct Judged {
    pub(crate) name: &'static str,
    pub(crate) role: AgentRole,
    pub(crate) debate: Box<dyn Protocol>,
    pub(crate) finale: Box<dyn Finale>,
    /// Debaters the protocol needs at least.
    pub(crate) min_debaters: usize,
    /// The verified quotation of the passage one debater's reply may show the deciding agents
    /// (see [`crate::evidence`]).
    pub(crate) quote_limit: usize,
    /// After every round before the last, the deciding agents look at the debate so far and
    /// may end it (`judge`'s `adaptive_break`, Liang et al.).
    pub(crate) adaptive_break: bool,
}

impl Judged {
    /// The debaters' part of the spec: the agents before the first deciding one. A passage is
    /// put into the question itself, with word that the deciding agent cannot see it and how
    /// to quote it, so the debaters' protocol reads it as it reads any question.
    fn debaters_spec(&self, spec: &DebateSpec, debaters: usize) -> DebateSpec {
        let question = match &spec.passage {
            None => spec.question.clone(),
            Some(passage) => prompts::passage_and_question(
                passage,
                &spec.question,
                Some(prompts::HiddenFrom {
                    role: self.role_name(),
                    limit: self.quote_limit,
                }),
            ),
        };
        DebateSpec {
            agents: spec.agents.iter().take(debaters).cloned().collect(),
            question,
            passage: None,
            ..spec.clone()
        }
    }

    /// A call of deciding agent `deciding` in `round`, built by `build` from what a deciding
    /// agent may read: the spec without its passage, and the debaters' replies with their
    /// quotes checked (and the note that says what the marks mean put first), when the debate
    /// has a passage. `build` says why there is no call (it is then recorded as skipped).
    fn as_decider(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        (round, deciding): (usize, usize),
        build: impl FnOnce(&DebateSpec, &Transcript) -> Result<PlannedCall, String>,
    ) -> PlannedCall {
        let call = match QuoteCheck::of(spec, self.quote_limit) {
            // What debaters wrote reaches a decider only with its marks defused.
            None => build(spec, &t.with_texts(debaters, crate::untrusted::defused)),
            Some(check) => {
                let marked = t.with_texts(debaters, |text| check.mark(text).text);
                build(&without_passage(spec), &marked).map(|mut call| {
                    if let Some(prompt) = call
                        .messages
                        .iter_mut()
                        .rev()
                        .find(|m| m.role == crate::chat::Role::User)
                    {
                        prompt.content = format!("{}\n\n{}", prompts::QUOTES_NOTE, prompt.content);
                    }
                    call
                })
            }
        };
        call.unwrap_or_else(|why| PlannedCall::skip(round, deciding, why))
    }

    /// The round after which a deciding agent ended the debate (adaptive break): a round
    /// before the last in which one said [`prompts::JUDGE_ENDS`] and gave a readable answer.
    fn ended_after(&self, t: &Transcript, debaters: usize, last: usize) -> Option<usize> {
        if !self.adaptive_break {
            return None;
        }
        (0..last).find(|&r| {
            (debaters..t.agents()).any(|a| {
                t.get(r, a)
                    .is_some_and(|o| o.answer().is_some() && o.text().is_some_and(ends_the_debate))
            })
        })
    }

    /// Under adaptive break, the deciding agents' look at the debate after `round` (before the
    /// last), once every debater's call of it has an outcome.
    fn break_calls(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
    ) -> Vec<PlannedCall> {
        let remaining = (t.rounds() - 1 - round).to_string();
        t.open_agents(round)
            .into_iter()
            .filter(|&a| a >= debaters)
            .map(|agent| {
                self.as_decider(spec, t, debaters, (round, agent), |spec, t| {
                    let shown = Shown::rounds(t, debaters, 0..=round)
                        .ok_or("no debater has responded yet, so there is nothing to judge")?;
                    let mut call = decider_call(
                        spec,
                        round,
                        agent,
                        ("judge-break", prompts::JUDGE_BREAK),
                        &[("remaining", &remaining), ("debate", &shown.text)],
                        &shown,
                    );
                    call.notes.answer_optional = true;
                    Ok(call)
                })
            })
            .collect()
    }

    fn role_name(&self) -> &'static str {
        self.role.name()
    }
}

impl Protocol for Judged {
    fn name(&self) -> &'static str {
        self.name
    }

    fn default_rule(&self) -> &'static str {
        "verdict"
    }

    fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
        self.debate.shape(agents, rounds)
    }

    fn roles(&self) -> &'static [AgentRole] {
        match self.role {
            AgentRole::Judge => &[AgentRole::Judge],
            AgentRole::Aggregator => &[AgentRole::Aggregator],
            AgentRole::Chairman => &[AgentRole::Chairman],
            AgentRole::Debater => &[],
        }
    }

    fn validate(&self, spec: &DebateSpec) -> Result<(), ProtocolError> {
        let debaters = spec.leading_debaters();
        let role = self.role_name();
        if let Some(late) = spec
            .agents
            .iter()
            .skip(debaters)
            .position(|a| a.role.is_debater())
        {
            return Err(ProtocolError::Invalid(format!(
                "{}: list the {role} after the debaters (agent {} is a debater listed after agent {}, a {})",
                self.name,
                debaters + late + 1,
                debaters + 1,
                spec.agents[debaters].role.name(),
            )));
        }
        if let Some((i, other)) = spec
            .agents
            .iter()
            .enumerate()
            .skip(debaters)
            .find(|(_, a)| a.role != self.role)
        {
            return Err(ProtocolError::Invalid(format!(
                "{} gives no part to a {} (agent {}, {:?}); its deciding role is {role}",
                self.name,
                other.role.name(),
                i + 1,
                other.id
            )));
        }
        if debaters == spec.agents.len() {
            return Err(ProtocolError::Invalid(format!(
                "{} needs an agent with role = \"{role}\", listed after the debaters",
                self.name
            )));
        }
        if debaters < self.min_debaters {
            return Err(ProtocolError::Invalid(format!(
                "{} needs at least {} besides the {role} (it has {debaters})",
                self.name,
                crate::text::plural(self.min_debaters, "debater"),
            )));
        }
        if let Some(i) = spec
            .agents
            .iter()
            .position(|a| a.contract == ReplyContract::Freemad)
        {
            return Err(ProtocolError::Invalid(format!(
                "{} asks for moot's reply layout, and agent {} replies under freemad's contract, \
                 which has no place for a verdict, an assigned position or a ranking",
                self.name,
                i + 1
            )));
        }
        self.debate.validate(&self.debaters_spec(spec, debaters))
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        let debaters = spec.leading_debaters();
        let last = t.rounds().saturating_sub(1);
        let sits_out = |round: usize| {
            (debaters..t.agents())
                .filter(move |&a| t.get(round, a).is_none())
                .map(move |a| {
                    PlannedCall::skip(
                        round,
                        a,
                        format!(
                            "the {} speaks once the debate is over",
                            spec.agents[a].role.name()
                        ),
                    )
                })
        };
        if let Some(ended) = self.ended_after(t, debaters, last) {
            let Some(round) = t.first_open_round() else {
                return Step::Done;
            };
            let role = self.role_name();
            let calls = t
                .open_agents(round)
                .into_iter()
                .map(|a| {
                    let mut call = PlannedCall::skip(
                        round,
                        a,
                        format!("the {role} ended the debate after round {ended}"),
                    );
                    call.notes.ended_after = Some(ended);
                    call
                })
                .collect();
            return Step::Round { round, calls };
        }
        if self.adaptive_break {
            if let Some(round) = t.first_open_round().filter(|&r| r < last) {
                if (0..debaters).all(|a| t.get(round, a).is_some()) {
                    let calls = self.break_calls(spec, t, debaters, round);
                    if !calls.is_empty() {
                        return Step::Round { round, calls };
                    }
                }
            }
        }
        let inner_spec = self.debaters_spec(spec, debaters);
        match self.debate.next(&inner_spec, &t.first_agents(debaters)) {
            Step::Round { round, mut calls } => {
                // Under adaptive break the deciders' cells of the round are their looks at the
                // debate, planned once the debaters' calls of it are in.
                if round < last && !self.adaptive_break {
                    calls.extend(sits_out(round));
                }
                Step::Round { round, calls }
            }
            Step::Done => {
                let Some(round) = t.first_open_round() else {
                    return Step::Done;
                };
                let calls = if round < last {
                    sits_out(round).collect()
                } else {
                    t.open_agents(round)
                        .into_iter()
                        .map(|agent| {
                            self.as_decider(spec, t, debaters, (round, agent), |spec, t| {
                                self.finale.call(spec, t, debaters, round, agent)
                            })
                        })
                        .collect()
                };
                Step::Round { round, calls }
            }
        }
    }
}

/// Whether a decider's reply ends the debate: a line that reads [`prompts::JUDGE_ENDS`]
/// (without case, surrounding white space or Markdown emphasis); the last `Verdict:` line wins.
fn ends_the_debate(text: &str) -> bool {
    text.lines()
        .rev()
        .map(|l| {
            l.trim()
                .trim_matches(['*', '_', '`'])
                .trim()
                .to_ascii_lowercase()
        })
        .find(|l| l.starts_with("verdict:"))
        .is_some_and(|l| l == prompts::JUDGE_ENDS)
}

/// The debaters' responses of `round` as fenced blocks (agents without a response are left
/// out), with who is shown.
pub(crate) fn round_blocks(
    t: &Transcript,
    debaters: usize,
    round: usize,
) -> (Vec<String>, Vec<usize>) {
    (0..debaters)
        .filter_map(|a| {
            t.get(round, a)
                .and_then(Outcome::text)
                .map(|text| (prompts::peer_block(a, text), a))
        })
        .unzip()
}

/// What a decider's prompt shows of the debate: the text, the debaters shown (each once, in
/// first-shown order) and how many responses (each a context transfer).
pub(crate) struct Shown {
    pub text: String,
    pub peers: Vec<usize>,
    pub responses: usize,
}

impl Shown {
    /// The debaters' responses of `rounds`, round by round under a `Round r:` heading, or
    /// `None` when nobody responded in any of them.
    pub fn rounds(
        t: &Transcript,
        debaters: usize,
        rounds: std::ops::RangeInclusive<usize>,
    ) -> Option<Shown> {
        let mut parts = Vec::new();
        let mut peers: Vec<usize> = Vec::new();
        let mut responses = 0;
        for r in rounds {
            let (blocks, who) = round_blocks(t, debaters, r);
            if blocks.is_empty() {
                continue;
            }
            responses += blocks.len();
            parts.push(format!(
                "{}\n\n{}",
                prompts::round_heading(r),
                blocks.join("\n\n")
            ));
            for a in who {
                if !peers.contains(&a) {
                    peers.push(a);
                }
            }
        }
        (!parts.is_empty()).then(|| Shown {
            text: parts.join("\n\n"),
            peers,
            responses,
        })
    }
}

/// A deciding agent's call: its system message and one prompt, `template` rendered with the
/// question, its options, the answer format and `vars` (the debate's text last, since it is
/// the untrusted part).
pub(crate) fn decider_call(
    spec: &DebateSpec,
    round: usize,
    agent: usize,
    template: (&'static str, &'static str),
    vars: &[(&str, &str)],
    shown: &Shown,
) -> PlannedCall {
    let options = prompts::options_block(&spec.choices);
    let mut all: Vec<(&str, &str)> = vec![
        ("question", &spec.question),
        ("options", &options),
        ("format", prompts::format_instruction(spec.kind)),
    ];
    all.extend_from_slice(vars);
    PlannedCall {
        round,
        agent,
        slot: Slot::Answer,
        mode: CallMode::Generate,
        messages: vec![
            system_message(spec, &Faults::default(), agent),
            ChatMessage::user(prompts::render(template.1, &all)),
        ],
        peers: shown.peers.clone(),
        template: template.0,
        template_hash: prompts::template_hash(template.1),
        notes: super::notes::CallNotes {
            ncomm: shown.responses,
            ..Default::default()
        },
    }
}

/// `judge`'s judge (Liang et al.): the whole debate, round by round.
pub(crate) struct TranscriptJudge;

impl Finale for TranscriptJudge {
    fn call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
        agent: usize,
    ) -> Result<PlannedCall, String> {
        let shown = Shown::rounds(t, debaters, 0..=round)
            .ok_or("no debater responded, so there is nothing to judge")?;
        Ok(decider_call(
            spec,
            round,
            agent,
            ("judge-verdict", prompts::JUDGE_VERDICT),
            &[("debate", &shown.text)],
            &shown,
        ))
    }
}

/// `moa`'s aggregator (Wang et al.): the last layer's responses, synthesised.
pub(crate) struct Aggregator;

impl Finale for Aggregator {
    fn call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
        agent: usize,
    ) -> Result<PlannedCall, String> {
        let (blocks, peers) = round_blocks(t, debaters, round);
        if blocks.is_empty() {
            return Err(
                "no proposer of the last layer responded, so there is nothing to aggregate".into(),
            );
        }
        let shown = Shown {
            text: blocks.join("\n\n"),
            responses: peers.len(),
            peers,
        };
        Ok(decider_call(
            spec,
            round,
            agent,
            ("aggregate", prompts::AGGREGATE),
            &[("peers", &shown.text)],
            &shown,
        ))
    }
}
