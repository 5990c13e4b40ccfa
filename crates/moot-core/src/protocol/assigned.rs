//! `assigned` and `consultancy` (Khan et al., ICML 2024): debaters defend assigned answers and a
//! judge decides.
//!
//! Round 0 is the usual independent answer, kept private: it only decides the positions. The
//! candidates are the debaters' distinct round-0 answers, most held first (first given breaks a
//! tie), then — for a choice question — its other options in a seeded order, or — for a yes/no
//! question — the opposite answer. Under `assigned`, debater i defends candidate i (cycling when
//! there are more debaters than candidates). Under `consultancy` the one consultant defends,
//! with a seeded even chance, its own round-0 answer or one other candidate drawn at random —
//! the analogue of Khan et al.'s consultant assigned the right or the wrong answer half the
//! time, without reading the gold answer.
//!
//! When there is nothing to contest — round 0 was unanimous (or the consultant's answer is the
//! only candidate) and the item has no options and is not yes/no, or no debater gave a
//! readable answer — every debate round is recorded as skipped with that reason, the judge is
//! not asked, and the `verdict` rule falls back to the debaters' vote, their round-0 answer.
//!
//! Rounds 1..R are the argument: round 1 is opening statements (no one has argued yet), and each
//! later round shows every debater the previous round's arguments (its own among them; a
//! consultant sees its own case so far). The judge reads the positions and rounds 1..R — not the
//! round-0 answers, which would tell it what each debater really believed. moot's datasets give
//! the judge the question itself (Khan et al.'s QuALITY judges do not see the story), so this
//! is the protocol, not a reproduction of their result.
//!
//! Under the shared-first layout (`debate.layout`) an `assigned` debater's prompt starts with the
//! question and the previous round's arguments, which every debater reads alike, and ends with
//! its own part (who it is, its position); a consultant's is unchanged (it debates alone).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::judged::{decider_call, round_blocks, Finale, Shown};
use super::notes::CallNotes;
use super::opening::{initial_call, system_message};
use super::plan::{PlannedCall, Protocol, Step};
use crate::answer::{Answer, AnswerKind};
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{DebateSpec, Outcome, Slot, Transcript};
use crate::faults::Faults;
use crate::layout::Layout;
use crate::prompts;

/// Mixed into the debate seed for the seeded choices of this module, so they do not repeat
/// the draws of other seeded parts.
const SEED_SALT: u64 = 0x6173_7369_676e_6564;

#[derive(Debug, Clone)]
pub struct Assigned {
    /// One advocate (`consultancy`) rather than debaters on every side (`assigned`).
    pub(crate) consultancy: bool,
    pub(crate) faults: Faults,
}

impl Assigned {
    /// The answer each debater defends (by debater), or why nothing is contested. Reads the
    /// debaters' round-0 answers only.
    pub fn positions(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
    ) -> Result<Vec<Answer>, String> {
        let mut candidates: Vec<(Answer, usize)> = Vec::new();
        for a in 0..debaters {
            let Some(answer) = t.get(0, a).and_then(Outcome::answer) else {
                continue;
            };
            match candidates.iter_mut().find(|(c, _)| c.equivalent(answer)) {
                Some((_, n)) => *n += 1,
                None => candidates.push((answer.clone(), 1)),
            }
        }
        if candidates.is_empty() {
            return Err(
                "no debater gave a readable answer in round 0, so no position can be assigned"
                    .into(),
            );
        }
        // Stable: equally held answers stay in the order first given.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.1));
        let mut ordered: Vec<Answer> = candidates.into_iter().map(|(c, _)| c).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ SEED_SALT);
        for other in alternatives(spec, &mut rng) {
            if !ordered.iter().any(|c| c.equivalent(&other)) {
                ordered.push(other);
            }
        }
        if self.consultancy {
            let own = ordered[0].clone();
            if ordered.len() < 2 {
                return Ok(vec![own]);
            }
            let position = if rng.random_bool(0.5) {
                own
            } else {
                ordered[rng.random_range(1..ordered.len())].clone()
            };
            return Ok(vec![position]);
        }
        if ordered.len() < 2 {
            return Err(format!(
                "round 0 was unanimous ({}) and the question offers no other answer, so there is nothing to contest",
                ordered[0].canonical()
            ));
        }
        Ok((0..debaters)
            .map(|i| ordered[i % ordered.len()].clone())
            .collect())
    }

    /// Debater `agent`'s call in argument round `round` (≥ 1), defending `position`.
    fn argue(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
        position: &Answer,
    ) -> PlannedCall {
        let debaters = t.agents();
        let (blocks, shown) = if round == 1 {
            (Vec::new(), Vec::new())
        } else if self.consultancy {
            round_blocks(t, debaters.min(agent + 1), round - 1)
        } else {
            round_blocks(t, debaters, round - 1)
        };
        let peers_text = if blocks.is_empty() {
            if self.consultancy {
                "(none yet: this is your opening statement)".to_string()
            } else {
                "(none yet: this is the round of opening statements)".to_string()
            }
        } else {
            blocks.join("\n\n")
        };
        let shared_first = !self.consultancy && spec.layout == Layout::SharedFirst;
        let (name, template) = if self.consultancy {
            ("consult-argue", prompts::CONSULT_ARGUE)
        } else if shared_first {
            (
                "assigned-argue/shared-first",
                prompts::ASSIGNED_ARGUE_SHARED_FIRST,
            )
        } else {
            ("assigned-argue", prompts::ASSIGNED_ARGUE)
        };
        let agent_number = (agent + 1).to_string();
        let vars = [
            ("agent", agent_number.as_str()),
            ("position", position.canonical()),
            ("question", &spec.debater_question()),
            ("options", &prompts::options_block(&spec.choices)),
            ("format", prompts::format_instruction(spec.kind)),
            ("peers", &peers_text),
        ];
        let prompt = prompts::render(template, &vars);
        let others: Vec<usize> = shown.iter().copied().filter(|&p| p != agent).collect();
        PlannedCall {
            round,
            agent,
            slot: Slot::Answer,
            mode: CallMode::Critique,
            messages: vec![
                system_message(spec, &self.faults, agent),
                ChatMessage::user(prompt),
            ],
            peers: others.clone(),
            template: name,
            template_hash: prompts::template_hash(template),
            notes: CallNotes {
                ncomm: others.len(),
                position: Some(position.canonical().to_string()),
                ..CallNotes::for_agent(spec, &self.faults, agent)
            },
        }
    }
}

