//! The round table: every protocol in which agents answer, then read (some of) their peers'
//! previous responses for R debate rounds. `som`, `free-mad-*`, `sparse`, `madc`, `mad-m2`,
//! `group-debate`, `s2-mad` and `sid-et` are this one state machine composed from:
//! - a prompt style (conformity, FREE-MAD's anti-conformity critique, or neutral),
//! - a context style: the agent's own conversation plus its peers' responses (`History`, Du et
//!   al.), or one prompt with the previous round's retained memories, its own among them
//!   (`Memories`, MAD-M²),
//! - a topology, an ordering policy, an optional memory mask (MAD-M²), S2-MAD's pruning,
//!   GroupDebate's answers-only messages across groups, SID-ET's early stop,
//! - and the faults, which every protocol honours.
//!
//! Under the shared-first layout (`debate.layout`), a `History` protocol's debate round is one
//! prompt instead of the conversation: the question and every round's solutions so far, the
//! agent's own in its place in agent order, then the agent's own part (see
//! [`crate::layout`]). What each agent reads is the same; only where.
//!
//! A peer's message in round r is its response of round r − 1 as the decision rules see it (the
//! response it last gave, when S2-MAD let it skip). A peer with no response is not shown. Under
//! `History`, a round in which the agent gave no response is left out of its conversation (so
//! turns still alternate), and past debate prompts are rebuilt exactly as they were sent, since
//! they depend only on earlier rounds.

use super::masking::MaskPlan;
use super::notes::{CallNotes, FaultNote};
use super::opening::{freemad_initial_call, initial_call, initial_prompt, system_message};
use super::options::ProtocolOptions;
use super::plan::{PlannedCall, Protocol, ProtocolError, Step};
use super::speaking_order::{speaking_order, OrderNote, Ordering};
use crate::chat::{CallMode, ChatMessage};
use crate::contract::ReplyContract;
use crate::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use crate::faults::{Delivery, Faults};
use crate::layout::Layout;
use crate::prompts;
use crate::topology::{group_of, Topology};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptStyle {
    /// "Use the other agents' solutions as additional information" (Du et al.; FREE-MAD-C).
    Conformity,
    /// FREE-MAD-N's five-step critique.
    AntiConformity,
    /// The peers' solutions and the question, with no instruction on how to weigh them.
    Neutral,
    /// `judge`'s debaters (Liang et al.): defend your answer against the others' arguments
    /// before a judge.
    TitForTat,
}

impl PromptStyle {
    fn template(self) -> (&'static str, &'static str) {
        match self {
            PromptStyle::Conformity => ("conformity", prompts::CONFORMITY),
            PromptStyle::AntiConformity => ("anti-conformity", prompts::ANTI_CONFORMITY),
            PromptStyle::Neutral => ("neutral", prompts::NEUTRAL),
            PromptStyle::TitForTat => ("tit-for-tat", prompts::TIT_FOR_TAT),
        }
    }

    /// The style's template under the shared-first layout.
    fn shared_first_template(self) -> (&'static str, &'static str) {
        match self {
            PromptStyle::Conformity => {
                ("conformity/shared-first", prompts::SHARED_FIRST_CONFORMITY)
            }
            PromptStyle::AntiConformity => (
                "anti-conformity/shared-first",
                prompts::SHARED_FIRST_ANTI_CONFORMITY,
            ),
            PromptStyle::Neutral => ("neutral/shared-first", prompts::SHARED_FIRST_NEUTRAL),
            PromptStyle::TitForTat => (
                "tit-for-tat/shared-first",
                prompts::SHARED_FIRST_TIT_FOR_TAT,
            ),
        }
    }
}

/// How a debate round's prompt carries what came before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// The agent's own conversation as real turns, then its peers' latest responses.
    History,
    /// One prompt: the question and the retained memories of the previous round (MAD-M²).
    Memories,
}

