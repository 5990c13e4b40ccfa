//! The field's controls, computed from a benchmark's stored debates (nothing is run): what a
//! reader needs to tell whether debate did more than vote.
//!
//! - **Round-0 vote against the decision** (per protocol): the plurality of the debaters'
//!   round-0 answers — what the same agents would have answered without any debate — against
//!   the protocol's final decision, paired item by item (exact McNemar test). Protocols without
//!   a debate round (`cot`, `cot-sc`) have nothing to compare: their decision is that vote.
//! - **Martingale check** (Choi et al. 2025, "Debate or Vote"): per debate round r, the mean over
//!   items of the change, from round r − 1 to r, in the share of debaters holding the gold
//!   answer, with a 95% Student t-interval over the items. On each item only the debaters that
//!   responded in both rounds count (a response without a readable answer does not hold the
//!   gold; a call the protocol skipped keeps the agent's previous answer, as the decision rules
//!   read it); an item where none did is left out of that round and counted.
//! - **Flips per agent and per team mix**: right→wrong and wrong→right answers between
//!   consecutive rounds (both answered) and from each agent's round-0 answer to its last one,
//!   per agent (its id and model) and per team mix (the multiset of the debaters' models).
//! - **Self-consistency at each debate's token budget**, when the report has a `cot-sc` arm:
//!   the plurality of its first k samples, k the most whose mean tokens per item fit the
//!   debate's, against the debate (paired). When the budget pays for more samples than the arm
//!   stored, the row says so and how many it would pay for; nothing is extrapolated.
//!
//! Judges, aggregators and chairmen answer once, in the last round (`Missing` before it): they
//! are left out of the vote, the martingale check and the flips, and their answer stays part of
//! the final decision as the protocol's rule made it.

use moot_core::debate::AgentSpec;
use moot_core::{Answer, Trajectory};
use serde::Serialize;

use crate::bench::ItemResult;
use crate::item::Item;
use crate::protocol_totals::{mean_t_interval, plurality, PairTally};

/// Every control of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Controls {
    /// Per protocol, in report order.
    pub vote_vs_decision: Vec<VoteVsDecision>,
    /// Per protocol, in report order.
    pub martingale: Vec<Martingale>,
    /// Per protocol with a debate round, in report order.
    pub flips: Vec<ProtocolFlips>,
    /// Per debate protocol and `cot-sc` arm.
    pub self_consistency: Vec<ScAtBudget>,
}

/// A protocol's round-0 vote against its decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VoteVsDecision {
    pub protocol: String,
    /// `None` when the protocol ran no debate round (its decision is its round-0 vote).
    pub paired: Option<VotePaired>,
}

/// The round-0 plurality of the debaters and the decision, item by item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VotePaired {
    pub items: usize,
    pub vote_correct: usize,
    pub vote_accuracy: f64,
    pub decision_correct: usize,
    pub decision_accuracy: f64,
    pub both_correct: usize,
    pub only_vote: usize,
    pub only_decision: usize,
    pub both_wrong: usize,
    /// Exact two-sided McNemar p-value of `only_vote` against `only_decision`.
    pub p_value: f64,
}

/// A protocol's martingale check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Martingale {
    pub protocol: String,
    /// One per debate round (1, 2, …); empty when the protocol ran none.
    pub rounds: Vec<MartingaleRound>,
}

/// The change in the share of debaters holding the gold answer from round `round − 1` to
/// `round`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MartingaleRound {
    pub round: usize,
    /// Items counted (n): those with a debater that responded in both rounds.
    pub items: usize,
    /// Items whose debate has the round but no debater that responded in both: left out.
    pub left_out: usize,
    /// Mean change over the items counted (`None` when none was).
    pub mean: Option<f64>,
    /// 95% Student t-interval of the mean (`None` below two items).
    pub ci95: Option<(f64, f64)>,
}

/// How often answers turned right or wrong.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FlipCounts {
    /// Pairs of consecutive rounds in which the agent responded both times.
    pub transitions: usize,
    pub right_to_wrong: usize,
    pub wrong_to_right: usize,
    /// Debates in which the agent responded in round 0 and in a later round: its round-0 answer
    /// against its answer in the last round it responded in.
    pub first_to_last: usize,
    pub first_to_last_right_to_wrong: usize,
    pub first_to_last_wrong_to_right: usize,
}

impl FlipCounts {
    /// The counts as the flips tables' last five cells, `a | b | c | d | e`.
    fn cells(&self) -> String {
        format!(
            "{} | {} | {} | {} | {}",
            self.right_to_wrong,
            self.wrong_to_right,
            self.transitions,
            self.first_to_last_right_to_wrong,
            self.first_to_last_wrong_to_right
        )
    }

    fn add(&mut self, other: FlipCounts) {
        self.transitions += other.transitions;
        self.right_to_wrong += other.right_to_wrong;
        self.wrong_to_right += other.wrong_to_right;
        self.first_to_last += other.first_to_last;
        self.first_to_last_right_to_wrong += other.first_to_last_right_to_wrong;
        self.first_to_last_wrong_to_right += other.first_to_last_wrong_to_right;
    }
}

