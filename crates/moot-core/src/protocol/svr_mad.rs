//! `svr-mad`: SVR-MAD (Algorithm 1, §4, appendix A).
//!
//! Round 0 gives every agent's pre-debate answer yᵢ and a prior signal. Each agent's correctness
//! score starts at its prior. Then, while budget remains: the receiver is the agent with the
//! highest score; its challengers are the top-S agents (by score) whose pre-debate answer differs
//! from the receiver's; each challenge is a pairwise debate — the receiver's own round-0
//! conversation followed by one challenger's pre-debate response — after which the receiver
//! either retains yᵣ or changes. The receiver's score becomes its survival rate
//! SVR = (retained − changed) / debates (posterior-dominant: the prior only counts before any
//! debate). A receiver whose SVR is 1 over at least C challengers is accepted and its answer is
//! final. The budget starts at B = S·(k + m) (k pre-debate answer clusters, m the largest
//! cluster's size) and loses S per iteration. Unanimous pre-debate answers skip the debate.
//!
//! Points the paper leaves open, decided here:
//! - Priors are mapped to [0, 1] so they compare with survival rates (which lie in [−1, 1]):
//!   `min-ll` → exp(min token log-likelihood), the probability of the least likely token; `ppl` →
//!   1 / perplexity; `confidence` → the stated confidence / 100 (asked for in round 0). A receiver
//!   that survived every challenge (SVR = 1) is therefore never outranked by an untested prior,
//!   and one that changed more often than it held (SVR < 0) always is. A missing signal is 0.
//! - A receiver never debates the same challenger twice; an agent left with no untried
//!   disagreeing peer cannot be chosen as receiver. When no agent can be, the debate ends.
//! - A challenge that got no response (deadline, error) costs its budget but is no evidence.
//!   A response without a readable answer counts as a change.
//! - Agents without a readable pre-debate answer neither receive nor challenge.
//! - Ties between scores go to the lower agent number.
//! - Faults: a cut-off receiver or a dropped message means the receiver re-answers without the
//!   challenger's response (recorded); delays do not apply, as challengers always send their
//!   pre-debate response.
//!
//! The `svr` decision rule replays the recorded challenges for acceptance, and otherwise takes
//! the paper's fallback vote (see `decision::svr`).

use std::collections::BTreeSet;

use super::challenge::{ChallengeNote, Prior};
use super::notes::{CallNotes, FaultNote};
use super::opening::{initial_call, initial_prompt, system_message};
use super::options::ProtocolOptions;
use super::plan::{PlannedCall, Protocol, ProtocolError, Step};
use crate::answer::Answer;
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use crate::decision::Evidence;
use crate::faults::{Delivery, Faults};
use crate::prompts;

pub(crate) const OPTIONS: &[&str] = &["prior", "challengers", "accept_after"];

pub const DEFAULT_CHALLENGERS: usize = 2;
pub const DEFAULT_ACCEPT_AFTER: usize = 2;

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let s = o.challengers.unwrap_or(DEFAULT_CHALLENGERS);
    let c = o.accept_after.unwrap_or(DEFAULT_ACCEPT_AFTER);
    if s == 0 || c == 0 {
        return Err(ProtocolError::Invalid(
            "challengers and accept_after must be at least 1".into(),
        ));
    }
    Ok(Box::new(SvrMad {
        challengers: s,
        accept_after: c,
        prior: o.prior.unwrap_or_default(),
        faults: o.faults.clone(),
    }))
}

#[derive(Debug, Clone)]
pub struct SvrMad {
    challengers: usize,
    accept_after: usize,
    prior: Prior,
    faults: Faults,
}

/// Self-reported confidence in [0, 1], from the last "Confidence: NN%" line.
pub fn parse_confidence(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let at = lower.rfind("confidence")?;
    let rest = &lower[at + "confidence".len()..];
    let digits: String = rest
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = digits.trim_end_matches('.').parse().ok()?;
    let value = if value > 1.0 { value / 100.0 } else { value };
    Some(value.clamp(0.0, 1.0))
}

/// One iteration of Algorithm 1's loop.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Iteration {
    pub number: usize,
    pub receiver: usize,
    pub challengers: Vec<usize>,
    pub receiver_score: f64,
    pub budget_left: usize,
}