/// What one round-table protocol adds to the shared machine, set by that protocol's
/// constructor (a typed choice rather than a check of the protocol's name).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Variant {
    /// `som`, `free-mad-*`, `sparse`: topology, ordering and faults only.
    Plain,
    /// `madc`: the speaking order is recorded with every call, whatever the policy.
    Madc,
    /// `mad-m2`: one prompt of retained memories (`Context::Memories`), masked by the plan.
    MadM2(MaskPlan),
    /// `s2-mad`: no message between agents holding the same answer.
    S2Mad,
    /// `group-debate`: agents outside the reader's group (of `groups`) are shown by final
    /// answer only.
    GroupDebate { groups: usize },
    /// `sid-et`: the debate is skipped when the best round-0 min token log-likelihood is above
    /// `threshold`.
    SidEt { threshold: f64 },
    /// `moa`'s layers of proposers: one prompt with every response of the previous layer, the
    /// agent's own among them, to synthesise (`Context::Memories` without a mask).
    Layers,
}

#[derive(Debug, Clone)]
pub struct RoundTable {
    pub(crate) name: &'static str,
    pub(crate) default_rule: &'static str,
    pub(crate) style: PromptStyle,
    pub(crate) topology: Topology,
    pub(crate) ordering: Ordering,
    pub(crate) gold: Option<String>,
    pub(crate) variant: Variant,
    pub(crate) faults: Faults,
    /// `moa`: the proposers of each layer (agent indices, layer 0 = round 0), when the
    /// configuration names them; every debater proposes in every layer otherwise.
    pub(crate) layers: Option<Vec<Vec<usize>>>,
}

/// A message an agent may read before masking: (author, round of the response, shown by answer
/// only).
type Gathered = (usize, usize, bool);

/// One peer message as placed in a prompt.
struct Shown {
    peer: usize,
    block: String,
    /// Counts as a context transfer (an agent's own memory does not).
    transfer: bool,
}

impl RoundTable {
    pub fn new(name: &'static str, style: PromptStyle, default_rule: &'static str) -> RoundTable {
        RoundTable {
            name,
            default_rule,
            style,
            topology: Topology::AllToAll,
            ordering: Ordering::Fixed,
            gold: None,
            variant: Variant::Plain,
            faults: Faults::default(),
            layers: None,
        }
    }

    /// How debate prompts carry what came before: memories under MAD-M², else the history.
    pub fn context(&self) -> Context {
        match self.variant {
            Variant::MadM2(_) | Variant::Layers => Context::Memories,
            _ => Context::History,
        }
    }

    /// Whether `agent`'s debate rounds are laid out shared-first: one prompt with every round's
    /// solutions, its own among them, before its own part. Only a protocol that carries the
    /// agent's conversation changes: under `Memories` every reader's memories are in one order
    /// already, its own among them, after a head every reader shares. An agent on freemad's
    /// contract keeps freemad's layout exactly.
    fn shared_first(&self, spec: &DebateSpec, agent: usize) -> bool {
        spec.layout == Layout::SharedFirst
            && self.context() == Context::History
            && spec.contract(agent) != ReplyContract::Freemad
    }

    fn masking(&self) -> Option<&MaskPlan> {
        match &self.variant {
            Variant::MadM2(plan) => Some(plan),
            _ => None,
        }
    }

    fn answers_across_groups(&self) -> Option<usize> {
        match self.variant {
            Variant::GroupDebate { groups } => Some(groups),
            _ => None,
        }
    }

    fn early_stop(&self) -> Option<f64> {
        match self.variant {
            Variant::SidEt { threshold } => Some(threshold),
            _ => None,
        }
    }

    /// Applies the round-table options (topology, ordering, gold, faults).
    pub fn configured(
        mut self,
        options: &ProtocolOptions,
        default_topology: Topology,
    ) -> Result<Box<dyn Protocol>, ProtocolError> {
        self.topology = options.topology_or(default_topology);
        if let Some(o) = options.ordering {
            self.ordering = o;
        }
        self.gold = options.gold.clone();
        self.faults = options.faults.clone();
        Ok(Box::new(self))
    }

