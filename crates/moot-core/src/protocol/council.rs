//! `council`: answers, anonymous peer ranking, then a chairman (the peer-ranking pattern of "LLM
//! council" systems).
//!
//! Round 0: every member answers alone. Round 1: each member sees the other members' round-0
//! responses under anonymous labels (Response A, B, …, in an order drawn per member from the
//! debate seed, recorded in the call's notes), evaluates them, ranks them best first in a line
//! `Ranking: C > A > B`, and gives the answer it now holds (its round-1 cell). Then the chairman
//! sees every member's round-0 response under labels of its own (a separate seeded order), each
//! member's ranking translated into those labels, and the combined Borda ranking, and writes the
//! final answer. Rankings are read leniently: the last line naming `ranking`, labels in order,
//! unknown and repeated labels ignored; a member whose ranking cannot be read is listed as such.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::judged::{decider_call, Finale, Shown};
use super::notes::CallNotes;
use super::opening::{initial_call, system_message};
use super::plan::{PlannedCall, Protocol, ProtocolError, Step};
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{DebateSpec, Outcome, Slot, Transcript};
use crate::faults::Faults;
use crate::prompts;

/// Anonymous labels run from A to Z.
const MAX_SHOWN: usize = 26;
const SEED_SALT: u64 = 0x636f_756e_6369_6c00;

#[derive(Debug, Clone)]
pub struct Council {
    pub(crate) faults: Faults,
}

/// The order in which `reader` sees `agents` (a seeded shuffle per reader, so labels do not
/// follow agent order and differ between readers).
pub fn anonymous_order(seed: u64, reader: usize, agents: &[usize]) -> Vec<usize> {
    use rand::Rng;
    let mut order = agents.to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed ^ SEED_SALT ^ (reader as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    order
}

/// The labels of a ranking line, best first, as positions in the reader's order: the last line
/// that names `ranking`, read for single capital letters below `shown`; repeats are ignored.
pub fn read_ranking(text: &str, shown: usize) -> Option<Vec<usize>> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.to_ascii_lowercase().contains("ranking"))?;
    let after = line
        .to_ascii_lowercase()
        .find("ranking")
        .map(|i| &line[i + "ranking".len()..])?;
    let mut ranked = Vec::new();
    for token in after.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = token.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            continue;
        };
        if !c.is_ascii_uppercase() {
            continue;
        }
        let i = usize::from(c as u8 - b'A');
        if i < shown && !ranked.contains(&i) {
            ranked.push(i);
        }
    }
    (!ranked.is_empty()).then_some(ranked)
}

impl Council {
    /// Members (of `members`) with a round-0 response, other than `reader`.
    fn others(t: &Transcript, members: usize, reader: usize) -> Vec<usize> {
        (0..members)
            .filter(|&a| a != reader && t.get(0, a).and_then(Outcome::text).is_some())
            .collect()
    }