/// A protocol's flips by agent and by team mix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolFlips {
    pub protocol: String,
    /// In the order agents first appear.
    pub by_agent: Vec<AgentFlips>,
    /// In the order mixes first appear.
    pub by_mix: Vec<MixFlips>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentFlips {
    pub agent: String,
    /// Its model as the stored calls name it (see [`model_of`]).
    pub model: String,
    pub debates: usize,
    pub flips: FlipCounts,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixFlips {
    /// The debaters' models with their counts, most common first: `qwen×2 + smol×1`.
    pub mix: String,
    pub debates: usize,
    /// The protocol's decision on these debates.
    pub decision_correct: usize,
    pub decision_accuracy: f64,
    /// Every debater's flips summed.
    pub flips: FlipCounts,
}

/// Self-consistency at a debate protocol's token budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScAtBudget {
    /// The debate protocol.
    pub protocol: String,
    /// Its mean tokens per item (input and output, cache hits included), as the budget table's.
    pub budget: f64,
    /// The self-consistency arm (a `cot-sc` protocol of the report).
    pub self_consistency: String,
    /// Most samples an item of the arm has.
    pub samples_stored: usize,
    /// k: the most samples whose mean tokens per item (the first k of every item) fit the
    /// budget; 0 when one already costs more.
    pub samples: usize,
    /// Mean tokens per item of the first `samples` samples.
    pub tokens: f64,
    /// Samples the budget pays for at the stored samples' mean cost.
    pub samples_affordable: usize,
    /// The budget pays for more samples than the arm stored: `samples` is all of them, and the
    /// vote below is self-consistency short of the budget, not at it.
    pub short: bool,
    /// The vote of the first k samples against the debate's decision, on the items both ran;
    /// `None` when k is 0.
    pub paired: Option<ScPaired>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScPaired {
    pub items: usize,
    pub sc_correct: usize,
    pub sc_accuracy: f64,
    pub protocol_correct: usize,
    pub protocol_accuracy: f64,
    pub both_correct: usize,
    pub only_sc: usize,
    pub only_protocol: usize,
    pub both_wrong: usize,
    /// Exact two-sided McNemar p-value.
    pub p_value: f64,
}

/// One debate as the controls read it.
struct Debate<'a> {
    result: &'a ItemResult,
    item: &'a Item,
    gold: Option<Answer>,
    /// The debaters' answers round by round; for a protocol of pairwise challenges (SVR-MAD),
    /// one column per challenge iteration after round 0, in which the receiver holds what its
    /// challenges left it with and every other agent keeps its answer ([`with_challenges`]).
    trajectory: Trajectory,
    /// Trajectory rows of the debaters.
    debaters: Vec<usize>,
    /// Whether anything but the debaters' round-0 answers was asked: a later round, a
    /// challenge, a judgement, a judge's or aggregator's call. Without one, the decision is by
    /// construction the round-0 vote, and the controls that compare with it do not apply.
    beyond_round0: bool,
}

impl Debate<'_> {
    fn right(&self, answer: Option<&Answer>) -> bool {
        self.result.grade(self.item, self.gold.as_ref(), answer)
    }

    fn decision_right(&self) -> bool {
        self.result.correct(self.item)
    }

    fn has_debate_round(&self) -> bool {
        self.beyond_round0
    }

    fn round0_vote_right(&self) -> bool {
        self.right(plurality(&self.trajectory, Some(&self.debaters), 0).as_ref())
    }
}

/// Whether trajectory row `row` is a debater's (rows the spec does not name count as debaters,
/// as agents stored before roles existed do).
fn is_debater(agents: &[AgentSpec], row: usize) -> bool {
    agents.get(row).is_none_or(|a| a.role.is_debater())
}

/// The debates of `protocol` (its label) that have a trajectory and an item, in result order.
fn debates_of<'a>(results: &'a [ItemResult], items: &'a [Item], protocol: &str) -> Vec<Debate<'a>> {
    results
        .iter()
        .filter(|r| r.protocol == protocol)
        .filter_map(|r| {
            let item = items.iter().find(|i| i.id == r.item_id)?;
            let transcript = &r.result.transcript;
            let trajectory = with_challenges(&transcript.trajectory()?, transcript);
            let debaters = (0..trajectory.agents())
                .filter(|&row| is_debater(&r.agents, row))
                .collect();
            let beyond_round0 = r.result.records.iter().any(|c| {
                !c.skipped
                    && (c.round > 0
                        || c.slot != "answer"
                        || !is_debater(&r.agents, c.agent as usize))
            });
            Some(Debate {
                result: r,
                item,
                gold: item.gold_answer(),
                trajectory,
                debaters,
                beyond_round0,
            })
        })
        .collect()
}

/// `trajectory` with a column for each round of challenges (SVR-MAD's iterations: a receiver
/// debating its challengers one by one): the receiver holds the answer of its last challenge
/// that got a response that round (an unreadable one holds no answer: the protocol counts it
/// as a change), and every other agent keeps its answer. A challenge without a response is no
/// evidence and changes nothing. Without challenges, `trajectory` as it is.
fn with_challenges(
    trajectory: &Trajectory,
    transcript: &moot_core::debate::Transcript,
) -> Trajectory {
    use moot_core::debate::{Outcome, Slot};
    use moot_core::trajectory::Cell;
    let challenges: Vec<(usize, usize, &Outcome)> = transcript
        .extra_calls()
        .filter(|(k, _)| matches!(k.slot, Slot::Challenge(_)))
        .map(|(k, o)| (k.round, k.agent, o))
        .collect();
    if challenges.is_empty() || trajectory.agents() == 0 {
        return trajectory.clone();
    }
    let mut rounds: Vec<usize> = challenges.iter().map(|(r, _, _)| *r).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let mut rows: Vec<Vec<Cell>> = (0..trajectory.agents())
        .map(|a| {
            (0..trajectory.rounds())
                .map(|r| trajectory.cell(a, r).clone())
                .collect()
        })
        .collect();
    for round in rounds {
        for (a, row) in rows.iter_mut().enumerate() {
            let mut held = row.last().cloned().unwrap_or(Cell::Missing);
            for (_, _, outcome) in challenges
                .iter()
                .filter(|(r, receiver, _)| *r == round && *receiver == a)
            {
                if let Outcome::Responded { answer, .. } = outcome {
                    held = Cell::Answered(answer.clone());
                }
            }
            row.push(held);
        }
    }
    Trajectory::new(rows).unwrap_or_else(|_| trajectory.clone())
}

/// Protocol labels in the order they first appear.
fn protocols(results: &[ItemResult]) -> Vec<&str> {
    let mut order: Vec<&str> = Vec::new();
    for r in results {
        if !order.contains(&r.protocol.as_str()) {
            order.push(&r.protocol);
        }
    }
    order
}

impl Controls {
    /// The controls of `results` (protocol labels as given) on `items`.
    pub fn new(results: &[ItemResult], items: &[Item]) -> Controls {
        let mut controls = Controls::default();
        let arms: Vec<(&str, Vec<Debate>)> = protocols(results)
            .into_iter()
            .map(|p| (p, debates_of(results, items, p)))
            .collect();
        for (protocol, debates) in &arms {
            let debating = debates.iter().any(Debate::has_debate_round);
            controls.vote_vs_decision.push(VoteVsDecision {
                protocol: protocol.to_string(),
                paired: debating.then(|| vote_vs_decision(debates)),
            });
            controls.martingale.push(Martingale {
                protocol: protocol.to_string(),
                rounds: if debating {
                    martingale(debates)
                } else {
                    Vec::new()
                },
            });
            if debating {
                controls.flips.push(flips(protocol, debates));
            }
        }
        // Self-consistency arms by what they ran, whatever their label in a combined report.
        let sc_arms: Vec<&(&str, Vec<Debate>)> = arms
            .iter()
            .filter(|(_, debates)| debates.iter().any(|d| d.result.protocol_name == "cot-sc"))
            .collect();
        for (protocol, debates) in &arms {
            if !debates.iter().any(Debate::has_debate_round) {
                continue;
            }
            for (arm, samples) in &sc_arms {
                controls
                    .self_consistency
                    .push(sc_at_budget(protocol, debates, arm, samples));
            }
        }
        controls
    }
}