    /// Whether `agent` proposes in layer `round` (always, unless `layers` names the proposers).
    fn proposes(&self, round: usize, agent: usize) -> bool {
        self.layers
            .as_ref()
            .is_none_or(|layers| layers.get(round).is_some_and(|l| l.contains(&agent)))
    }

    /// The agent's answer-carrying outcome of `round` (skips carry the last response).
    fn response(
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> Option<(&str, Option<&crate::answer::Answer>)> {
        match t.effective(round, agent) {
            Some(o @ Outcome::Responded { text, .. }) => Some((text.as_str(), o.answer())),
            _ => None,
        }
    }

    /// SID-ET: the agent whose round-0 min token log-likelihood clears the threshold, if any.
    pub(crate) fn early_stopper(&self, t: &Transcript) -> Option<(usize, f64)> {
        let threshold = self.early_stop()?;
        let best = (0..t.agents())
            .filter_map(|a| t.get(0, a).and_then(Outcome::logprobs).map(|l| (a, l.min)))
            .fold(None, |best: Option<(usize, f64)>, (a, m)| match best {
                Some((_, bm)) if bm >= m => best,
                _ => Some((a, m)),
            })?;
        (best.1 > threshold).then_some(best)
    }

    /// The messages `agent` may read in `round` (≥ 1) before masking: (author, round of the
    /// response, shown by answer only), the agent's own memory last under `Memories`, with the
    /// notes so far; `Err(reason)` when the agent skips the round.
    fn gather(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> Result<(Vec<Gathered>, CallNotes), String> {
        let n = t.agents();
        let mut notes = CallNotes::for_agent(spec, &self.faults, agent);
        let own = Self::response(t, round - 1, agent);
        let own_answer = own.and_then(|(_, a)| a);
        let groups = self
            .answers_across_groups()
            .map(|g| group_of(n, g, spec.seed));
        let mut candidates: Vec<usize> = match &groups {
            Some(_) => (0..n).filter(|&p| p != agent).collect(),
            None => self.topology.peers(agent, &spec.agents, spec.seed),
        };
        candidates.retain(|&p| Self::response(t, round - 1, p).is_some());
        // A layer reads the previous layer's proposers only.
        candidates.retain(|&p| self.proposes(round - 1, p));
        let own = own.filter(|_| self.proposes(round - 1, agent));
        if self.variant == Variant::S2Mad {
            if let Some(mine) = own_answer {
                let agrees = |p: &usize| {
                    Self::response(t, round - 1, *p)
                        .and_then(|(_, a)| a)
                        .is_some_and(|a| a.equivalent(mine))
                };
                if !candidates.is_empty() && candidates.iter().all(agrees) {
                    return Err(format!(
                        "s2-mad: every peer already holds this agent's answer {}",
                        mine.canonical()
                    ));
                }
                notes.pruned = candidates.iter().copied().filter(agrees).collect();
                candidates.retain(|p| !agrees(p));
            }
        }
        let mut items = Vec::new();
        for peer in candidates {
            let delivery = self.faults.deliver(spec.seed, n, round, peer, agent);
            let from_round = match delivery {
                Delivery::Delivered { from_round } => from_round,
                Delivery::Delayed { from_round } => {
                    notes.faults.push(FaultNote { peer, delivery });
                    from_round
                }
                Delivery::CutOff | Delivery::Dropped => {
                    notes.faults.push(FaultNote { peer, delivery });
                    continue;
                }
            };
            if Self::response(t, from_round, peer).is_none() {
                continue;
            }
            let across = groups.as_ref().is_some_and(|g| g[peer] != g[agent]);
            items.push((peer, from_round, across));
        }
        if (self.context() == Context::Memories || self.shared_first(spec, agent)) && own.is_some()
        {
            items.push((agent, round - 1, false));
        }
        Ok((items, notes))
    }

    /// MAD-M²: the memories `agent` could read in `round`, as (author, round of the response).
    pub(crate) fn memory_candidates(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> Vec<(usize, usize)> {
        self.gather(spec, t, round, agent)
            .map(|(items, _)| items.into_iter().map(|(a, r, _)| (a, r)).collect())
            .unwrap_or_default()
    }

    /// The messages `agent` reads in `round` (≥ 1), masked and ordered, with the notes the
    /// transcript keeps about them; `Err(reason)` when the agent skips the round.
    fn view(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> Result<(Vec<Shown>, CallNotes), String> {
        let (mut items, mut notes) = self.gather(spec, t, round, agent)?;
        if let Some(mask) = self.masking() {
            let candidates: Vec<(usize, usize)> = items.iter().map(|&(a, r, _)| (a, r)).collect();
            let (kept, masks) = mask.apply(t, round, agent, &candidates);
            notes.masks = masks;
            items.retain(|(a, _, _)| kept.contains(a));
        }
        if self.ordering == Ordering::Fixed {
            // The fixed order is agent order, and a topology with an order of its own
            // (freemad numbers peers in the order its k_reviewers drew them) keeps it, as
            // `gather` lists it; the shared-first layout's one order is agent order, always.
            // Sorting by the agent itself, not by its place in a list of every agent, keeps a
            // call's cost to its own peers in a large sparse debate.
            if !self.topology.orders_peers() || self.shared_first(spec, agent) {
                items.sort_by_key(|&(a, _, _)| a);
            }
        }
        // MADC records its order every round, whatever the policy; other protocols only when an
        // ordering was asked for.
        if self.ordering != Ordering::Fixed || self.variant == Variant::Madc {
            let (order, consistency) =
                speaking_order(self.ordering, spec, t, round, self.gold.as_deref());
            if self.ordering != Ordering::Fixed {
                items.sort_by_key(|&(a, _, _)| order.iter().position(|&o| o == a));
            }
            notes.ordering = Some(OrderNote {
                policy: self.ordering,
                order,
                consistency,
            });
        }
        let shown: Vec<Shown> = items
            .into_iter()
            .filter_map(|(peer, from_round, across)| {
                let (text, answer) = Self::response(t, from_round, peer)?;
                let block = if across {
                    notes.answers_only.push(peer);
                    let answer = answer.map_or("(no readable answer)".to_string(), |a| {
                        a.canonical().to_string()
                    });
                    prompts::peer_answer_block(peer, &answer)
                } else {
                    prompts::peer_block(peer, text)
                };
                Some(Shown {
                    peer,
                    block,
                    transfer: peer != agent,
                })
            })
            .collect();
        notes.ncomm = shown.iter().filter(|s| s.transfer).count();
        Ok((shown, notes))
    }

    fn debate_prompt(
        &self,
        spec: &DebateSpec,
        shown: &[Shown],
    ) -> (&'static str, &'static str, String) {
        let peers_text = if shown.is_empty() {
            "(no other agent's solution arrived this round)".to_string()
        } else {
            shown
                .iter()
                .map(|s| s.block.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let (name, template) = match self.context() {
            Context::Memories if shown.is_empty() => ("initial", prompts::INITIAL),
            Context::Memories if self.variant == Variant::Layers => {
                ("synthesize", prompts::SYNTHESIZE)
            }
            Context::Memories => ("memories", prompts::MEMORIES),
            Context::History => self.style.template(),
        };
        let prompt = prompts::render(
            template,
            &[
                ("peers", &peers_text),
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("format", prompts::format_instruction(spec.kind)),
            ],
        );
        (name, template, prompt)
    }

    /// The call of `agent` in debate round `round` (≥ 1).
    fn debate_call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> PlannedCall {
        let (shown, notes) = match self.view(spec, t, round, agent) {
            Ok(v) => v,
            Err(reason) => return PlannedCall::skip(round, agent, reason),
        };
        if spec.contract(agent) == ReplyContract::Freemad {
            return self.freemad_critique_call(spec, t, round, agent, &shown, notes);
        }
        if self.shared_first(spec, agent) {
            return self.shared_first_call(spec, t, round, agent, &shown, notes);
        }
        let system = system_message(spec, &self.faults, agent);
        let (template, text, prompt) = self.debate_prompt(spec, &shown);
        let messages = match self.context() {
            Context::Memories => vec![system, ChatMessage::user(prompt)],
            Context::History => {
                let mut messages = vec![system];
                // Until the conversation holds one of the agent's answers, the question leads.
                let mut answered_before = false;
                for past in 0..round {
                    let past_prompt = if past == 0 {
                        initial_prompt(spec)
                    } else {
                        let shown = self
                            .view(spec, t, past, agent)
                            .map(|v| v.0)
                            .unwrap_or_default();
                        self.lead(spec, answered_before, self.debate_prompt(spec, &shown).2)
                    };
                    if let Some(text) = t.get(past, agent).and_then(Outcome::text) {
                        messages.push(ChatMessage::user(past_prompt));
                        messages.push(ChatMessage::assistant(text));
                        answered_before = true;
                    }
                }
                messages.push(ChatMessage::user(self.lead(spec, answered_before, prompt)));
                messages
            }
        };
        PlannedCall {
            round,
            agent,
            slot: Slot::Answer,
            mode: if template == "initial" {
                CallMode::Generate
            } else {
                CallMode::Critique
            },
            messages,
            peers: shown
                .iter()
                .filter(|s| s.transfer)
                .map(|s| s.peer)
                .collect(),
            template,
            template_hash: prompts::template_hash(text),
            notes,
        }
    }

    /// A debate call under the shared-first layout: the system message, then one prompt — the
    /// question, every round's solutions so far as the agent read them (each round's in the
    /// view's one order, the agent's own solution in its place; a round the agent skipped shows
    /// its own solution alone), then who the agent is and the style's instruction. Every agent
    /// of a round that reads the same solutions gets the same text up to its own part.
    fn shared_first_call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
        shown: &[Shown],
        notes: CallNotes,
    ) -> PlannedCall {
        let mut sections = Vec::new();
        for past in 1..=round {
            let blocks: Vec<String> = if past == round {
                shown.iter().map(|s| s.block.clone()).collect()
            } else {
                match self.view(spec, t, past, agent) {
                    Ok((seen, _)) => seen.into_iter().map(|s| s.block).collect(),
                    Err(_) => Self::response(t, past - 1, agent)
                        .map(|(text, _)| prompts::peer_block(agent, text))
                        .into_iter()
                        .collect(),
                }
            };
            if !blocks.is_empty() {
                sections.push(format!(
                    "{}\n\n{}",
                    prompts::round_heading(past - 1),
                    blocks.join("\n\n")
                ));
            }
        }
        let rounds = if sections.is_empty() {
            "(no solution has arrived yet)".to_string()
        } else {
            sections.join("\n\n")
        };
        let (name, template) = self.style.shared_first_template();
        let prompt = prompts::render(
            template,
            &[
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("rounds", &rounds),
                ("agent", &(agent + 1).to_string()),
                ("format", prompts::format_instruction(spec.kind)),
            ],
        );
        PlannedCall {
            round,
            agent,
            slot: Slot::Answer,
            mode: CallMode::Critique,
            messages: vec![
                system_message(spec, &self.faults, agent),
                ChatMessage::user(prompt),
            ],
            peers: shown
                .iter()
                .filter(|s| s.transfer)
                .map(|s| s.peer)
                .collect(),
            template: name,
            template_hash: prompts::template_hash(template),
            notes,
        }
    }

    /// A critique under freemad's contract: one message with the agent's prior solution and its
    /// peers' solutions, anonymised, in the order shown; without a prior solution, the agent
    /// answers anew.
    fn freemad_critique_call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
        shown: &[Shown],
        notes: CallNotes,
    ) -> PlannedCall {
        let solution = |round: usize, agent: usize| {
            Self::response(t, round, agent).map(|(text, answer)| {
                answer.map_or_else(|| text.to_string(), |a| a.canonical().to_string())
            })
        };
        let Some(own) = solution(round - 1, agent) else {
            return freemad_initial_call(spec, &self.faults, round, agent);
        };
        let peers: Vec<(usize, String)> = shown
            .iter()
            .filter(|s| s.transfer)
            .filter_map(|s| solution(round - 1, s.peer).map(|text| (s.peer, text)))
            .collect();
        let texts: Vec<String> = peers.iter().map(|(_, text)| text.clone()).collect();
        let prompt = prompts::render(
            prompts::FREEMAD_CRITIQUE,
            &[
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("own", &own),
                ("peers", &prompts::anonymised_peers(&texts)),
            ],
        );
        PlannedCall {
            round,
            agent,
            slot: Slot::Answer,
            mode: CallMode::Critique,
            messages: vec![ChatMessage::user(prompt)],
            peers: peers.iter().map(|(p, _)| *p).collect(),
            template: "freemad-critique",
            template_hash: prompts::template_hash(prompts::FREEMAD_CRITIQUE),
            notes: CallNotes {
                ncomm: peers.len(),
                ..notes
            },
        }
    }

    /// A debate prompt in a conversation without any earlier answer starts with the question.
    fn lead(&self, spec: &DebateSpec, answered_before: bool, prompt: String) -> String {
        if answered_before {
            prompt
        } else {
            format!("{}\n\n{prompt}", initial_prompt(spec))
        }
    }

    /// MAD-M²: the judgement call `key` (slot `judge:<author>`) asks for, when the memory it
    /// judges has a text. A judgement of another agent's memory counts as one communication.
    fn judge_call(&self, spec: &DebateSpec, t: &Transcript, key: CallKey) -> Option<PlannedCall> {
        let Slot::Judge(author) = key.slot else {
            return None;
        };
        let text = t.effective(key.round, author).and_then(Outcome::text)?;
        let prompt = prompts::render(
            prompts::JUDGE,
            &[
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("solution", &prompts::peer_text(text)),
            ],
        );
        Some(PlannedCall {
            round: key.round,
            agent: key.agent,
            slot: key.slot,
            mode: CallMode::Critique,
            messages: vec![
                system_message(spec, &self.faults, key.agent),
                ChatMessage::user(prompt),
            ],
            peers: vec![author],
            template: "judge",
            template_hash: prompts::template_hash(prompts::JUDGE),
            notes: CallNotes {
                ncomm: usize::from(author != key.agent),
                ..CallNotes::default()
            },
        })
    }
}

impl Protocol for RoundTable {
    fn name(&self) -> &'static str {
        self.name
    }

    fn default_rule(&self) -> &'static str {
        self.default_rule
    }

    /// Named layers fix the rounds: one layer per round, round 0 the first.
    fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
        match &self.layers {
            Some(layers) => (agents, layers.len().saturating_sub(1)),
            None => (agents, rounds),
        }
    }

    fn validate(&self, spec: &DebateSpec) -> Result<(), ProtocolError> {
        if let Some(layers) = &self.layers {
            let n = spec.agents.len();
            if let Some(i) = layers.iter().position(Vec::is_empty) {
                return Err(ProtocolError::Invalid(format!(
                    "layers: layer {} names no proposer",
                    i + 1
                )));
            }
            if let Some(&a) = layers.iter().flatten().find(|&&a| a >= n) {
                return Err(ProtocolError::Invalid(format!(
                    "layers: agent {} is named, and the debate has {} (agents are numbered \
                     from 1, in the configuration's order, the aggregator aside)",
                    a + 1,
                    crate::text::plural(n, "proposer")
                )));
            }
        }
        self.topology.validate(spec.agents.len())?;
        if let Some(g) = self.answers_across_groups() {
            Topology::Groups { groups: g }.validate(spec.agents.len())?;
        }
        if matches!(self.ordering, Ordering::TruthFirst | Ordering::TruthLast)
            && self.gold.is_none()
        {
            return Err(ProtocolError::Invalid(format!(
                "ordering {} is for analysis only and needs the gold answer (option `gold`)",
                serde_plain(self.ordering)
            )));
        }
        Ok(())
    }

    fn needs_logprobs(&self) -> Option<&'static str> {
        if self.early_stop().is_some() {
            return Some("sid-et reads each agent's min token log-likelihood");
        }
        self.masking().and_then(MaskPlan::needs_logprobs)
    }