/// Algorithm 1 replayed over the recorded challenges.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Replay {
    pub iterations: Vec<Iteration>,
    /// The first iteration with unrecorded challenges.
    pub pending: Option<Iteration>,
    pub accepted: Option<usize>,
    pub budget: usize,
    pub scores: Vec<f64>,
}

impl SvrMad {
    fn prior_of(&self, t: &Transcript, agent: usize) -> f64 {
        let o = t.get(0, agent);
        let value = match self.prior {
            Prior::MinLl => o.and_then(Outcome::logprobs).map(|l| l.min.exp()),
            Prior::Ppl => o
                .and_then(Outcome::logprobs)
                .map(|l| 1.0 / l.perplexity.max(1.0)),
            Prior::Confidence => o.and_then(Outcome::text).and_then(parse_confidence),
        };
        value.filter(|v| v.is_finite()).unwrap_or(0.0)
    }

    fn instruction(&self) -> Option<&'static str> {
        (self.prior == Prior::Confidence).then_some(prompts::CONFIDENCE)
    }

    pub(crate) fn replay(&self, t: &Transcript) -> Replay {
        let n = t.agents();
        let y: Vec<Option<&Answer>> = (0..n)
            .map(|a| t.get(0, a).and_then(Outcome::answer))
            .collect();
        let mut clusters: Vec<(&Answer, usize)> = Vec::new();
        for a in y.iter().flatten() {
            match clusters.iter_mut().find(|(c, _)| c.equivalent(a)) {
                Some((_, count)) => *count += 1,
                None => clusters.push((a, 1)),
            }
        }
        let k = clusters.len();
        let m = clusters.iter().map(|&(_, c)| c).max().unwrap_or(0);
        let mut replay = Replay {
            iterations: vec![],
            pending: None,
            accepted: None,
            budget: if k <= 1 {
                0
            } else {
                self.challengers * (k + m)
            },
            scores: (0..n).map(|a| self.prior_of(t, a)).collect(),
        };
        let disagree = |i: usize, j: usize| match (y[i], y[j]) {
            (Some(a), Some(b)) => !a.equivalent(b),
            _ => false,
        };
        let mut debated: BTreeSet<(usize, usize)> = BTreeSet::new();
        let (mut held, mut changed) = (vec![0usize; n], vec![0usize; n]);
        let mut number = 0;
        while replay.budget > 0 {
            number += 1;
            let untried = |r: usize, debated: &BTreeSet<(usize, usize)>| -> Vec<usize> {
                (0..n)
                    .filter(|&j| disagree(r, j) && !debated.contains(&(r, j)))
                    .collect()
            };
            let best = |candidates: &mut Vec<usize>, scores: &[f64]| {
                candidates.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
            };
            let mut receivers: Vec<usize> = (0..n)
                .filter(|&r| !untried(r, &debated).is_empty())
                .collect();
            best(&mut receivers, &replay.scores);
            let Some(&receiver) = receivers.first() else {
                break;
            };
            let mut challengers = untried(receiver, &debated);
            best(&mut challengers, &replay.scores);
            challengers.truncate(self.challengers);
            let iteration = Iteration {
                number,
                receiver,
                challengers: challengers.clone(),
                receiver_score: replay.scores[receiver],
                budget_left: replay.budget,
            };
            let outcomes: Vec<Option<&Outcome>> = challengers
                .iter()
                .map(|&s| t.get_call(&challenge_key(number, receiver, s)))
                .collect();
            if outcomes.iter().any(Option::is_none) {
                replay.pending = Some(iteration);
                break;
            }
            for (&s, outcome) in challengers.iter().zip(outcomes.into_iter().flatten()) {
                debated.insert((receiver, s));
                match outcome {
                    Outcome::Responded { answer, .. } => {
                        let kept =
                            matches!((answer, y[receiver]), (Some(a), Some(b)) if a.equivalent(b));
                        if kept {
                            held[receiver] += 1;
                        } else {
                            changed[receiver] += 1;
                        }
                    }
                    Outcome::Missing { .. } | Outcome::Skipped { .. } => {}
                }
            }
            let d = held[receiver] + changed[receiver];
            if d > 0 {
                replay.scores[receiver] =
                    (held[receiver] as f64 - changed[receiver] as f64) / d as f64;
            }
            replay.iterations.push(iteration);
            replay.budget = replay.budget.saturating_sub(self.challengers);
            if d >= self.accept_after && changed[receiver] == 0 {
                replay.accepted = Some(receiver);
                break;
            }
        }
        replay
    }

    fn challenge_call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        it: &Iteration,
        challenger: usize,
    ) -> PlannedCall {
        let receiver = it.receiver;
        let n = t.agents();
        let mut notes = CallNotes {
            challenge: Some(ChallengeNote {
                receiver,
                challenger,
                receiver_score: it.receiver_score,
                budget_left: it.budget_left,
            }),
            ..CallNotes::for_agent(spec, &self.faults, receiver)
        };
        let delivery = self
            .faults
            .deliver(spec.seed, n, it.number, challenger, receiver);
        let shown = match delivery {
            Delivery::CutOff | Delivery::Dropped => {
                notes.faults.push(FaultNote {
                    peer: challenger,
                    delivery,
                });
                None
            }
            _ => t.get(0, challenger).and_then(Outcome::text),
        };
        notes.ncomm = usize::from(shown.is_some());
        let peers_text = shown.map_or(
            "(the other agent's solution did not arrive)".to_string(),
            |text| prompts::peer_block(challenger, text),
        );
        let mut first = initial_prompt(spec);
        if let Some(extra) = self.instruction() {
            first.push(' ');
            first.push_str(extra);
        }
        let mut messages = vec![
            system_message(spec, &self.faults, receiver),
            ChatMessage::user(first),
        ];
        if let Some(text) = t.get(0, receiver).and_then(Outcome::text) {
            messages.push(ChatMessage::assistant(text));
        }
        messages.push(ChatMessage::user(prompts::render(
            prompts::CHALLENGE,
            &[
                ("peers", &peers_text),
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("format", prompts::format_instruction(spec.kind)),
            ],
        )));
        PlannedCall {
            round: it.number,
            agent: receiver,
            slot: Slot::Challenge(challenger),
            mode: CallMode::Critique,
            messages,
            peers: shown.map(|_| challenger).into_iter().collect(),
            template: "challenge",
            template_hash: prompts::template_hash(prompts::CHALLENGE),
            notes,
        }
    }
}