fn vote_vs_decision(debates: &[Debate]) -> VotePaired {
    let t = PairTally::of(
        debates
            .iter()
            .map(|d| (d.round0_vote_right(), d.decision_right())),
    );
    VotePaired {
        items: debates.len(),
        vote_correct: t.first_correct(),
        vote_accuracy: t.share(t.first_correct()),
        decision_correct: t.second_correct(),
        decision_accuracy: t.share(t.second_correct()),
        both_correct: t.both,
        only_vote: t.only_first,
        only_decision: t.only_second,
        both_wrong: t.neither,
        p_value: t.p_value(),
    }
}

fn martingale(debates: &[Debate]) -> Vec<MartingaleRound> {
    let rounds = debates
        .iter()
        .map(|d| d.trajectory.rounds())
        .max()
        .unwrap_or(0);
    (1..rounds)
        .map(|round| {
            let mut changes = Vec::new();
            let mut left_out = 0;
            for d in debates.iter().filter(|d| d.trajectory.rounds() > round) {
                let t = &d.trajectory;
                let both: Vec<usize> = d
                    .debaters
                    .iter()
                    .copied()
                    .filter(|&a| t.cell(a, round - 1).responded() && t.cell(a, round).responded())
                    .collect();
                if both.is_empty() {
                    left_out += 1;
                    continue;
                }
                let share = |r: usize| {
                    both.iter()
                        .filter(|&&a| d.right(t.cell(a, r).answer()))
                        .count() as f64
                        / both.len() as f64
                };
                changes.push(share(round) - share(round - 1));
            }
            let stats = mean_t_interval(&changes);
            MartingaleRound {
                round,
                items: changes.len(),
                left_out,
                mean: stats.map(|(mean, _)| mean),
                ci95: stats.and_then(|(_, ci)| ci),
            }
        })
        .collect()
}

/// One debater's flips in one debate.
fn agent_flips(d: &Debate, agent: usize) -> FlipCounts {
    let t = &d.trajectory;
    let mut counts = FlipCounts::default();
    for round in 1..t.rounds() {
        let (before, after) = (t.cell(agent, round - 1), t.cell(agent, round));
        if !(before.responded() && after.responded()) {
            continue;
        }
        counts.transitions += 1;
        match (d.right(before.answer()), d.right(after.answer())) {
            (true, false) => counts.right_to_wrong += 1,
            (false, true) => counts.wrong_to_right += 1,
            _ => {}
        }
    }
    let first = t.cell(agent, 0);
    let last = (1..t.rounds())
        .rev()
        .map(|r| t.cell(agent, r))
        .find(|c| c.responded());
    if let (true, Some(last)) = (first.responded(), last) {
        counts.first_to_last += 1;
        match (d.right(first.answer()), d.right(last.answer())) {
            (true, false) => counts.first_to_last_right_to_wrong += 1,
            (false, true) => counts.first_to_last_wrong_to_right += 1,
            _ => {}
        }
    }
    counts
}

/// The model agent `row` ran on in `result`, as its stored calls name their backend: the
/// backend's name without its endpoint (`openai:qwen2.5-7b@http://h/v1` → `openai:qwen2.5-7b`:
/// where a model is served does not change which it is). An agent whose calls name several
/// (its backend swapped mid-debate) is all of them in order (`a → b`); one with no call is
/// `unknown`.
pub fn model_of(result: &ItemResult, row: usize) -> String {
    let mut calls: Vec<&moot_store::CallRecord> = result
        .result
        .records
        .iter()
        .filter(|c| c.agent as usize == row)
        .collect();
    calls.sort_by_key(|c| c.round);
    let mut models: Vec<&str> = Vec::new();
    for c in calls {
        let model = c.backend.split('@').next().unwrap_or(&c.backend);
        if models.last() != Some(&model) {
            models.push(model);
        }
    }
    if models.is_empty() {
        "unknown".into()
    } else {
        models.join(" → ")
    }
}