    fn evidence(&self, spec: &DebateSpec, t: &Transcript) -> crate::decision::Evidence {
        let mut e = crate::decision::Evidence::from_transcript(spec, t);
        e.early_stop = self.early_stopper(t).map(|(agent, _)| agent);
        e
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        let Some(round) = t.first_open_round() else {
            return Step::Done;
        };
        let open = t.open_agents(round);
        if self.layers.is_some() && open.iter().any(|&a| !self.proposes(round, a)) {
            let calls = open
                .into_iter()
                .map(|a| {
                    if !self.proposes(round, a) {
                        PlannedCall::skip(
                            round,
                            a,
                            format!(
                                "{}: agent {} does not propose in layer {}",
                                self.name,
                                a + 1,
                                round + 1
                            ),
                        )
                    } else if round == 0 {
                        initial_call(spec, &self.faults, a, None)
                    } else {
                        self.debate_call(spec, t, round, a)
                    }
                })
                .collect();
            return Step::Round { round, calls };
        }
        if round == 0 {
            let calls = open
                .into_iter()
                .map(|a| initial_call(spec, &self.faults, a, None))
                .collect();
            return Step::Round { round, calls };
        }
        if let Some((agent, min)) = self.early_stopper(t) {
            let reason = format!(
                "sid-et: agent {}'s min token log-likelihood {min:.3} is above the threshold {}: debate skipped",
                agent + 1,
                self.early_stop().unwrap_or_default()
            );
            let calls = open
                .into_iter()
                .map(|a| PlannedCall::skip(round, a, reason.clone()))
                .collect();
            return Step::Round { round, calls };
        }
        if let Some(mask) = self.masking() {
            let readers = open
                .iter()
                .map(|&reader| (reader, self.memory_candidates(spec, t, round, reader)));
            let judgements: Vec<PlannedCall> = mask
                .pending_judgements(t, readers)
                .into_iter()
                .filter_map(|key| self.judge_call(spec, t, key))
                .collect();
            if !judgements.is_empty() {
                return Step::Round {
                    round,
                    calls: judgements,
                };
            }
        }
        let calls = open
            .into_iter()
            .map(|a| self.debate_call(spec, t, round, a))
            .collect();
        Step::Round { round, calls }
    }
}