pub(crate) fn challenge_key(iteration: usize, receiver: usize, challenger: usize) -> CallKey {
    CallKey {
        round: iteration,
        agent: receiver,
        slot: Slot::Challenge(challenger),
    }
}

impl Protocol for SvrMad {
    fn name(&self) -> &'static str {
        "svr-mad"
    }

    fn default_rule(&self) -> &'static str {
        "svr"
    }

    /// Only round 0 is a round of the grid; challenges are extra calls numbered by iteration.
    fn shape(&self, agents: usize, _rounds: usize) -> (usize, usize) {
        (agents, 0)
    }

    fn needs_logprobs(&self) -> Option<&'static str> {
        match self.prior {
            Prior::MinLl => Some("svr-mad's min-ll prior reads the min token log-likelihood"),
            Prior::Ppl => Some("svr-mad's ppl prior reads the perplexity of the sampled tokens"),
            Prior::Confidence => None,
        }
    }

    fn evidence(&self, spec: &DebateSpec, t: &Transcript) -> Evidence {
        let mut e = Evidence::from_transcript(spec, t);
        e.accept_after = Some(self.accept_after);
        e
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        if let Some(round) = t.first_open_round() {
            let calls = t
                .open_agents(round)
                .into_iter()
                .map(|a| initial_call(spec, &self.faults, a, self.instruction()))
                .collect();
            return Step::Round { round, calls };
        }
        let replay = self.replay(t);
        match replay.pending {
            None => Step::Done,
            Some(it) => Step::Round {
                round: it.number,
                calls: it
                    .challengers
                    .iter()
                    .filter(|&&s| {
                        t.get_call(&challenge_key(it.number, it.receiver, s))
                            .is_none()
                    })
                    .map(|&s| self.challenge_call(spec, t, &it, s))
                    .collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_lines() {
        assert_eq!(
            parse_confidence("Confidence: 85%\nFinal answer: 3"),
            Some(0.85)
        );
        assert_eq!(parse_confidence("confidence 0.4"), Some(0.4));
        assert_eq!(parse_confidence("I am fairly sure."), None);
        assert_eq!(parse_confidence("Confidence: 150%"), Some(1.0));
    }
}