    fn blocks(t: &Transcript, order: &[usize]) -> String {
        order
            .iter()
            .enumerate()
            .filter_map(|(i, &a)| {
                t.get(0, a)
                    .and_then(Outcome::text)
                    .map(|text| prompts::response_block(prompts::response_label(i), text))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn rank_call(&self, spec: &DebateSpec, t: &Transcript, agent: usize) -> PlannedCall {
        let others = Self::others(t, t.agents(), agent);
        if others.is_empty() {
            return PlannedCall::skip(
                1,
                agent,
                "council: no other member answered in round 0, so there is nothing to rank".into(),
            );
        }
        let order = anonymous_order(spec.seed, agent, &others);
        let prompt = prompts::render(
            prompts::RANK,
            &[
                ("question", &spec.debater_question()),
                ("options", &prompts::options_block(&spec.choices)),
                ("format", prompts::format_instruction(spec.kind)),
                ("peers", &Self::blocks(t, &order)),
            ],
        );
        PlannedCall {
            round: 1,
            agent,
            slot: Slot::Answer,
            mode: CallMode::Critique,
            messages: vec![
                system_message(spec, &self.faults, agent),
                ChatMessage::user(prompt),
            ],
            peers: order.clone(),
            template: "rank",
            template_hash: prompts::template_hash(prompts::RANK),
            notes: CallNotes {
                ncomm: order.len(),
                anonymised: order,
                ..CallNotes::for_agent(spec, &self.faults, agent)
            },
        }
    }
}

impl Protocol for Council {
    fn name(&self) -> &'static str {
        "council"
    }

    fn default_rule(&self) -> &'static str {
        "verdict"
    }

    /// One ranking round, whatever was asked.
    fn shape(&self, agents: usize, _rounds: usize) -> (usize, usize) {
        (agents, 1)
    }

    fn validate(&self, spec: &DebateSpec) -> Result<(), ProtocolError> {
        if spec.agents.len() > MAX_SHOWN {
            return Err(ProtocolError::Invalid(format!(
                "council labels the members' responses A to Z, so it takes at most {MAX_SHOWN} members (it has {})",
                spec.agents.len()
            )));
        }
        Ok(())
    }

    fn next(&self, spec: &DebateSpec, t: &Transcript) -> Step {
        let Some(round) = t.first_open_round() else {
            return Step::Done;
        };
        let open = t.open_agents(round);
        let calls = if round == 0 {
            open.into_iter()
                .map(|a| initial_call(spec, &self.faults, a, None))
                .collect()
        } else {
            open.into_iter()
                .map(|a| self.rank_call(spec, t, a))
                .collect()
        };
        Step::Round { round, calls }
    }
}

impl Finale for Council {
    fn call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        debaters: usize,
        round: usize,
        agent: usize,
    ) -> Result<PlannedCall, String> {
        let answered: Vec<usize> = (0..debaters)
            .filter(|&a| t.get(0, a).and_then(Outcome::text).is_some())
            .collect();
        if answered.is_empty() {
            return Err("no member answered, so there is nothing to chair".into());
        }
        let order = anonymous_order(spec.seed, agent, &answered);
        let label_of = |member: usize| {
            order
                .iter()
                .position(|&a| a == member)
                .map(prompts::response_label)
        };
        // Borda: in a ranking of m responses, the best gets m points, the next m − 1, …
        let mut points = vec![0usize; order.len()];
        let mut lines = Vec::new();
        for member in 0..debaters {
            let Some(text) = t.get(1, member).and_then(Outcome::text) else {
                continue;
            };
            let seen = Self::others(t, debaters, member);
            let their_order = anonymous_order(spec.seed, member, &seen);
            let ranked: Vec<usize> = read_ranking(text, their_order.len())
                .unwrap_or_default()
                .into_iter()
                .map(|i| their_order[i])
                .collect();
            let number = member + 1;
            if ranked.is_empty() {
                lines.push(format!("Member {number}: (no readable ranking)"));
                continue;
            }
            let m = ranked.len();
            for (place, a) in ranked.iter().enumerate() {
                if let Some(i) = order.iter().position(|o| o == a) {
                    points[i] += m - place;
                }
            }
            let labels: Vec<String> = ranked
                .iter()
                .filter_map(|&a| label_of(a).map(String::from))
                .collect();
            lines.push(format!("Member {number}: {}", labels.join(" > ")));
        }
        let mut combined: Vec<usize> = (0..order.len()).collect();
        combined.sort_by_key(|&i| std::cmp::Reverse(points[i]));
        let combined_text = combined
            .iter()
            .map(|&i| format!("{} ({} points)", prompts::response_label(i), points[i]))
            .collect::<Vec<_>>()
            .join(" > ");
        let shown = Shown {
            text: Self::blocks(t, &order),
            peers: order.clone(),
            responses: order.len(),
        };
        // The rankings are read from the members' replies: untrusted, so rendered last.
        let rankings = lines.join("\n");
        let mut call = decider_call(
            spec,
            round,
            agent,
            ("chair", prompts::CHAIR),
            &[
                ("combined", &combined_text),
                ("peers", &shown.text),
                ("rankings", &rankings),
            ],
            &shown,
        );
        call.notes.anonymised = order;
        Ok(call)
    }
}