/// An enum's configuration name (its serde form).
pub(crate) fn serde_plain<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Role;
    use crate::protocol::test_support::{respond, spec};
    use crate::protocol::Step;

    fn roles(c: &PlannedCall) -> Vec<Role> {
        c.messages.iter().map(|m| m.role).collect()
    }

    /// The three prompt styles differ only in the instruction around the same peers: what
    /// the sim's β(p) and the real-model conformity measurement compare.
    #[test]
    fn prompt_styles_wrap_the_same_peers_in_their_own_instruction() {
        let s = spec(2, 1);
        let mut t = Transcript::new(2, 1);
        respond(&s, &mut t, 0, 0, "Final answer: 7");
        respond(&s, &mut t, 0, 1, "Final answer: 9");
        let prompt = |style| {
            let Step::Round { calls, .. } = RoundTable::new("x", style, "free-mad").next(&s, &t)
            else {
                panic!()
            };
            (calls[0].template, calls[0].messages[3].content.clone())
        };
        let (n, neutral) = prompt(PromptStyle::Neutral);
        let (c, conform) = prompt(PromptStyle::Conformity);
        let (a, anti) = prompt(PromptStyle::AntiConformity);
        assert_eq!((n, c, a), ("neutral", "conformity", "anti-conformity"));
        let block = "[Agent 2's solution]\nFinal answer: 9\n[End of Agent 2's solution]";
        for p in [&neutral, &conform, &anti] {
            assert!(p.contains(block), "{p}");
        }
        assert!(!neutral.contains("additional information") && !neutral.contains("mistakes"));
        assert!(conform.contains("additional information"));
        assert!(anti.contains("look for mistakes"));
    }

    #[test]
    fn all_to_all_rounds_with_history() {
        let p = RoundTable::new("free-mad-n", PromptStyle::AntiConformity, "free-mad");
        let s = spec(3, 2);
        let mut t = Transcript::new(3, 2);
        for a in 0..3 {
            respond(
                &s,
                &mut t,
                0,
                a,
                &format!("I think {}.\nFinal answer: {}", 400 + a, 400 + a),
            );
        }
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 1);
        assert_eq!(calls[0].peers, vec![1, 2]);
        assert_eq!(calls[1].peers, vec![0, 2]);
        assert_eq!(calls[0].mode, CallMode::Critique);
        assert_eq!(
            roles(&calls[0]),
            vec![Role::System, Role::User, Role::Assistant, Role::User]
        );
        let last = &calls[0].messages[3].content;
        assert!(last.contains(
            "[Agent 2's solution]\nI think 401.\nFinal answer: 401\n[End of Agent 2's solution]"
        ));
        assert!(last.contains("Agent 3's solution"));
        assert!(
            !last.contains("Agent 1's solution"),
            "never shown its own response as a peer's"
        );
        assert!(last.contains("not evidence"));
        assert_eq!(calls[0].template, "anti-conformity");
        // Round 2: agent 1 missed round 1; its peers see only agents that answered.
        respond(&s, &mut t, 1, 0, "Final answer: 408");
        t.set(
            1,
            1,
            Outcome::Missing {
                reason: "timeout".into(),
            },
        );
        respond(&s, &mut t, 1, 2, "Final answer: 408");
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 2);
        assert_eq!(calls[0].peers, vec![2]);
        assert_eq!(
            roles(&calls[0]),
            vec![
                Role::System,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        // Agent 1's unanswered round-1 prompt is dropped, so turns alternate.
        assert_eq!(
            roles(&calls[1]),
            vec![Role::System, Role::User, Role::Assistant, Role::User]
        );
    }

    #[test]
    fn conformity_prompt_and_resume_plans_only_open_calls() {
        let p = RoundTable::new("som", PromptStyle::Conformity, "majority-last");
        let s = spec(3, 1);
        let mut t = Transcript::new(3, 1);
        respond(&s, &mut t, 0, 1, "Final answer: 1");
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 0);
        assert_eq!(
            calls.iter().map(|c| c.agent).collect::<Vec<_>>(),
            vec![0, 2]
        );
        respond(&s, &mut t, 0, 0, "Final answer: 1");
        respond(&s, &mut t, 0, 2, "Final answer: 2");
        let Step::Round { calls, .. } = p.next(&s, &t) else {
            panic!()
        };
        assert!(calls[0]
            .messages
            .last()
            .unwrap()
            .content
            .contains("additional information"));
    }

    #[test]
    fn agent_without_round0_answer_restarts_from_the_question() {
        let p = RoundTable::new("som", PromptStyle::Conformity, "majority-last");
        let s = spec(2, 1);
        let mut t = Transcript::new(2, 1);
        t.set(
            0,
            0,
            Outcome::Missing {
                reason: "error".into(),
            },
        );
        respond(&s, &mut t, 0, 1, "Final answer: 5");
        let Step::Round { calls, .. } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(roles(&calls[0]), vec![Role::System, Role::User]);
        assert!(calls[0].messages[1].content.contains("Solve the problem"));
        assert!(calls[0].messages[1].content.contains("Agent 2's solution"));
    }
}