/// The answers a question offers besides those given: its options (choice questions, in a
/// seeded order), or both yes and no.
fn alternatives(spec: &DebateSpec, rng: &mut ChaCha8Rng) -> Vec<Answer> {
    let ctx = spec.extract_context();
    match spec.kind {
        AnswerKind::Choice => {
            let mut letters: Vec<Answer> = (0..spec.choices.len())
                .filter_map(|i| {
                    Answer::parse(
                        AnswerKind::Choice,
                        &prompts::response_label(i).to_string(),
                        &ctx,
                    )
                })
                .collect();
            // Fisher–Yates with the module's seeded generator.
            for i in (1..letters.len()).rev() {
                letters.swap(i, rng.random_range(0..=i));
            }
            letters
        }
        AnswerKind::YesNo => ["yes", "no"]
            .iter()
            .filter_map(|s| Answer::parse(AnswerKind::YesNo, s, &ctx))
            .collect(),
        _ => Vec::new(),
    }
}

impl Protocol for Assigned {
    fn name(&self) -> &'static str {
        if self.consultancy {
            "consultancy"
        } else {
            "assigned"
        }
    }

    fn default_rule(&self) -> &'static str {
        "verdict"
    }

    /// At least one argument round; one consultant under `consultancy`.
    fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
        (
            if self.consultancy {
                agents.min(1)
            } else {
                agents
            },
            rounds.max(1),
        )
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        let Some(round) = t.first_open_round() else {
            return Step::Done;
        };
        let open = t.open_agents(round);
        if round == 0 {
            let calls = open
                .into_iter()
                .map(|a| initial_call(spec, &self.faults, a, None))
                .collect();
            return Step::Round { round, calls };
        }
        let calls = match self.positions(spec, t, t.agents()) {
            Ok(positions) => open
                .into_iter()
                .map(|a| self.argue(spec, t, round, a, &positions[a]))
                .collect(),
            Err(why) => open
                .into_iter()
                .map(|a| {
                    PlannedCall::skip(
                        round,
                        a,
                        format!("{}: {why}; the vote decides", self.name()),
                    )
                })
                .collect(),
        };
        Step::Round { round, calls }
    }
}

impl Finale for Assigned {
    fn call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
        agent: usize,
    ) -> Result<PlannedCall, String> {
        let inner = t.first_agents(debaters);
        let positions = self.positions(spec, &inner, debaters)?;
        let described: Vec<String> = positions
            .iter()
            .enumerate()
            .map(|(a, p)| {
                if self.consultancy {
                    format!("the consultant (Agent {}) argues for {}, and may have been assigned a wrong answer.", a + 1, p.canonical())
                } else {
                    format!("Agent {} defends {}", a + 1, p.canonical())
                }
            })
            .collect();
        let shown = Shown::rounds(t, debaters, 1..=round)
            .ok_or("no debater argued, so there is nothing to judge")?;
        let positions_text = if self.consultancy {
            described.join(" ")
        } else {
            format!("{}.", described.join("; "))
        };
        Ok(decider_call(
            spec,
            round,
            agent,
            ("judge-assigned", prompts::JUDGE_ASSIGNED),
            &[("positions", &positions_text), ("debate", &shown.text)],
            &shown,
        ))
    }
}