/// A team mix's label: each model with its count, most common first, then by name.
pub fn mix_label(models: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for m in models {
        match counts.iter_mut().find(|(name, _)| *name == m.as_str()) {
            Some((_, n)) => *n += 1,
            None => counts.push((m, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    counts
        .iter()
        .map(|(m, n)| format!("{m}×{n}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn flips(protocol: &str, debates: &[Debate]) -> ProtocolFlips {
    let mut by_agent: Vec<AgentFlips> = Vec::new();
    let mut by_mix: Vec<MixFlips> = Vec::new();
    for d in debates {
        let mut models = Vec::new();
        let mut team = FlipCounts::default();
        for &row in &d.debaters {
            let id = d
                .result
                .agents
                .get(row)
                .map_or_else(|| format!("agent {row}"), |a| a.id.clone());
            let model = model_of(d.result, row);
            let counts = agent_flips(d, row);
            team.add(counts);
            match by_agent
                .iter_mut()
                .find(|a| a.agent == id && a.model == model)
            {
                Some(a) => {
                    a.debates += 1;
                    a.flips.add(counts);
                }
                None => by_agent.push(AgentFlips {
                    agent: id,
                    model: model.clone(),
                    debates: 1,
                    flips: counts,
                }),
            }
            models.push(model);
        }
        let mix = mix_label(&models);
        let right = usize::from(d.decision_right());
        match by_mix.iter_mut().find(|m| m.mix == mix) {
            Some(m) => {
                m.debates += 1;
                m.decision_correct += right;
                m.flips.add(team);
            }
            None => by_mix.push(MixFlips {
                mix,
                debates: 1,
                decision_correct: right,
                decision_accuracy: 0.0,
                flips: team,
            }),
        }
    }
    for m in &mut by_mix {
        m.decision_accuracy = m.decision_correct as f64 / m.debates.max(1) as f64;
    }
    ProtocolFlips {
        protocol: protocol.to_string(),
        by_agent,
        by_mix,
    }
}

/// Tokens (input and output, cache hits included) of every call of agent `row`.
fn sample_tokens(result: &ItemResult, row: usize) -> u64 {
    moot_core::chat::total_tokens(
        result
            .result
            .records
            .iter()
            .filter(|c| c.agent as usize == row)
            .flat_map(|c| [c.input_tokens, c.output_tokens]),
    )
}

fn mean_tokens(debates: &[Debate]) -> f64 {
    let total: u64 = moot_core::chat::total_tokens(debates.iter().map(|d| {
        let u = d.result.result.usage();
        u.input_tokens.saturating_add(u.output_tokens)
    }));
    total as f64 / debates.len().max(1) as f64
}

fn sc_at_budget(protocol: &str, debates: &[Debate], arm: &str, samples: &[Debate]) -> ScAtBudget {
    let budget = mean_tokens(debates);
    let stored = samples.iter().map(|d| d.debaters.len()).max().unwrap_or(0);
    // Mean tokens per item of each item's first k samples, k = 0..=stored.
    let cost = |k: usize| -> f64 {
        let total: u64 = moot_core::chat::total_tokens(samples.iter().map(|d| {
            moot_core::chat::total_tokens(
                d.debaters
                    .iter()
                    .take(k)
                    .map(|&row| sample_tokens(d.result, row)),
            )
        }));
        total as f64 / samples.len().max(1) as f64
    };
    // Half a token of slack, as the budget table allows: means of whole tokens.
    let k = (1..=stored)
        .take_while(|&k| cost(k) <= budget + 0.5)
        .last()
        .unwrap_or(0);
    let per_sample = cost(stored) / stored.max(1) as f64;
    let affordable = if per_sample > 0.0 {
        ((budget + 0.5) / per_sample).floor() as usize
    } else {
        stored
    };
    let paired = (k > 0).then(|| {
        let t = PairTally::of(samples.iter().filter_map(|s| {
            let d = debates.iter().find(|d| d.item.id == s.item.id)?;
            let first_k: Vec<usize> = s.debaters.iter().copied().take(k).collect();
            let sc = s.right(plurality(&s.trajectory, Some(&first_k), 0).as_ref());
            Some((sc, d.decision_right()))
        }));
        ScPaired {
            items: t.items(),
            sc_correct: t.first_correct(),
            sc_accuracy: t.share(t.first_correct()),
            protocol_correct: t.second_correct(),
            protocol_accuracy: t.share(t.second_correct()),
            both_correct: t.both,
            only_sc: t.only_first,
            only_protocol: t.only_second,
            both_wrong: t.neither,
            p_value: t.p_value(),
        }
    });
    ScAtBudget {
        protocol: protocol.to_string(),
        budget,
        self_consistency: arm.to_string(),
        samples_stored: stored,
        samples: k,
        tokens: cost(k),
        samples_affordable: affordable,
        short: k == stored && affordable > stored,
        paired,
    }
}

/// What a self-consistency arm needs to spend a benchmark's costliest debate budget
/// (`moot bench --sc-at-budget`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplesForBudget {
    /// The costliest protocol with a debate round, and its mean tokens per item.
    pub protocol: String,
    pub budget: f64,
    /// Mean tokens of one sample: a cot-sc arm's samples when the benchmark has one, else the
    /// debaters' round-0 answers (the same first call a cot-sc sample makes).
    pub per_sample: f64,
    /// ⌈1.1 × budget / per_sample⌉: a tenth more than the estimate, so that samples costing a
    /// little less than it do not leave the arm short of the budget (the report then uses
    /// the most that fit).
    pub samples: usize,
}

/// Samples above which the estimate is not taken as a team size: far past any team moot runs
/// (its size checks refuse teams much smaller).
const MAX_ESTIMATED_SAMPLES: f64 = 1_000_000.0;

/// How many samples a cot-sc arm needs for the costliest debate of `results`; `None` when no
/// protocol ran a debate round or no sample has a cost.
pub fn samples_for_budget(results: &[ItemResult], items: &[Item]) -> Option<SamplesForBudget> {
    let arms: Vec<(&str, Vec<Debate>)> = protocols(results)
        .into_iter()
        .map(|p| (p, debates_of(results, items, p)))
        .collect();
    let (protocol, budget) = arms
        .iter()
        .filter(|(_, debates)| debates.iter().any(Debate::has_debate_round))
        .map(|(p, debates)| (*p, mean_tokens(debates)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let sc: Vec<u64> = arms
        .iter()
        .flat_map(|(_, debates)| debates)
        .filter(|d| d.result.protocol_name == "cot-sc")
        .flat_map(|d| d.debaters.iter().map(|&row| sample_tokens(d.result, row)))
        .collect();
    let samples = if sc.is_empty() {
        arms.iter()
            .flat_map(|(_, debates)| debates)
            .filter(|d| d.has_debate_round())
            .flat_map(|d| {
                d.debaters.iter().map(|&row| {
                    moot_core::chat::total_tokens(
                        d.result
                            .result
                            .records
                            .iter()
                            .filter(|c| c.agent as usize == row && c.round == 0)
                            .filter(|c| {
                                moot_engine::key_of(c)
                                    .is_some_and(|k| k.slot == moot_core::debate::Slot::Answer)
                            })
                            .flat_map(|c| [c.input_tokens, c.output_tokens]),
                    )
                })
            })
            .collect()
    } else {
        sc
    };
    let per_sample =
        moot_core::chat::total_tokens(samples.iter().copied()) as f64 / samples.len().max(1) as f64;
    if per_sample <= 0.0 {
        return None;
    }
    let estimate = (1.1 * budget / per_sample)
        .ceil()
        .clamp(1.0, MAX_ESTIMATED_SAMPLES);
    Some(SamplesForBudget {
        protocol: protocol.to_string(),
        budget,
        per_sample,
        samples: estimate as usize,
    })
}

impl Controls {
    /// The controls as Markdown paragraphs and tables, for the report (empty when the report has
    /// no protocol).
    pub fn markdown(&self) -> String {
        // Labels and model names come from the user or the store: text, never markup.
        let md = moot_core::escape::markdown_inline;
        let mut out = String::new();
        if self.vote_vs_decision.is_empty() {
            return out;
        }
        if self.vote_vs_decision.iter().all(|v| v.paired.is_none()) {
            out.push_str("\nControls: no protocol ran a debate round, so there is no debate to compare with its own vote, no change of answers to follow and no debate budget to spend on self-consistency.\n");
            return out;
        }
        out.push_str("\nDid the debate beat its own vote? The plurality of the debaters' round-0 answers (the same agents, no debate) against the protocol's decision, item by item (exact McNemar test on the discordant items):\n\n| protocol | items | round-0 vote | decision | only the vote right | only the decision right | McNemar p |\n|---|---|---|---|---|---|---|\n");
        for v in &self.vote_vs_decision {
            match &v.paired {
                Some(p) => out.push_str(&format!(
                    "| {} | {} | {}/{} = {:.3} | {}/{} = {:.3} | {} | {} | {:.4} |\n",
                    md(&v.protocol),
                    p.items,
                    p.vote_correct,
                    p.items,
                    p.vote_accuracy,
                    p.decision_correct,
                    p.items,
                    p.decision_accuracy,
                    p.only_vote,
                    p.only_decision,
                    p.p_value
                )),
                None => out.push_str(&format!(
                    "| {} | not applicable: no debate round (its decision is its round-0 vote) | – | – | – | – | – |\n",
                    md(&v.protocol)
                )),
            }
        }
        out.push_str("\nMartingale check (Choi et al. 2025 model debate as a martingale: it should not move the expected share of agents holding the gold answer, so the mean change should be about 0): per debate round, the mean over items of the change since the round before in the share of debaters holding the gold answer, counting on each item the debaters that responded in both rounds, with a 95% t-interval; items where none did are left out:\n\n| protocol | round | items | mean change | 95% CI | left out |\n|---|---|---|---|---|---|\n");
        for m in &self.martingale {
            if m.rounds.is_empty() {
                out.push_str(&format!(
                    "| {} | – | not applicable: no debate round | – | – | – |\n",
                    md(&m.protocol)
                ));
            }
            for r in &m.rounds {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    md(&m.protocol),
                    r.round,
                    r.items,
                    r.mean.map_or("–".into(), |x| format!("{x:+.4}")),
                    r.ci95
                        .map_or("–".into(), |(lo, hi)| format!("{lo:+.4} to {hi:+.4}")),
                    r.left_out
                ));
            }
        }
        out.push_str("\nFlips by agent (debaters only): right→wrong and wrong→right between consecutive rounds in which the agent responded both times (of that many transitions), and from its round-0 answer to its last one:\n\n| protocol | agent | model | debates | right→wrong | wrong→right | transitions | round 0→last: right→wrong | round 0→last: wrong→right |\n|---|---|---|---|---|---|---|---|---|\n");
        for p in &self.flips {
            for a in &p.by_agent {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    md(&p.protocol),
                    md(&a.agent),
                    md(&a.model),
                    a.debates,
                    a.flips.cells()
                ));
            }
        }
        out.push_str("\nFlips by team mix (the debaters' models; judges, aggregators and chairmen are not in it), with the protocol's accuracy on those debates:\n\n| protocol | team | debates | decision accuracy | right→wrong | wrong→right | transitions | round 0→last: right→wrong | round 0→last: wrong→right |\n|---|---|---|---|---|---|---|---|---|\n");
        for p in &self.flips {
            for m in &p.by_mix {
                out.push_str(&format!(
                    "| {} | {} | {} | {}/{} = {:.3} | {} |\n",
                    md(&p.protocol),
                    md(&m.mix),
                    m.debates,
                    m.decision_correct,
                    m.debates,
                    m.decision_accuracy,
                    m.flips.cells()
                ));
            }
        }
        if self.self_consistency.is_empty() {
            out.push_str("\nSelf-consistency at the debates' token budgets: this report has no cot-sc arm to draw samples from (add `cot-sc` to the benchmark's protocols, or run `moot bench … --sc-at-budget`).\n");
            return out;
        }
        out.push_str("\nSelf-consistency at each debate's token budget: the plurality of the first k samples of a cot-sc arm, k the most samples whose mean tokens per item fit the debate's, against the debate on the same items (exact McNemar test):\n\n| debate | its tokens per item | cot-sc arm | k of stored | their tokens per item | items | cot-sc accuracy | debate accuracy | only cot-sc right | only the debate right | McNemar p |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for s in &self.self_consistency {
            let k = if s.short {
                format!(
                    "{} of {} — short: the budget pays for {}",
                    s.samples, s.samples_stored, s.samples_affordable
                )
            } else {
                format!("{} of {}", s.samples, s.samples_stored)
            };
            let row = match &s.paired {
                Some(p) => format!(
                    "{} | {:.3} | {:.3} | {} | {} | {:.4}",
                    p.items,
                    p.sc_accuracy,
                    p.protocol_accuracy,
                    p.only_sc,
                    p.only_protocol,
                    p.p_value
                ),
                None => "– | not even one sample fits | – | – | – | –".into(),
            };
            out.push_str(&format!(
                "| {} | {:.0} | {} | {} | {:.0} | {} |\n",
                md(&s.protocol),
                s.budget,
                md(&s.self_consistency),
                k,
                s.tokens,
                row
            ));
        }
        if self.self_consistency.iter().any(|s| s.short) {
            out.push_str("\nRows marked short: the debate's budget pays for more samples than the cot-sc arm stored, so their cot-sc accuracy is that of every stored sample, at fewer tokens than the debate spent — self-consistency short of the budget, not at it (nothing is extrapolated). `moot bench … --sc-at-budget` runs an arm with enough samples.\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_core::answer::ExtractContext;
    use moot_core::debate::{AgentRole, Outcome, Transcript};
    use moot_core::{AnswerKind, Decision};
    use moot_engine::DebateResult;
    use moot_store::CallRecord;

    fn answer(text: &str) -> Option<Answer> {
        Answer::parse(AnswerKind::Numeric, text, &ExtractContext::default())
    }

    fn item(id: &str) -> Item {
        Item {
            id: id.into(),
            question: format!("question {id}"),
            choices: Vec::new(),
            gold: "1".into(),
            kind: AnswerKind::Numeric,
            tests: None,
            passage: None,
        }
    }

    fn call(
        agent: usize,
        round: usize,
        backend: &str,
        tokens: u64,
        text: Option<&str>,
    ) -> CallRecord {
        CallRecord {
            run_id: "r".into(),
            round: round as u32,
            agent: agent as u32,
            slot: "answer".into(),
            agent_id: format!("a{agent}"),
            backend: backend.into(),
            mode: "generate".into(),
            template: "initial".into(),
            template_hash: "h".into(),
            messages: serde_json::json!([]),
            peers: Vec::new(),
            response_text: text.map(str::to_string),
            answer: text.map(str::to_string),
            error: None,
            skipped: text.is_none(),
            finish: None,
            input_tokens: tokens,
            output_tokens: 0,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
            logprob_tokens: None,
            logprob_mean: None,
            logprob_min: None,
            perplexity: None,
            latency_ms: 0,
            recorded_at: "t".into(),
            notes: serde_json::Value::Null,
            ncomm: 0,
            cached: false,
            retries: serde_json::json!([]),
            request_key: None,
            reused_from: None,
        }
    }

    /// One debate: `rows[agent][round]` is an answer, `?` a response without one, `-` a call
    /// the protocol skipped (as judges' are before the last round) and `x` a missing response.
    /// Every answered call costs `tokens` and names its agent's model.
    struct Run<'a> {
        protocol: &'a str,
        protocol_name: &'a str,
        item: &'a str,
        rows: &'a [&'a [&'a str]],
        roles: &'a [AgentRole],
        models: &'a [&'a str],
        tokens: u64,
        decision: &'a str,
    }

    impl Run<'_> {
        fn result(&self) -> ItemResult {
            let rounds = self.rows[0].len();
            let mut transcript = Transcript::new(self.rows.len(), rounds - 1);
            let mut records = Vec::new();
            for (agent, row) in self.rows.iter().enumerate() {
                for (round, &cell) in row.iter().enumerate() {
                    let model = self.models[agent];
                    let outcome = match cell {
                        "-" => {
                            records.push(call(agent, round, model, 0, None));
                            Outcome::Skipped {
                                reason: "not its turn".into(),
                            }
                        }
                        "x" => Outcome::Missing {
                            reason: "deadline".into(),
                        },
                        "?" => {
                            records.push(call(agent, round, model, self.tokens, Some("hmm")));
                            Outcome::responded("hmm", None)
                        }
                        a => {
                            records.push(call(agent, round, model, self.tokens, Some(a)));
                            Outcome::responded(a, answer(a))
                        }
                    };
                    transcript.set(round, agent, outcome);
                }
            }
            let agents = self
                .roles
                .iter()
                .enumerate()
                .map(|(i, &role)| AgentSpec {
                    role,
                    ..AgentSpec::named(format!("a{i}"))
                })
                .collect();
            ItemResult {
                protocol: self.protocol.into(),
                protocol_name: self.protocol_name.into(),
                agents,
                item_id: self.item.into(),
                position: 0,
                gold: "1".into(),
                run_id: format!("b/{}/{}", self.protocol, self.item),
                result: DebateResult {
                    run_id: "r".into(),
                    transcript,
                    records,
                    decisions: vec![Decision {
                        rule: "majority-last",
                        answer: answer(self.decision),
                        scores: Vec::new(),
                        events: Vec::new(),
                        tie: None,
                    }],
                    chosen: "majority-last",
                    validations: Default::default(),
                },
                reused: false,
            }
        }
    }

    const D: AgentRole = AgentRole::Debater;
    const J: AgentRole = AgentRole::Judge;

    /// Three debaters and a judge on three items (gold 1 everywhere), and a cot-sc arm.
    fn judged() -> (Vec<ItemResult>, Vec<Item>) {
        let run = |item: &'static str, rows: &'static [&'static [&'static str]], decision| {
            Run {
                protocol: "judge",
                protocol_name: "judge",
                item,
                rows,
                roles: &[D, D, D, J],
                models: &["m1", "m1", "m2", "big"],
                tokens: 100,
                decision,
            }
            .result()
        };
        let results = vec![
            // The vote (1, 1, 2) is right; the judge's decision is wrong.
            run(
                "A",
                &[&["1", "1"], &["1", "2"], &["2", "2"], &["-", "2"]],
                "2",
            ),
            // The vote (2, 2, 1) is wrong; the debate turns it right.
            run(
                "B",
                &[&["2", "1"], &["2", "1"], &["1", "1"], &["-", "1"]],
                "1",
            ),
            // a1 responded without an answer in round 0 and a2 not at all: the vote is a0's 1.
            run(
                "C",
                &[&["1", "1"], &["?", "1"], &["x", "1"], &["-", "1"]],
                "1",
            ),
            Run {
                protocol: "cot-sc",
                protocol_name: "cot-sc",
                item: "A",
                rows: &[&["1"], &["2"], &["1"]],
                roles: &[D, D, D],
                models: &["m1", "m1", "m2"],
                tokens: 100,
                decision: "1",
            }
            .result(),
        ];
        (results, vec![item("A"), item("B"), item("C")])
    }

    #[test]
    fn the_round0_vote_of_the_debaters_is_paired_with_the_decision() {
        let (results, items) = judged();
        let c = Controls::new(&results, &items);
        assert_eq!(c.vote_vs_decision.len(), 2);
        let judge = c.vote_vs_decision[0].paired.as_ref().unwrap();
        assert_eq!(
            (judge.items, judge.vote_correct, judge.decision_correct),
            (3, 2, 2)
        );
        assert_eq!(
            (
                judge.both_correct,
                judge.only_vote,
                judge.only_decision,
                judge.both_wrong
            ),
            (1, 1, 1, 0)
        );
        assert_eq!(judge.p_value, 1.0);
        assert!((judge.vote_accuracy - 2.0 / 3.0).abs() < 1e-12);
        // cot-sc has no debate round: nothing to compare, not a vote of 0.
        assert_eq!(c.vote_vs_decision[1].protocol, "cot-sc");
        assert_eq!(c.vote_vs_decision[1].paired, None);
    }

    #[test]
    fn the_martingale_check_counts_debaters_that_answered_both_rounds() {
        let (results, items) = judged();
        let c = Controls::new(&results, &items);
        let rounds = &c.martingale[0].rounds;
        assert_eq!(rounds.len(), 1);
        let r = &rounds[0];
        assert_eq!((r.round, r.items, r.left_out), (1, 3, 0));
        // A: 2/3 → 1/3; B: 1/3 → 3/3; C: a2 missed round 0, so a0 and a1: 1/2 → 2/2. The judge
        // answers in round 1 only and is never counted.
        let changes = [-1.0 / 3.0, 2.0 / 3.0, 1.0 / 2.0];
        let mean = 5.0 / 18.0;
        assert!((r.mean.unwrap() - mean).abs() < 1e-12);
        assert!((changes.iter().sum::<f64>() / 3.0 - mean).abs() < 1e-12);
        // Sample variance 31/108, so the standard error is √31 / 18; t(0.975, 2) = 4.302653.
        let half = 4.302_652_73 * 31f64.sqrt() / 18.0;
        let (lo, hi) = r.ci95.unwrap();
        assert!((lo - (mean - half)).abs() < 1e-6 && (hi - (mean + half)).abs() < 1e-6);
        assert!(c.martingale[1].rounds.is_empty(), "cot-sc: no debate round");
    }

    #[test]
    fn an_item_where_no_debater_answered_two_rounds_running_is_left_out() {
        let run = |item, rows| {
            Run {
                protocol: "s2",
                protocol_name: "s2-mad",
                item,
                rows,
                roles: &[D, D],
                models: &["m", "m"],
                tokens: 10,
                decision: "1",
            }
            .result()
        };
        let results = vec![
            run("A", &[&["1", "x", "1"], &["x", "2", "x"]]),
            run("B", &[&["2", "1", "1"], &["2", "2", "1"]]),
        ];
        let c = Controls::new(&results, &[item("A"), item("B")]);
        let rounds = &c.martingale[0].rounds;
        // Round 1: A has nobody in rounds 0 and 1; B goes 0 → 1/2. Round 2: A again nobody;
        // B goes 1/2 → 1. One item each: a mean, no interval.
        assert_eq!((rounds[0].items, rounds[0].left_out), (1, 1));
        assert_eq!((rounds[0].mean, rounds[0].ci95), (Some(0.5), None));
        assert_eq!((rounds[1].items, rounds[1].left_out), (1, 1));
        assert_eq!(rounds[1].mean, Some(0.5));
    }

    #[test]
    fn flips_are_counted_per_debater_and_per_team_mix() {
        let (results, items) = judged();
        let c = Controls::new(&results, &items);
        assert_eq!(c.flips.len(), 1, "only the protocol with a debate round");
        let by_agent: Vec<(&str, &str, usize, FlipCounts)> = c.flips[0]
            .by_agent
            .iter()
            .map(|a| (a.agent.as_str(), a.model.as_str(), a.debates, a.flips))
            .collect();
        let counts = |transitions, right_to_wrong, wrong_to_right| FlipCounts {
            transitions,
            right_to_wrong,
            wrong_to_right,
            first_to_last: transitions,
            first_to_last_right_to_wrong: right_to_wrong,
            first_to_last_wrong_to_right: wrong_to_right,
        };
        assert_eq!(
            by_agent,
            [
                // a0: 1→1, 2→1, 1→1.
                ("a0", "m1", 3, counts(3, 0, 1)),
                // a1: 1→2, 2→1, none→1 (no answer is not the gold).
                ("a1", "m1", 3, counts(3, 1, 2)),
                // a2: 2→2, 1→1; it missed C's round 0.
                ("a2", "m2", 3, counts(2, 0, 0)),
            ],
            "the judge is no debater"
        );
        let mix = &c.flips[0].by_mix;
        assert_eq!(mix.len(), 1);
        assert_eq!(mix[0].mix, "m1×2 + m2×1");
        assert_eq!((mix[0].debates, mix[0].decision_correct), (3, 2));
        assert_eq!(mix[0].flips, counts(8, 1, 3));
    }

    #[test]
    fn round_zero_to_last_compares_each_agents_first_and_last_answers() {
        let run = |item, rows, models| {
            Run {
                protocol: "som",
                protocol_name: "som",
                item,
                rows,
                roles: &[D, D],
                models,
                tokens: 10,
                decision: "1",
            }
            .result()
        };
        let results = vec![
            // a0 leaves the gold and comes back: two flips, none from first to last. a1 misses
            // the last round: its last answer is round 1's.
            run(
                "A",
                &[&["1", "2", "1"], &["2", "1", "x"]],
                &["m", "n@http://h"],
            ),
            run("B", &[&["2", "2", "2"], &["2", "2", "1"]], &["n", "n"]),
        ];
        let c = Controls::new(&results, &[item("A"), item("B")]);
        let a = &c.flips[0].by_agent;
        let ids: Vec<(&str, &str)> = a
            .iter()
            .map(|x| (x.agent.as_str(), x.model.as_str()))
            .collect();
        // The endpoint is not part of the model; a0 ran on another model in B: two rows.
        assert_eq!(ids, [("a0", "m"), ("a1", "n"), ("a0", "n")]);
        assert_eq!(
            a[0].flips,
            FlipCounts {
                transitions: 2,
                right_to_wrong: 1,
                wrong_to_right: 1,
                first_to_last: 1,
                first_to_last_right_to_wrong: 0,
                first_to_last_wrong_to_right: 0,
            }
        );
        // a1: A 2→1 (then missing); B 2→2→1.
        assert_eq!(
            a[1].flips,
            FlipCounts {
                transitions: 3,
                right_to_wrong: 0,
                wrong_to_right: 2,
                first_to_last: 2,
                first_to_last_right_to_wrong: 0,
                first_to_last_wrong_to_right: 2,
            }
        );
        let mixes: Vec<&str> = c.flips[0].by_mix.iter().map(|m| m.mix.as_str()).collect();
        assert_eq!(mixes, ["m×1 + n×1", "n×2"]);
    }

    #[test]
    fn mixes_list_the_most_common_model_first() {
        let m = |v: &[&str]| mix_label(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(m(&["smol", "qwen", "qwen"]), "qwen×2 + smol×1");
        assert_eq!(m(&["b", "a"]), "a×1 + b×1");
        assert_eq!(m(&["qwen"; 3]), "qwen×3");
    }

    /// Two items; debates whose calls cost `per_call` tokens each, and a cot-sc arm of five
    /// samples at 90 tokens each (labelled as a combined report labels it).
    fn budgets() -> (Vec<ItemResult>, Vec<Item>) {
        let debate = |protocol: &'static str, item, per_call, decision| {
            Run {
                protocol,
                protocol_name: "som",
                item,
                rows: &[&["1", "1"], &["2", "2"]],
                roles: &[D, D],
                models: &["m", "m"],
                tokens: per_call,
                decision,
            }
            .result()
        };
        let sc = |item, rows| {
            Run {
                protocol: "cot-sc (other)",
                protocol_name: "cot-sc",
                item,
                rows,
                roles: &[D; 5],
                models: &["m"; 5],
                tokens: 90,
                decision: "1",
            }
            .result()
        };
        let results = vec![
            // Four calls: 400 and 1000 tokens per item.
            debate("som", "P", 100, "2"),
            debate("som", "Q", 100, "1"),
            debate("long", "P", 250, "1"),
            debate("long", "Q", 250, "1"),
            // One call of 25 tokens per agent and round, one agent.
            Run {
                protocol: "tiny",
                protocol_name: "som",
                item: "P",
                rows: &[&["1", "1"]],
                roles: &[D],
                models: &["m"],
                tokens: 25,
                decision: "1",
            }
            .result(),
            // First four: P ties 1 and 2 (1 said first), Q ties 2 and 1 (2 said first).
            sc("P", &[&["1"], &["2"], &["2"], &["1"], &["1"]]),
            sc("Q", &[&["2"], &["2"], &["1"], &["1"], &["1"]]),
        ];
        (results, vec![item("P"), item("Q")])
    }

    #[test]
    fn self_consistency_is_cut_at_each_debates_token_budget() {
        let (results, items) = budgets();
        let c = Controls::new(&results, &items);
        let rows: Vec<(&str, &str)> = c
            .self_consistency
            .iter()
            .map(|s| (s.protocol.as_str(), s.self_consistency.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("som", "cot-sc (other)"),
                ("long", "cot-sc (other)"),
                ("tiny", "cot-sc (other)")
            ]
        );
        // som: 400 tokens per item pay for four samples (360), not five (450).
        let som = &c.self_consistency[0];
        assert_eq!((som.budget, som.samples, som.samples_stored), (400.0, 4, 5));
        assert_eq!(
            (som.tokens, som.samples_affordable, som.short),
            (360.0, 4, false)
        );
        let p = som.paired.as_ref().unwrap();
        // P: cot-sc right (tie to 1), som wrong; Q: cot-sc wrong (tie to 2), som right.
        assert_eq!(
            (
                p.items,
                p.sc_correct,
                p.protocol_correct,
                p.only_sc,
                p.only_protocol
            ),
            (2, 1, 1, 1, 1)
        );
        assert_eq!(p.p_value, 1.0);
        // long: 1000 tokens pay for 11 samples at 90; only 5 are stored, and it says so.
        let long = &c.self_consistency[1];
        assert_eq!(
            (long.samples, long.tokens, long.samples_affordable),
            (5, 450.0, 11)
        );
        assert!(long.short);
        let p = long.paired.as_ref().unwrap();
        assert_eq!((p.sc_correct, p.protocol_correct), (2, 2));
        // tiny: 50 tokens buy no sample at all.
        let tiny = &c.self_consistency[2];
        assert_eq!((tiny.samples, tiny.paired.as_ref()), (0, None));
        assert!(!tiny.short);
    }

    #[test]
    fn the_markdown_has_every_control_and_escapes_names() {
        let (mut results, items) = judged();
        for r in &mut results {
            for c in &mut r.result.records {
                if c.backend == "m2" {
                    c.backend = "m|2 <b>".into();
                }
            }
        }
        let md = Controls::new(&results, &items).markdown();
        for needle in [
            "Did the debate beat its own vote?",
            "| judge | 3 | 2/3 = 0.667 | 2/3 = 0.667 | 1 | 1 | 1.0000 |",
            "| cot-sc | not applicable: no debate round",
            "Martingale check",
            "| judge | 1 | 3 | +0.2778 |",
            "| judge | a1 | m1 | 3 | 1 | 2 | 3 | 1 | 2 |",
            "| judge | 667 | cot-sc | 3 of 3 — short: the budget pays for 6 | 300 | 1 | 1.000 | 0.000 | 1 | 0 | 1.0000 |",
        ] {
            assert!(md.contains(needle), "{needle:?} missing from\n{md}");
        }
        assert!(md.contains(r"m\|2"), "{md}");
        assert!(!md.contains("<b>"), "{md}");
        // A model name is text: its `|` splits no cell, its `<b>` is no markup.
        assert!(md.contains(r"| judge | m1×2 + m\|2 \<b\>×1 | 3 |"), "{md}");
        // With no cot-sc arm there is no sample to draw; the report says so.
        results.retain(|r| r.protocol != "cot-sc");
        let md = Controls::new(&results, &items).markdown();
        assert!(md.contains("no cot-sc arm"), "{md}");
        let (results, items) = budgets();
        let md = Controls::new(&results, &items).markdown();
        assert!(
            md.contains("| long | 1000 | cot-sc (other) | 5 of 5 — short: the budget pays for 11 | 450 | 2 | 1.000 | 1.000 | 0 | 0 | 1.0000 |"),
            "{md}"
        );
        assert!(
            md.contains("| tiny | 50 | cot-sc (other) | 0 of 5 | 0 | – | not even one sample fits"),
            "{md}"
        );
    }

    #[test]
    fn samples_for_budget_pay_for_the_costliest_debate() {
        let (results, items) = budgets();
        // long: 1000 tokens per item; the cot-sc arm's samples cost 90: ⌈1.1 × 1000 / 90⌉ = 13.
        let need = samples_for_budget(&results, &items).unwrap();
        assert_eq!(need.protocol, "long");
        assert_eq!(
            (need.budget, need.per_sample, need.samples),
            (1000.0, 90.0, 13)
        );
        // Without a cot-sc arm, a sample costs what a debater's round-0 answer did: two items of
        // two agents at 250 (long) and at 100 (som), one of one at 25 (tiny): 1425 / 9; then
        // ⌈1.1 × 1000 × 9 / 1425⌉ = ⌈6.95⌉ = 7.
        let debates: Vec<ItemResult> = results
            .into_iter()
            .filter(|r| r.protocol_name != "cot-sc")
            .collect();
        let need = samples_for_budget(&debates, &items).unwrap();
        assert_eq!((need.per_sample, need.samples), (1425.0 / 9.0, 7));
        // No debate round: nothing to match.
        let (results, items) = judged();
        let sc: Vec<ItemResult> = results
            .into_iter()
            .filter(|r| r.protocol == "cot-sc")
            .collect();
        assert_eq!(samples_for_budget(&sc, &items), None);
    }
}
