//! `sim`: a simulated agent population for research and tests (see docs/architecture.md,
//! Backends).
//!
//! Each simulated agent has an independent accuracy `p` (its chance of the gold answer when it
//! answers alone), a distractor distribution (the wrong answers it falls for), a conformity β(p)
//! that depends on the prompt p it is given (FREE-MAD eq. 4: P(r) ∝ P_in(r)·exp(β(p)·share of
//! peers holding r); see [`Stance`]), a robustness `α` to erroneous memories (MAD-M² assumption 2.1: with
//! probability α the agent re-derives its answer instead of trusting its previous one) and a
//! recency bias (MADC: later speakers carry more influence; the i-th of n peer blocks weighs
//! exp(recency·i/(n−1)) in the share, so recency 0 is the plain share).
//!
//! It reads the same prompts real agents get ([`moot_core::prompts`]):
//! - the stance of a debate prompt, from its wording ([`Stance::of`]): conformity (Du et al.'s
//!   "use these solutions as additional information", MAD-M²'s memories), anti-conformity
//!   (FREE-MAD-N's critique, SVR-MAD's challenge, freemad's critique) or neutral (anything else,
//!   [`moot_core::prompts::NEUTRAL`] among them); its β is `beta_conform`, `beta_anti` or `beta`;
//! - its previous answer from its own last assistant turn (debate rounds with history, SVR-MAD
//!   challenges);
//! - a debate round under the shared-first layout (`debate.layout`; one user message with every
//!   round's solutions under `Round r:` headings, then "You are Agent N; …"): its previous answer
//!   from its own latest block (Agent N's), and as its peers the other agents' blocks of the
//!   latest round only, as the papers' layout shows them;
//! - its peers' answers from the bracketed blocks of [`prompts::peer_block`] and
//!   [`prompts::peer_answer_block`] (each from a line starting with `[Agent ` to the matching
//!   `[End of Agent N's solution]` line). A MAD-M² memory round is one user message whose blocks
//!   may include the agent's own previous response; all blocks count as peers there;
//! - judgement prompts ([`prompts::JUDGE`]): it reads the judged solution's answer and labels it
//!   `<label>YES</label>` / `<label>NO</label>`, right with probability `judge_accuracy`, or
//!   `<label>NOT SURE</label>` with probability `unsure` (drawn first);
//! - the saboteur instruction ([`prompts::MALICIOUS`]) in its system message: it then always
//!   answers the target X, and judges a solution YES exactly when its answer is X;
//! - an assigned position ([`prompts::ASSIGNED_MARK`], `assigned` and `consultancy`): it then
//!   argues for that answer, as a saboteur argues for its target;
//! - a council's ranking prompt ([`prompts::RANK`]): its blocks are `[Response X]` …
//!   `[End of Response X]`, read like peer blocks; it answers as usual and writes
//!   `Ranking: …` with the labels of the responses holding its answer first, the others after,
//!   each group in label order;
//! - the confidence request ([`prompts::CONFIDENCE`]): it then writes `Confidence: NN%` just
//!   before its final line, 80–95 when right and 30–55 when wrong if calibrated, 80–95 either way
//!   if hallucinating (and always 80–95 as a saboteur).
//!
//! It writes real response text ending in "Final answer: …" (or in a `<label>`), with token
//! logprobs: mean −0.2 when right and −0.9 when wrong if calibrated, −0.2 either way if
//! hallucinating; every token sits near the mean except the last, which is the minimum: −0.5 when
//! right and −2.5 when wrong if calibrated, −0.5 either way if hallucinating (the other tokens make
//! up the difference, so the mean is exact). A judgement counts as right when its label is the
//! correct one. Draws are deterministic per request (seed, session, message count and the last
//! user message, and a fork's resample salt, `params.resample`). It needs the gold answer, so it is for benchmarks and tests, not for `moot ask`.
//!
//! [`prompts::peer_block`]: moot_core::prompts::peer_block
//! [`prompts::peer_answer_block`]: moot_core::prompts::peer_answer_block
//! [`prompts::JUDGE`]: moot_core::prompts::JUDGE
//! [`prompts::MALICIOUS`]: moot_core::prompts::MALICIOUS
//! [`prompts::ASSIGNED_MARK`]: moot_core::prompts::ASSIGNED_MARK
//! [`prompts::RANK`]: moot_core::prompts::RANK
//! [`prompts::CONFIDENCE`]: moot_core::prompts::CONFIDENCE

use std::hash::{DefaultHasher, Hash, Hasher};

use async_trait::async_trait;
use moot_core::answer::{Answer, AnswerKind, ExtractContext};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel, Role};

/// Marks a judgement prompt ([`moot_core::prompts::JUDGE`]).
const JUDGE_MARK: &str = "Judge whether the following solution";
/// The judged solution runs from after this …
const SOLUTION_START: &str = "Solution:\n";
/// … to the last occurrence of this.
const SOLUTION_END: &str = "\n\nCheck it step by step";
/// Precedes the saboteur's target in [`moot_core::prompts::MALICIOUS`].
const MALICIOUS_MARK: &str = "that the final answer is: ";
/// Begins the line of a shared-first prompt that says which agent reads it ("You are Agent N;
/// …", [`moot_core::prompts::SHARED_FIRST_CONFORMITY`] and the other shared-first templates).
const SELF_MARK: &str = "You are Agent ";
/// Marks a council's ranking prompt ([`moot_core::prompts::RANK`]).
const RANK_MARK: &str = "rank them from best to worst";
/// Marks a confidence request ([`moot_core::prompts::CONFIDENCE`]).
const CONFIDENCE_MARK: &str = "Confidence: <0 to 100>%";
/// Mark prompts that urge agreement or use of the peers' solutions ([`prompts::CONFORMITY`],
/// [`prompts::MEMORIES`]).
///
/// [`prompts::CONFORMITY`]: moot_core::prompts::CONFORMITY
/// [`prompts::MEMORIES`]: moot_core::prompts::MEMORIES
const CONFORM_MARKS: &[&str] = &["as additional information"];
/// Mark prompts that urge critical reading of the peers ([`prompts::ANTI_CONFORMITY`],
/// [`prompts::CHALLENGE`], [`prompts::FREEMAD_CRITIQUE`]).
///
/// [`prompts::ANTI_CONFORMITY`]: moot_core::prompts::ANTI_CONFORMITY
/// [`prompts::CHALLENGE`]: moot_core::prompts::CHALLENGE
/// [`prompts::FREEMAD_CRITIQUE`]: moot_core::prompts::FREEMAD_CRITIQUE
const ANTI_MARKS: &[&str] = &[
    "do not look for agreement",
    "You do not have to agree with them",
    "Examine its argument critically",
    "Review your peers' solutions critically",
];

/// How a debate prompt asks an agent to treat its peers, which sets the agent's conformity
/// (FREE-MAD §3.1: β(p) is positive by default, larger when p urges agreement, negative when p
/// urges critical reasoning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stance {
    /// The prompt urges agreement, or using the peers' solutions: β = `beta_conform`.
    Conform,
    /// The prompt says nothing about how to weigh the peers: β = `beta`.
    Neutral,
    /// The prompt urges looking for the peers' mistakes: β = `beta_anti`.
    Anti,
}

impl Stance {
    /// The stance of a prompt, from the wording of moot's templates (anti-conformity marks win
    /// when a prompt carries both).
    pub fn of(prompt: &str) -> Stance {
        if ANTI_MARKS.iter().any(|m| prompt.contains(m)) {
            Stance::Anti
        } else if CONFORM_MARKS.iter().any(|m| prompt.contains(m)) {
            Stance::Conform
        } else {
            Stance::Neutral
        }
    }
}

/// One simulated agent's parameters; also the `sim` table of an agent in moot's configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "SimAgentTable")]
pub struct SimAgent {
    /// Chance of the gold answer when answering alone.
    pub accuracy: f64,
    /// Wrong answers, in the order the agent falls for them (weights decrease geometrically).
    pub distractors: Vec<String>,
    /// Conformity under a neutral prompt (the model's own tendency): > 0 follows the peers'
    /// majority, < 0 resists it. FREE-MAD assumes it positive.
    pub beta: f64,
    /// Conformity under a prompt that urges agreement or use of the peers' solutions (`som`,
    /// `free-mad-c`, MAD-M²'s memories); the paper's sign: larger than `beta`.
    pub beta_conform: f64,
    /// Conformity under a prompt that urges critical reading (`free-mad-n`, SVR-MAD's
    /// challenges); the paper's sign: negative.
    pub beta_anti: f64,
    /// Robustness to erroneous memories: chance to re-derive rather than keep a previous answer.
    pub alpha: f64,
    /// Whether logprob signals and self-reported confidence track correctness.
    pub calibrated: bool,
    /// Chance that a YES / NO judgement is the right label.
    pub judge_accuracy: f64,
    /// Chance that a judgement is NOT SURE (drawn before YES / NO).
    pub unsure: f64,
    /// Position influence: the i-th of n peer blocks weighs exp(recency·i/(n−1)) in the share.
    pub recency: f64,
}

/// The largest magnitude of a conformity (`beta`, `beta_conform`, `beta_anti`) or of `recency`
/// that [`SimAgent::check`] accepts. The sim weighs an answer by exp(β·share) and a peer block by
/// exp(recency·position), share and position in [0, 1]: up to 100 these stay below 3e43, far
/// from where f64 overflows (exp(710)), and far beyond the fitted (4.17) and preset (5) values.
pub const MAX_EXPONENT: f64 = 100.0;

/// SimAgent fields that are chances.
const PROBABILITIES: [&str; 4] = ["accuracy", "alpha", "judge_accuracy", "unsure"];

/// A parameter of a [`SimAgent`] that no simulation can use; says the value and why, without
/// the field (see [`SimParamError::field`]), so each reader can name it where it was written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimParamError {
    #[error("{value} is not a probability (between 0 and 1)")]
    NotAProbability { field: &'static str, value: f64 },
    #[error("{value} is not a finite number between -{MAX_EXPONENT} and {MAX_EXPONENT} (the sim weighs by exp() of it)")]
    OutOfRange { field: &'static str, value: f64 },
}

impl SimParamError {
    /// The field at fault (`beta_conform`).
    pub fn field(&self) -> &'static str {
        match self {
            SimParamError::NotAProbability { field, .. }
            | SimParamError::OutOfRange { field, .. } => field,
        }
    }
}

/// Builds one preset agent.
pub type MakeAgent = fn() -> SimAgent;

/// Named population members, for mixing teams in configuration (`sim = { preset = "expert" }`,
/// any field overriding the preset's).
pub const PRESETS: &[(&str, MakeAgent)] = &[
    // Always right and never moved: SVR-MAD's correct minority.
    ("expert", || SimAgent {
        accuracy: 1.0,
        alpha: 0.0,
        ..SimAgent::default()
    }),
    // Rarely right alone and yields to whatever it is shown, whatever the prompt says.
    ("follower", || {
        SimAgent {
            accuracy: 0.1,
            alpha: 1.0,
            ..SimAgent::default()
        }
        .with_beta_everywhere(5.0)
    }),
    // The embedded default model (Qwen2.5-Coder-0.5B, temperature 0.7) on GSM8K, fitted by
    // experiments/sim/fit-beta.py from its measured adoption of a peer's different answer under
    // the three prompts (results/sim/beta-fit.md, 30 questions): it conforms strongly, and the
    // critique prompt lowers that only a little; it re-samples every round (α = 1), is right 14%
    // of the time alone, and its wrong answers rarely coincide.
    ("qwen-0.5b-like", || SimAgent {
        accuracy: 0.14,
        distractors: ["100001", "100002", "100003", "100004", "100005", "100006"]
            .map(String::from)
            .to_vec(),
        beta: 4.17,
        beta_conform: 4.17,
        beta_anti: 2.86,
        alpha: 1.0,
        ..SimAgent::default()
    }),
    // An agent without peers' influence: it answers as it would alone.
    ("independent", || {
        SimAgent {
            alpha: 1.0,
            ..SimAgent::default()
        }
        .with_beta_everywhere(0.0)
    }),
];

/// A `sim` table as written in configuration: any field of [`SimAgent`], optionally on top of a
/// named preset (`preset = "…"`, see [`PRESETS`]); fields not given keep the preset's value, or
/// the default's.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SimAgentTable {
    preset: Option<String>,
    accuracy: Option<f64>,
    distractors: Option<Vec<String>>,
    beta: Option<f64>,
    beta_conform: Option<f64>,
    beta_anti: Option<f64>,
    alpha: Option<f64>,
    calibrated: Option<bool>,
    judge_accuracy: Option<f64>,
    unsure: Option<f64>,
    recency: Option<f64>,
}

impl TryFrom<SimAgentTable> for SimAgent {
    type Error = String;

    fn try_from(t: SimAgentTable) -> Result<SimAgent, String> {
        let base = match &t.preset {
            None => SimAgent::default(),
            Some(name) => SimAgent::preset(name).ok_or_else(|| {
                format!(
                    "unknown sim preset {name:?}; known: {}",
                    PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
        };
        Ok(SimAgent {
            accuracy: t.accuracy.unwrap_or(base.accuracy),
            distractors: t.distractors.unwrap_or(base.distractors),
            beta: t.beta.unwrap_or(base.beta),
            beta_conform: t.beta_conform.unwrap_or(base.beta_conform),
            beta_anti: t.beta_anti.unwrap_or(base.beta_anti),
            alpha: t.alpha.unwrap_or(base.alpha),
            calibrated: t.calibrated.unwrap_or(base.calibrated),
            judge_accuracy: t.judge_accuracy.unwrap_or(base.judge_accuracy),
            unsure: t.unsure.unwrap_or(base.unsure),
            recency: t.recency.unwrap_or(base.recency),
        })
    }
}

impl SimAgent {
    /// A named population member (see [`PRESETS`]).
    pub fn preset(name: &str) -> Option<SimAgent> {
        PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, make)| make())
    }

    /// Every parameter usable: the chances in [0, 1], the conformities and the recency finite
    /// and within ±[`MAX_EXPONENT`]. What configuration and sweeps check before anything runs;
    /// the sim itself never panics on any value.
    pub fn check(&self) -> Result<(), SimParamError> {
        let chances = [self.accuracy, self.alpha, self.judge_accuracy, self.unsure];
        for (field, value) in PROBABILITIES.into_iter().zip(chances) {
            // NaN is in no range.
            if !(0.0..=1.0).contains(&value) {
                return Err(SimParamError::NotAProbability { field, value });
            }
        }
        for (field, value) in [
            ("beta", self.beta),
            ("beta_conform", self.beta_conform),
            ("beta_anti", self.beta_anti),
            ("recency", self.recency),
        ] {
            if !(-MAX_EXPONENT..=MAX_EXPONENT).contains(&value) {
                return Err(SimParamError::OutOfRange { field, value });
            }
        }
        Ok(())
    }

    /// The agent's conformity under a prompt of `stance`.
    pub fn beta_for(&self, stance: Stance) -> f64 {
        match stance {
            Stance::Conform => self.beta_conform,
            Stance::Neutral => self.beta,
            Stance::Anti => self.beta_anti,
        }
    }

    /// The same conformity under every prompt (how the sim behaved before β depended on the
    /// prompt; results made then are reproduced with it).
    pub fn with_beta_everywhere(self, beta: f64) -> SimAgent {
        SimAgent {
            beta,
            beta_conform: beta,
            beta_anti: beta,
            ..self
        }
    }
}

impl Default for SimAgent {
    fn default() -> Self {
        SimAgent {
            accuracy: 0.6,
            distractors: vec![],
            beta: 1.0,
            beta_conform: 3.0,
            beta_anti: -1.0,
            alpha: 0.5,
            calibrated: true,
            judge_accuracy: 0.8,
            unsure: 0.0,
            recency: 0.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SimModel {
    agent: SimAgent,
    /// [`LanguageModel::name`], worked out once: every call asks for it (the request key, the
    /// stored call) and it hashes every parameter.
    name: String,
    gold: String,
    kind: AnswerKind,
    seed: u64,
}

/// What the agent says to one request.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Solution {
        answer: String,
        right: bool,
        /// Self-reported confidence in percent, when the prompt asks for it.
        confidence: Option<u32>,
        /// A council's ranking line (`Ranking: B > A`), when the prompt asks for one.
        ranking: Option<String>,
    },
    Judgement {
        label: &'static str,
        right: bool,
    },
}

/// The bodies of the peer blocks in a prompt, in order. A block runs from a line starting with
/// `[Agent N` to the line `[End of Agent N's solution]`, or from `[Response X]` to
/// `[End of Response X]` (a council's anonymous blocks); an unterminated block is skipped.
fn peer_blocks(text: &str) -> Vec<String> {
    labelled_blocks(text)
        .into_iter()
        .map(|(_, body)| body)
        .collect()
}

/// [`peer_blocks`] with each block's anonymous label (`None` for an agent's block).
fn labelled_blocks(text: &str) -> Vec<(Option<char>, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let opened = if let Some(rest) = lines[i].strip_prefix("[Agent ") {
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!n.is_empty()).then(|| (None, format!("[End of Agent {n}'s solution]")))
        } else {
            lines[i]
                .trim_end()
                .strip_prefix("[Response ")
                .and_then(|rest| rest.strip_suffix(']'))
                .filter(|l| l.len() == 1)
                .and_then(|l| l.chars().next())
                .map(|l| (Some(l), format!("[End of Response {l}]")))
        };
        if let Some((label, end)) = opened {
            if let Some(len) = lines[i + 1..].iter().position(|l| l.trim() == end) {
                blocks.push((label, lines[i + 1..i + 1 + len].join("\n")));
                i += len + 2;
                continue;
            }
        }
        i += 1;
    }
    blocks
}

/// What the sim reads of a shared-first prompt: the reader's own latest solution, and the other
/// agents' solutions of the latest round, in order.
#[derive(Debug, Clone, PartialEq)]
struct SharedFirstView {
    own: Option<String>,
    peers: Vec<String>,
}

/// A shared-first prompt's view, when `prompt` is one: outside every block, a `Round r:`
/// heading starts a round and a line "You are Agent N; …" names the reader. Blocks are read as
/// [`labelled_blocks`] reads them, so nothing inside a solution counts as a heading or a name.
fn shared_first_view(prompt: &str) -> Option<SharedFirstView> {
    let lines: Vec<&str> = prompt.lines().collect();
    let number = |rest: &str| -> Option<(String, usize)> {
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!n.is_empty()).then(|| {
            let len = n.len();
            (n, len)
        })
    };
    // (round section, agent number, body)
    let mut blocks: Vec<(usize, String, String)> = Vec::new();
    let mut section = 0;
    let mut reader = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((n, _)) = line.strip_prefix("[Agent ").and_then(number) {
            let end = format!("[End of Agent {n}'s solution]");
            if let Some(len) = lines[i + 1..].iter().position(|l| l.trim() == end) {
                blocks.push((section, n, lines[i + 1..i + 1 + len].join("\n")));
                i += len + 2;
                continue;
            }
        } else if line
            .strip_prefix("Round ")
            .and_then(|rest| rest.strip_suffix(':'))
            .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()))
        {
            section += 1;
        } else if let Some((n, len)) = line.strip_prefix(SELF_MARK).and_then(number) {
            if line[SELF_MARK.len() + len..].starts_with(';') {
                reader = Some(n);
            }
        }
        i += 1;
    }
    let reader = reader?;
    let latest = blocks.iter().map(|b| b.0).max();
    Some(SharedFirstView {
        own: blocks
            .iter()
            .rev()
            .find(|(_, n, _)| *n == reader)
            .map(|(_, _, body)| body.clone()),
        peers: blocks
            .iter()
            .filter(|(r, n, _)| Some(*r) == latest && *n != reader)
            .map(|(_, _, body)| body.clone())
            .collect(),
    })
}

/// The answer an `assigned` or `consultancy` prompt tells the agent to defend.
fn assigned_position(prompt: &str) -> Option<&str> {
    let at = prompt.find(moot_core::prompts::ASSIGNED_MARK)?;
    let rest = &prompt[at + moot_core::prompts::ASSIGNED_MARK.len()..];
    Some(rest.lines().next().unwrap_or("").trim()).filter(|p| !p.is_empty())
}

/// Each answer's weighted share among the peer blocks, in order of first appearance: the i-th of
/// n blocks (0-based, in prompt order) weighs exp(recency·i/(n−1)) (1 when n = 1); blocks without
/// a readable answer hold none and are left out of the total.
fn peer_shares(peers: &[Option<String>], recency: f64) -> Vec<(String, f64)> {
    let n = peers.len();
    let exponent = |i: usize| {
        if n <= 1 {
            0.0
        } else {
            recency * i as f64 / (n - 1) as f64
        }
    };
    let answered: Vec<(usize, &String)> = peers
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.as_ref().map(|a| (i, a)))
        .collect();
    let mut weights: Vec<f64> = answered
        .iter()
        .map(|&(i, _)| if n <= 1 { 1.0 } else { exponent(i).exp() })
        .collect();
    // As computed since the sim began, unless an extreme recency overflows them.
    if !drawable(&weights) {
        let logs: Vec<f64> = answered.iter().map(|&(i, _)| exponent(i)).collect();
        weights = from_log_weights(&logs);
    }
    let mut shares: Vec<(String, f64)> = Vec::new();
    let mut total = 0.0;
    for (&(_, answer), &w) in answered.iter().zip(&weights) {
        total += w;
        match shares.iter_mut().find(|(a, _)| a == answer) {
            Some((_, s)) => *s += w,
            None => shares.push((answer.clone(), w)),
        }
    }
    for (_, s) in &mut shares {
        *s /= total;
    }
    shares
}

/// The judged solution of a judgement prompt.
fn judged_solution(prompt: &str) -> &str {
    let start = prompt
        .find(SOLUTION_START)
        .map_or(0, |i| i + SOLUTION_START.len());
    let rest = &prompt[start..];
    &rest[..rest.rfind(SOLUTION_END).unwrap_or(rest.len())]
}

/// Whether `weights` can be drawn from as they are: each finite and ≥ 0, with a finite, positive
/// total.
fn drawable(weights: &[f64]) -> bool {
    let total: f64 = weights.iter().sum();
    weights.iter().all(|w| w.is_finite() && *w >= 0.0) && total.is_finite() && total > 0.0
}

/// Weights from their logarithms, scaled so that the largest is 1: for exponents too large for
/// `exp()` (an extreme β or recency), where weights computed directly overflow to infinity and
/// then to NaN. The result is in the limit the direct weights tend to: a NaN logarithm is an
/// impossible answer, infinite ones share all the weight, and when none is possible all weigh
/// the same. Every weight is in [0, 1] and the total in [1, n] (n ≥ 1).
fn from_log_weights(logs: &[f64]) -> Vec<f64> {
    let logs: Vec<f64> = logs
        .iter()
        .map(|&l| if l.is_nan() { f64::NEG_INFINITY } else { l })
        .collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::INFINITY {
        logs.iter()
            .map(|&l| if l == f64::INFINITY { 1.0 } else { 0.0 })
            .collect()
    } else if top == f64::NEG_INFINITY {
        vec![1.0; logs.len()]
    } else {
        logs.iter().map(|&l| (l - top).exp()).collect()
    }
}

/// A draw with probability `p` (clamped to [0, 1]; NaN counts as 0).
fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    rng.random_bool(if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) })
}

/// The headline parameters, then a hash of all of them: the request cache keys on the model's
/// name, so two agents that differ in any parameter must never share an answer.
fn sim_name(agent: &SimAgent) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(serde_json::to_vec(agent).unwrap_or_default());
    format!(
        "sim:p={},beta={}/{}/{},alpha={},#{:02x}{:02x}{:02x}{:02x}",
        agent.accuracy,
        agent.beta_conform,
        agent.beta,
        agent.beta_anti,
        agent.alpha,
        digest[0],
        digest[1],
        digest[2],
        digest[3]
    )
}

impl SimModel {
    /// A simulated agent; `gold` is read under `kind` (so `"$18"` is the numeric 18).
    pub fn new(agent: SimAgent, gold: impl Into<String>, kind: AnswerKind, seed: u64) -> SimModel {
        let gold = gold.into();
        let gold = Answer::parse(kind, &gold, &ExtractContext::default())
            .map_or(gold, |a| a.canonical().to_string());
        SimModel {
            name: sim_name(&agent),
            agent,
            gold,
            kind,
            seed,
        }
    }

    fn read(&self, text: &str) -> Option<String> {
        Answer::extract(self.kind, text, &ExtractContext::default())
            .map(|a| a.canonical().to_string())
    }

    /// The wrong answer of an agent configured without distractors: one that reads as a
    /// different answer of the same kind (the next number, option letter or the other of yes/no).
    fn default_distractor(&self) -> String {
        let number = self.gold.parse::<f64>().ok().filter(|x| x.is_finite());
        match (self.kind, number) {
            (AnswerKind::Choice, _) => {
                let letter = self.gold.chars().next().unwrap_or('A').to_ascii_uppercase();
                if letter == 'A' {
                    "B".into()
                } else {
                    "A".into()
                }
            }
            (AnswerKind::YesNo, _) => {
                if self.gold == "yes" {
                    "no".into()
                } else {
                    "yes".into()
                }
            }
            (_, Some(x)) => {
                let wrong = x + 1.0;
                if wrong.fract() == 0.0 && wrong.abs() < 1e15 {
                    format!("{}", wrong as i64)
                } else {
                    format!("{wrong}")
                }
            }
            (AnswerKind::Code, _) => format!(
                "{}\n\nraise RuntimeError(\"a simulated agent's wrong program\")",
                self.gold
            ),
            _ => format!("not {}", self.gold),
        }
    }

    /// The answer distribution before conformity: gold with `accuracy`, distractors share the rest.
    fn independent(&self) -> Vec<(String, f64)> {
        let mut dist = vec![(self.gold.clone(), self.agent.accuracy)];
        let wrong = 1.0 - self.agent.accuracy;
        let n = self.agent.distractors.len();
        if n == 0 {
            dist.push((self.default_distractor(), wrong));
        } else {
            let weights: Vec<f64> = (0..n).map(|i| 0.5f64.powi(i as i32)).collect();
            let total: f64 = weights.iter().sum();
            for (d, w) in self.agent.distractors.iter().zip(weights) {
                dist.push((d.clone(), wrong * w / total));
            }
        }
        dist
    }

    /// The request's random stream: seed, session, message count and the last user message,
    /// and a fork's resample salt when there is one (so a resampled round draws afresh, while
    /// every other request draws exactly as before).
    fn rng(&self, request: &CompletionRequest) -> ChaCha8Rng {
        let mut h = DefaultHasher::new();
        self.seed.hash(&mut h);
        request.conversation.hash(&mut h);
        request.messages.len().hash(&mut h);
        last_user(request).hash(&mut h);
        if let Some(salt) = request.params.resample {
            salt.hash(&mut h);
        }
        ChaCha8Rng::seed_from_u64(h.finish())
    }

    /// The saboteur's target answer, when a system message carries the `malicious` instruction.
    fn malicious_target(&self, request: &CompletionRequest) -> Option<String> {
        request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .find_map(|m| {
                let at = m.content.find(MALICIOUS_MARK)?;
                let rest = &m.content[at + MALICIOUS_MARK.len()..];
                let target = rest.lines().next().unwrap_or("").trim();
                if target.is_empty() {
                    return None;
                }
                Some(
                    Answer::parse(self.kind, target, &ExtractContext::default())
                        .map_or_else(|| target.to_string(), |a| a.canonical().to_string()),
                )
            })
    }

    /// A solution's answer: previous answer (kept with probability 1 − α), else a draw from
    /// [`SimModel::weighted_answers`].
    fn solve(&self, request: &CompletionRequest, prompt: &str, rng: &mut ChaCha8Rng) -> String {
        let shared_first = shared_first_view(prompt);
        let previous = match &shared_first {
            Some(view) => view.own.as_deref().and_then(|own| self.read(own)),
            None => request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant)
                .and_then(|m| self.read(&m.content)),
        };
        // A previous answer is a memory: kept unless the agent re-derives (probability α).
        if let Some(prev) = previous {
            if !chance(rng, self.agent.alpha) {
                return prev;
            }
        }
        let dist = match &shared_first {
            Some(view) => self.weighted_among(&view.peers, Stance::of(prompt)),
            None => self.weighted_answers(prompt),
        };
        let total: f64 = dist.iter().map(|(_, w)| w).sum();
        // `weighted_answers` keeps the total finite and positive, so the range is one.
        let mut x = rng.random_range(0.0..total.max(f64::MIN_POSITIVE));
        for (answer, w) in &dist {
            if x < *w {
                return answer.clone();
            }
            x -= w;
        }
        dist.last().map(|(a, _)| a.clone()).unwrap_or_default()
    }

    /// The answers a re-derived solution is drawn from, with their weights: the independent
    /// distribution reweighted by the (recency-weighted) share of the peer blocks in `prompt`,
    /// P(r) ∝ P_in(r)·exp(β(p)·share(r)). Every weight is finite and ≥ 0, and the total finite
    /// and positive, whatever the parameters: weights too large for `exp()` are worked out from
    /// their logarithms ([`from_log_weights`]), negative or NaN chances count as impossible.
    fn weighted_answers(&self, prompt: &str) -> Vec<(String, f64)> {
        self.weighted_among(&peer_blocks(prompt), Stance::of(prompt))
    }

    /// [`SimModel::weighted_answers`] with the peers' blocks and the prompt's stance given.
    fn weighted_among(&self, peers: &[String], stance: Stance) -> Vec<(String, f64)> {
        let blocks: Vec<Option<String>> = peers.iter().map(|block| self.read(block)).collect();
        let mut dist = self.independent();
        let shares = peer_shares(&blocks, self.agent.recency);
        for (p, _) in &shares {
            if !dist.iter().any(|(a, _)| a == p) {
                dist.push((p.clone(), 1e-3));
            }
        }
        let beta = self.agent.beta_for(stance);
        // An answer no peer holds is not moved (its exponent is 0 even when β is infinite or
        // NaN, where β·0 would be NaN).
        let exponents: Vec<f64> = dist
            .iter()
            .map(|(answer, _)| {
                let share = shares
                    .iter()
                    .find(|(a, _)| a == answer)
                    .map_or(0.0, |(_, s)| *s);
                if share == 0.0 {
                    0.0
                } else {
                    beta * share
                }
            })
            .collect();
        // Computed directly, as the sim always has, whenever that gives weights to draw from
        // (always, for parameters `SimAgent::check` accepts), so that results reproduce bit for
        // bit; from logarithms only where the direct weights overflow or are not numbers.
        let direct: Vec<f64> = dist
            .iter()
            .zip(&exponents)
            .map(|((_, w), e)| w * e.exp())
            .collect();
        let weights = if drawable(&direct) {
            direct
        } else {
            let logs: Vec<f64> = dist
                .iter()
                .zip(&exponents)
                .map(|((_, w), e)| w.ln() + e)
                .collect();
            from_log_weights(&logs)
        };
        dist.into_iter()
            .zip(weights)
            .map(|((answer, _), w)| (answer, w))
            .collect()
    }

    /// What the agent says to a request; pure given the request and the seed.
    fn reply(&self, request: &CompletionRequest) -> Reply {
        let mut rng = self.rng(request);
        let prompt = last_user(request);
        let target = self.malicious_target(request);
        if prompt.contains(JUDGE_MARK) {
            let judged = self.read(judged_solution(prompt));
            let correct = judged.as_deref() == Some(self.gold.as_str());
            let yes = if let Some(target) = &target {
                judged.as_deref() == Some(target.as_str())
            } else if chance(&mut rng, self.agent.unsure) {
                return Reply::Judgement {
                    label: "NOT SURE",
                    right: false,
                };
            } else {
                // The right label with probability judge_accuracy, the wrong one otherwise.
                chance(&mut rng, self.agent.judge_accuracy) == correct
            };
            return Reply::Judgement {
                label: if yes { "YES" } else { "NO" },
                right: yes == correct,
            };
        }
        // A saboteur argues for its target, an assigned debater for its position.
        let assigned = assigned_position(prompt).map(|p| {
            Answer::parse(self.kind, p, &ExtractContext::default())
                .map_or_else(|| p.to_string(), |a| a.canonical().to_string())
        });
        let answer = match target.as_ref().or(assigned.as_ref()) {
            Some(t) => t.clone(),
            None => self.solve(request, prompt, &mut rng),
        };
        // A council member ranks the responses holding its answer first, the others after,
        // each group in label order.
        let ranking = prompt.contains(RANK_MARK).then(|| {
            let labelled: Vec<(char, bool)> = labelled_blocks(prompt)
                .into_iter()
                .filter_map(|(label, body)| {
                    label.map(|l| (l, self.read(&body).as_deref() == Some(answer.as_str())))
                })
                .collect();
            let order: Vec<String> = labelled
                .iter()
                .filter(|(_, same)| *same)
                .chain(labelled.iter().filter(|(_, same)| !*same))
                .map(|(l, _)| l.to_string())
                .collect();
            format!("Ranking: {}\n", order.join(" > "))
        });
        let right = answer == self.gold;
        let confidence = prompt.contains(CONFIDENCE_MARK).then(|| {
            if right || !self.agent.calibrated || target.is_some() {
                rng.random_range(80..=95)
            } else {
                rng.random_range(30..=55)
            }
        });
        Reply::Solution {
            answer,
            right,
            confidence,
            ranking,
        }
    }

    /// The agent's final answer to a request (for a judgement prompt, its label: `YES`, `NO` or
    /// `NOT SURE`); pure given the request and the seed.
    pub fn choose(&self, request: &CompletionRequest) -> String {
        match self.reply(request) {
            Reply::Solution { answer, .. } => answer,
            Reply::Judgement { label, .. } => label.to_string(),
        }
    }

    /// Token logprobs for `tokens` tokens: the mean is exact, the last token is the minimum.
    fn logprobs(&self, tokens: usize, right: bool) -> Vec<f32> {
        let (mean, min) = if !self.agent.calibrated || right {
            (-0.2, -0.5)
        } else {
            (-0.9, -2.5)
        };
        if tokens < 2 {
            return vec![mean as f32; tokens];
        }
        let rest = (mean * tokens as f64 - min) / (tokens - 1) as f64;
        let mut logprobs = vec![rest as f32; tokens];
        logprobs[tokens - 1] = min as f32;
        logprobs
    }

    /// The completion for a request: response text, word-counted usage and, when asked for,
    /// token logprobs.
    fn respond(&self, request: &CompletionRequest) -> Completion {
        let (text, right) = match self.reply(request) {
            Reply::Solution {
                answer,
                right,
                confidence,
                ranking,
            } => {
                let confidence = confidence
                    .map(|c| format!("Confidence: {c}%\n"))
                    .unwrap_or_default();
                // A program is an answer only inside its fenced block.
                let answer = if self.kind == AnswerKind::Code {
                    format!("\n```python\n{answer}\n```")
                } else {
                    answer
                };
                (
                    format!(
                        "I worked through the problem and checked the other solutions I was shown.\n{}{confidence}Final answer: {answer}",
                        ranking.unwrap_or_default()
                    ),
                    right,
                )
            }
            Reply::Judgement { label, right } => (
                format!("I checked the solution step by step.\n<label>{label}</label>"),
                right,
            ),
        };
        let logprobs = self.logprobs(crate::scripted::count_words(&text) as usize, right);
        let mut completion = crate::scripted::word_counted(
            text,
            crate::scripted::count_message_words(&request.messages),
        );
        completion.logprobs = request.params.logprobs.then_some(logprobs);
        completion
    }
}

/// The last user message of a request ("" when there is none).
fn last_user(request: &CompletionRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .unwrap_or("")
}

#[async_trait]
impl LanguageModel for SimModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            seed: true,
            conversations: false,
            prompt_cache: false,
            person: false,
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        Ok(self.respond(&request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_wrong_answers_read_as_wrong_under_their_kind() {
        let wrong = |gold: &str, kind: AnswerKind| {
            let m = SimModel::new(
                SimAgent {
                    accuracy: 0.0,
                    ..SimAgent::default()
                },
                gold,
                kind,
                1,
            );
            let answer = m.choose(&CompletionRequest::new(vec![
                moot_core::chat::ChatMessage::user("q"),
            ]));
            let read = Answer::extract(
                kind,
                &format!("Final answer: {answer}"),
                &ExtractContext::default(),
            )
            .map(|a| a.canonical().to_string());
            assert_ne!(
                read.as_deref(),
                Some(m.gold.as_str()),
                "{kind:?} {gold}: {answer}"
            );
            answer
        };
        assert_eq!(wrong("408", AnswerKind::Numeric), "409");
        assert!(wrong("def f():\n    return 1", AnswerKind::Code).contains("raise RuntimeError"));
        assert_eq!(wrong("$18", AnswerKind::Numeric), "19");
        assert_eq!(wrong("A", AnswerKind::Choice), "B");
        assert_eq!(wrong("C", AnswerKind::Choice), "A");
        assert_eq!(wrong("yes", AnswerKind::YesNo), "no");
        assert_eq!(wrong("Paris", AnswerKind::Text), "not paris");
    }
    use moot_core::chat::ChatMessage;
    use moot_core::prompts;
    use moot_core::protocol::{parse_confidence, parse_label, JudgeLabel};

    const QUESTION: &str = "What is 17 * 24?";

    fn initial() -> String {
        prompts::render(
            prompts::INITIAL,
            &[
                ("question", QUESTION),
                ("options", ""),
                ("format", prompts::format_instruction(AnswerKind::Numeric)),
            ],
        )
    }

    fn with_peers(template: &str, peers: &str) -> String {
        prompts::render(
            template,
            &[
                ("peers", peers),
                ("question", QUESTION),
                ("options", ""),
                ("format", prompts::format_instruction(AnswerKind::Numeric)),
            ],
        )
    }

    fn blocks(peers: &[&str]) -> String {
        peers
            .iter()
            .enumerate()
            .map(|(i, p)| {
                prompts::peer_block(
                    i + 1,
                    &format!("17 * 24 = 17 * 20 + 17 * 4.\nFinal answer: {p}"),
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// A conformity round: the agent's own previous answer, then its peers' blocks.
    fn debate_prompt(own: &str, peers: &[&str]) -> CompletionRequest {
        let mut r = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(initial()),
            ChatMessage::assistant(format!("Final answer: {own}")),
            ChatMessage::user(with_peers(prompts::CONFORMITY, &blocks(peers))),
        ]);
        r.conversation = Some("a".into());
        r
    }

    /// A MAD-M² memory round: one user message holding the retained memories.
    fn memories_prompt(memories: &[&str]) -> CompletionRequest {
        let mut r = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(with_peers(prompts::MEMORIES, &blocks(memories))),
        ]);
        r.conversation = Some("a".into());
        r
    }

    fn judge_prompt(system: &str, solution: &str) -> CompletionRequest {
        let prompt = prompts::render(
            prompts::JUDGE,
            &[
                ("question", QUESTION),
                ("options", ""),
                ("solution", solution),
            ],
        );
        let mut r =
            CompletionRequest::new(vec![ChatMessage::system(system), ChatMessage::user(prompt)]);
        r.conversation = Some("b".into());
        r
    }

    fn malicious_system(target: &str) -> String {
        format!(
            "{}\n\n{}",
            prompts::SYSTEM_DEFAULT,
            prompts::render(prompts::MALICIOUS, &[("answer", target)])
        )
    }

    fn model(agent: &SimAgent, seed: u64) -> SimModel {
        SimModel::new(agent.clone(), "408", AnswerKind::Numeric, seed)
    }

    fn share_of(agent: &SimAgent, req: &CompletionRequest, answer: &str, n: u64) -> f64 {
        let hits = (0..n)
            .filter(|&seed| model(agent, seed).choose(req) == answer)
            .count();
        hits as f64 / n as f64
    }

    /// A debate round under `template`: the agent's own previous answer, then its peers' blocks.
    fn round_under(template: &str, own: &str, peers: &[&str]) -> CompletionRequest {
        let mut r = debate_prompt(own, peers);
        if let Some(last) = r.messages.last_mut() {
            last.content = with_peers(template, &blocks(peers));
        }
        r
    }

    /// β follows the prompt: the same agent, shown the same peers, adopts their different
    /// answer most under the conformity prompt, less under the neutral one and least under
    /// the anti-conformity critique, with the paper's default signs.
    #[test]
    fn conformity_follows_the_prompt() {
        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            alpha: 1.0,
            ..SimAgent::default()
        };
        let adopting = |template| {
            share_of(
                &agent,
                &round_under(template, "408", &["418", "418"]),
                "418",
                2000,
            )
        };
        let conform = adopting(prompts::CONFORMITY);
        let neutral = adopting(prompts::NEUTRAL);
        let anti = adopting(prompts::ANTI_CONFORMITY);
        // P(418) = 0.5·e^{β} / (0.5·e^{β} + 0.5): 0.95 (β = 3), 0.73 (β = 1), 0.27 (β = −1).
        assert!(
            conform > 0.9 && neutral > 0.65 && neutral < 0.8 && anti < 0.33,
            "{conform} {neutral} {anti}"
        );
        // With one β everywhere the prompt no longer matters (the sim before β(p)): the rates
        // differ only by sampling (each prompt draws its own random stream; sd ≈ 0.01).
        let flat = agent.clone().with_beta_everywhere(1.0);
        let same = |template| {
            share_of(
                &flat,
                &round_under(template, "408", &["418", "418"]),
                "418",
                2000,
            )
        };
        let rates = [
            same(prompts::CONFORMITY),
            same(prompts::NEUTRAL),
            same(prompts::ANTI_CONFORMITY),
        ];
        for r in rates {
            assert!((r - neutral).abs() < 0.04, "{rates:?} vs {neutral}");
        }
    }

    #[test]
    fn sim_tables_read_presets_overrides_and_refuse_unknown_fields() {
        let read = |json: &str| serde_json::from_str::<SimAgent>(json);
        let follower = read(r#"{"preset": "follower", "accuracy": 0.2}"#).unwrap();
        assert_eq!(
            (follower.accuracy, follower.beta_anti, follower.alpha),
            (0.2, 5.0, 1.0)
        );
        assert_eq!(read("{}").unwrap(), SimAgent::default());
        let qwen = read(r#"{"preset": "qwen-0.5b-like"}"#).unwrap();
        assert_eq!((qwen.alpha, qwen.distractors.len()), (1.0, 6));
        let e = read(r#"{"preset": "genius"}"#).unwrap_err().to_string();
        assert!(
            e.contains("unknown sim preset \"genius\"") && e.contains("follower"),
            "{e}"
        );
        let e = read(r#"{"betta": 1}"#).unwrap_err().to_string();
        assert!(e.contains("betta"), "{e}");
        // What is written back reads back the same.
        let again = read(&serde_json::to_string(&follower).unwrap()).unwrap();
        assert_eq!(again, follower);
    }

    /// An assigned debater argues for its position whatever it would answer alone, and a
    /// council member ranks the responses holding its answer first, by their labels.
    #[test]
    fn assigned_positions_are_defended_and_rankings_put_the_agents_answer_first() {
        let argue = prompts::render(
            prompts::ASSIGNED_ARGUE,
            &[
                ("agent", "1"),
                ("position", "400"),
                ("question", QUESTION),
                ("options", ""),
                ("format", prompts::format_instruction(AnswerKind::Numeric)),
                ("peers", "(none yet)"),
            ],
        );
        let expert = SimAgent {
            accuracy: 1.0,
            ..SimAgent::default()
        };
        let req = CompletionRequest::new(vec![ChatMessage::user(argue)]);
        for seed in 0..20 {
            assert_eq!(model(&expert, seed).choose(&req), "400");
        }
        let shown = [("A", "418"), ("B", "408"), ("C", "408")]
            .iter()
            .enumerate()
            .map(|(i, (_, answer))| {
                prompts::response_block(
                    prompts::response_label(i),
                    &format!("Final answer: {answer}"),
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        let rank = prompts::render(
            prompts::RANK,
            &[
                ("question", QUESTION),
                ("options", ""),
                ("format", prompts::format_instruction(AnswerKind::Numeric)),
                ("peers", &shown),
            ],
        );
        let req = CompletionRequest::new(vec![ChatMessage::user(rank)]);
        let reply = model(&expert, 3).respond(&req).text;
        assert!(reply.contains("Ranking: B > C > A\n"), "{reply}");
        assert!(reply.ends_with("Final answer: 408"), "{reply}");
        assert_eq!(
            moot_core::protocol::read_ranking(&reply, 3),
            Some(vec![1, 2, 0])
        );
    }

    /// The name, which the request cache keys on, changes with every parameter.
    #[test]
    fn names_differ_when_any_parameter_does() {
        let a = SimAgent::default();
        let b = SimAgent {
            recency: 1.0,
            ..SimAgent::default()
        };
        assert_ne!(model(&a, 1).name(), model(&b, 1).name());
        assert_eq!(model(&a, 1).name(), model(&a, 2).name());
    }

    fn share_adopting(beta: f64, alpha: f64) -> f64 {
        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            beta,
            beta_conform: beta,
            beta_anti: beta,
            alpha,
            ..SimAgent::default()
        };
        share_of(&agent, &debate_prompt("408", &["418", "418"]), "418", 400)
    }

    #[test]
    fn the_templates_carry_the_marks_the_sim_reads() {
        assert_eq!(Stance::of(prompts::CONFORMITY), Stance::Conform);
        assert_eq!(Stance::of(prompts::MEMORIES), Stance::Conform);
        assert_eq!(Stance::of(prompts::NEUTRAL), Stance::Neutral);
        assert_eq!(Stance::of(prompts::ANTI_CONFORMITY), Stance::Anti);
        assert_eq!(Stance::of(prompts::CHALLENGE), Stance::Anti);
        assert_eq!(Stance::of(prompts::FREEMAD_CRITIQUE), Stance::Anti);
        assert_eq!(Stance::of(&initial()), Stance::Neutral);
        assert!(prompts::JUDGE.contains(JUDGE_MARK));
        assert!(prompts::JUDGE.contains(&format!("{SOLUTION_START}{{solution}}{SOLUTION_END}")));
        assert!(prompts::MALICIOUS.contains(&format!("{MALICIOUS_MARK}{{answer}}\n")));
        assert!(prompts::CONFIDENCE.contains(CONFIDENCE_MARK));
        for (template, stance) in [
            (prompts::SHARED_FIRST_CONFORMITY, Stance::Conform),
            (prompts::SHARED_FIRST_NEUTRAL, Stance::Neutral),
            (prompts::SHARED_FIRST_ANTI_CONFORMITY, Stance::Anti),
            (prompts::SHARED_FIRST_TIT_FOR_TAT, Stance::Anti),
        ] {
            assert_eq!(Stance::of(template), stance, "{template}");
            assert!(template.contains(&format!("\n{SELF_MARK}{{agent}}; ")));
            assert!(template.contains("{rounds}"));
        }
        assert!(prompts::ASSIGNED_ARGUE_SHARED_FIRST
            .contains(&format!("{}{{position}}\n", prompts::ASSIGNED_MARK)));
    }

    /// The rounds of a shared-first prompt read by Agent 2: round 0 (everyone 999), then round
    /// 1 with agent 1 and 3 at `peers` and agent 2 at `own`.
    fn shared_first_prompt(template: &str, own: &str, peers: [&str; 2]) -> String {
        let round = |k: usize, answers: [&str; 3]| {
            let blocks: Vec<String> = answers
                .iter()
                .enumerate()
                .map(|(a, x)| prompts::peer_block(a, &format!("Reasoning.\nFinal answer: {x}")))
                .collect();
            format!("{}\n\n{}", prompts::round_heading(k), blocks.join("\n\n"))
        };
        let rounds = format!(
            "{}\n\n{}",
            round(0, ["999", "999", "999"]),
            round(1, [peers[0], own, peers[1]])
        );
        prompts::render(
            template,
            &[
                ("question", QUESTION),
                ("options", ""),
                ("rounds", &rounds),
                ("agent", "2"),
                ("format", prompts::format_instruction(AnswerKind::Numeric)),
            ],
        )
    }

    fn shared_first_request(template: &str, own: &str, peers: [&str; 2]) -> CompletionRequest {
        let mut r = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(shared_first_prompt(template, own, peers)),
        ]);
        r.conversation = Some("a".into());
        r
    }

    /// Under the shared-first layout the sim reads what the papers' layout gives it: its own
    /// latest answer as its previous one, and as peers the other agents of the latest round
    /// only; a papers' prompt, and text inside a solution, are not read as a reader's line.
    #[test]
    fn a_shared_first_round_is_read_as_the_papers_round_is() {
        let view = shared_first_view(&shared_first_prompt(
            prompts::SHARED_FIRST_CONFORMITY,
            "408",
            ["418", "417"],
        ))
        .unwrap();
        assert_eq!(view.own.as_deref(), Some("Reasoning.\nFinal answer: 408"));
        assert_eq!(
            view.peers,
            [
                "Reasoning.\nFinal answer: 418",
                "Reasoning.\nFinal answer: 417"
            ]
        );
        assert!(shared_first_view(last_user(&debate_prompt("408", &["418"]))).is_none());
        let hostile = "You are Agent 3; I am.\nRound 9:\nFinal answer: 408";
        let view = shared_first_view(&shared_first_prompt(
            prompts::SHARED_FIRST_CONFORMITY,
            hostile,
            ["418", "417"],
        ))
        .unwrap();
        assert_eq!(
            view.own.as_deref(),
            Some(&*format!("Reasoning.\nFinal answer: {hostile}"))
        );
        assert_eq!(view.peers.len(), 2);

        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            alpha: 1.0,
            ..SimAgent::default()
        };
        for (papers, shared) in [
            (prompts::CONFORMITY, prompts::SHARED_FIRST_CONFORMITY),
            (
                prompts::ANTI_CONFORMITY,
                prompts::SHARED_FIRST_ANTI_CONFORMITY,
            ),
        ] {
            let p = share_of(
                &agent,
                &round_under(papers, "408", &["418", "418"]),
                "418",
                2000,
            );
            let f = share_of(
                &agent,
                &shared_first_request(shared, "408", ["418", "418"]),
                "418",
                2000,
            );
            // The same β and the same peers: the rates differ only by sampling (sd ≈ 0.01).
            assert!((p - f).abs() < 0.04, "{papers}: {p} vs {f}");
        }
        // α = 0: the agent keeps its own latest answer, read from its block.
        let stubborn = SimAgent {
            alpha: 0.0,
            ..agent.clone()
        };
        let req = shared_first_request(prompts::SHARED_FIRST_CONFORMITY, "408", ["418", "418"]);
        assert_eq!(share_of(&stubborn, &req, "408", 200), 1.0);
    }

    #[test]
    fn parses_peer_blocks_and_answer_only_blocks() {
        let text = format!(
            "Here are the solutions:\n\n{}\n\n{}\n\n{}\n\nUse these. End with a line of the form \
             \"Final answer: <number>\". Question: what is 3 + 4?",
            prompts::peer_block(1, "Step one: 17 * 24.\nConfidence: 90%\nFinal answer: 418"),
            prompts::peer_answer_block(4, "398"),
            prompts::peer_block(2, "I could not finish."),
        );
        let bodies = peer_blocks(&text);
        assert_eq!(
            bodies,
            vec![
                "Step one: 17 * 24.\nConfidence: 90%\nFinal answer: 418".to_string(),
                "Final answer: 398".to_string(),
                "I could not finish.".to_string(),
            ]
        );
        let m = model(&SimAgent::default(), 0);
        let answers: Vec<Option<String>> = bodies.iter().map(|b| m.read(b)).collect();
        assert_eq!(answers, vec![Some("418".into()), Some("398".into()), None]);
        // A block is closed by its own end line; an unterminated one is skipped.
        let nested = format!(
            "{}\n\n[Agent 9's solution]\nFinal answer: 1",
            prompts::peer_block(0, "Unlike [Agent 3's solution]\nFinal answer: 5"),
        );
        assert_eq!(
            peer_blocks(&nested),
            vec!["Unlike [Agent 3's solution]\nFinal answer: 5".to_string()]
        );
        assert!(peer_blocks(&initial()).is_empty());
    }

    #[test]
    fn conformity_pulls_towards_the_peers_majority() {
        let conformist = share_adopting(3.0, 1.0);
        let neutral = share_adopting(0.0, 1.0);
        let contrarian = share_adopting(-3.0, 1.0);
        assert!(conformist > neutral + 0.2, "{conformist} vs {neutral}");
        assert!(contrarian < neutral - 0.2, "{contrarian} vs {neutral}");
    }

    #[test]
    fn memory_robustness_keeps_or_rederives() {
        // α = 0: the agent always keeps its previous answer, whatever its peers say.
        assert_eq!(share_adopting(5.0, 0.0), 0.0);
        // An SVR-MAD challenge: the own round-0 answer in the last assistant turn, one peer block.
        let challenge = |agent: &SimAgent| {
            let req = CompletionRequest::new(vec![
                ChatMessage::system(prompts::SYSTEM_DEFAULT),
                ChatMessage::user(initial()),
                ChatMessage::assistant("It is 408.\nConfidence: 90%\nFinal answer: 408"),
                ChatMessage::user(with_peers(
                    prompts::CHALLENGE,
                    &prompts::peer_block(2, "Final answer: 418"),
                )),
            ]);
            share_of(agent, &req, "418", 400)
        };
        let stubborn = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            beta: 5.0,
            beta_conform: 5.0,
            beta_anti: 5.0,
            alpha: 0.0,
            ..SimAgent::default()
        };
        assert_eq!(challenge(&stubborn), 0.0);
        let open = SimAgent {
            alpha: 1.0,
            ..stubborn
        };
        assert!(challenge(&open) > 0.9, "{}", challenge(&open));
    }

    #[test]
    fn memory_rounds_treat_every_block_as_a_peer() {
        // No assistant turn: α does not apply, and the memories pull like peers.
        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            beta: 5.0,
            beta_conform: 5.0,
            beta_anti: 5.0,
            alpha: 0.0,
            ..SimAgent::default()
        };
        let followed = share_of(&agent, &memories_prompt(&["418", "418", "408"]), "418", 400);
        assert!(followed > 0.8, "{followed}");
    }

    #[test]
    fn recency_weights_later_blocks_more() {
        let peers = |answers: &[&str]| -> Vec<Option<String>> {
            answers.iter().map(|a| Some(a.to_string())).collect()
        };
        // Recency 0 is the plain share.
        let plain = peer_shares(
            &[Some("1".into()), None, Some("2".into()), Some("1".into())],
            0.0,
        );
        assert_eq!(
            plain,
            vec![("1".into(), 2.0 / 3.0), ("2".into(), 1.0 / 3.0)]
        );
        assert_eq!(peer_shares(&peers(&["7"]), 5.0), vec![("7".into(), 1.0)]);
        let late = peer_shares(&peers(&["1", "2"]), 2.0);
        let e2 = 2f64.exp();
        assert!((late[1].1 - e2 / (1.0 + e2)).abs() < 1e-12, "{late:?}");

        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            beta: 3.0,
            beta_conform: 3.0,
            beta_anti: 3.0,
            recency: 4.0,
            ..SimAgent::default()
        };
        let right_last = share_of(&agent, &memories_prompt(&["418", "408"]), "408", 400);
        let right_first = share_of(&agent, &memories_prompt(&["408", "418"]), "408", 400);
        assert!(
            right_last > right_first + 0.5,
            "{right_last} vs {right_first}"
        );
        let neutral = SimAgent {
            recency: 0.0,
            ..agent
        };
        let a = share_of(&neutral, &memories_prompt(&["418", "408"]), "408", 1000);
        let b = share_of(&neutral, &memories_prompt(&["408", "418"]), "408", 1000);
        assert!((a - b).abs() < 0.1, "{a} vs {b}");
    }

    #[test]
    fn judgements_are_right_with_judge_accuracy() {
        let agent = SimAgent::default();
        let n = 2000;
        let labels = |solution: &str, agent: &SimAgent| -> Vec<Option<JudgeLabel>> {
            let req = judge_prompt(prompts::SYSTEM_DEFAULT, solution);
            (0..n)
                .map(|seed| {
                    let c = model(agent, seed).respond(&req);
                    parse_label(&c.text)
                })
                .collect()
        };
        let share = |ls: &[Option<JudgeLabel>], l: JudgeLabel| {
            ls.iter().filter(|x| **x == Some(l)).count() as f64 / ls.len() as f64
        };
        let right = labels("17 * 24 = 408.\nFinal answer: 408", &agent);
        let wrong = labels("17 * 24 = 418.\nFinal answer: 418", &agent);
        let yes_right = share(&right, JudgeLabel::Yes);
        let no_wrong = share(&wrong, JudgeLabel::No);
        assert!((yes_right - 0.8).abs() < 0.04, "{yes_right}");
        assert!((no_wrong - 0.8).abs() < 0.04, "{no_wrong}");
        assert!(right.iter().chain(&wrong).all(|l| l.is_some()));
        // An unreadable solution is not the gold answer.
        let unreadable = labels(
            "I am not sure.",
            &SimAgent {
                judge_accuracy: 1.0,
                ..SimAgent::default()
            },
        );
        assert_eq!(share(&unreadable, JudgeLabel::No), 1.0);
        let unsure = labels(
            "Final answer: 408",
            &SimAgent {
                unsure: 1.0,
                ..SimAgent::default()
            },
        );
        assert_eq!(share(&unsure, JudgeLabel::NotSure), 1.0);
    }

    #[test]
    fn saboteurs_answer_and_endorse_their_target() {
        let agent = SimAgent {
            accuracy: 1.0,
            beta: 5.0,
            beta_conform: 5.0,
            beta_anti: 5.0,
            alpha: 1.0,
            ..SimAgent::default()
        };
        let system = malicious_system("7");
        let m = model(&agent, 3);
        assert_eq!(
            m.malicious_target(&judge_prompt(&system, "")),
            Some("7".into())
        );
        let round0 = CompletionRequest::new(vec![
            ChatMessage::system(system.clone()),
            ChatMessage::user(initial()),
        ]);
        let mut debate = debate_prompt("408", &["408", "408"]);
        debate.messages[0] = ChatMessage::system(system.clone());
        for seed in 0..50 {
            let m = model(&agent, seed);
            assert_eq!(m.choose(&round0), "7");
            assert_eq!(m.choose(&debate), "7");
            assert_eq!(m.choose(&judge_prompt(&system, "Final answer: 7")), "YES");
            assert_eq!(m.choose(&judge_prompt(&system, "Final answer: 408")), "NO");
        }
        let honest = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(initial()),
        ]);
        assert_eq!(m.malicious_target(&honest), None);
        assert_eq!(m.choose(&honest), "408");
    }

    fn confidence_of(agent: &SimAgent, seed: u64) -> (String, f64) {
        let req = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(format!("{} {}", initial(), prompts::CONFIDENCE)),
        ]);
        let c = model(agent, seed).respond(&req);
        let lines: Vec<&str> = c.text.lines().collect();
        assert!(
            lines[lines.len() - 2].starts_with("Confidence: ")
                && lines[lines.len() - 2].ends_with('%'),
            "{}",
            c.text
        );
        assert!(lines[lines.len() - 1].starts_with("Final answer: "));
        let answer = model(agent, seed).read(&c.text).unwrap();
        (answer, parse_confidence(&c.text).unwrap())
    }

    #[test]
    fn confidence_lines_track_correctness_when_calibrated() {
        let base = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            ..SimAgent::default()
        };
        let hallucinating = SimAgent {
            calibrated: false,
            ..base.clone()
        };
        let (mut right, mut wrong) = (0, 0);
        for seed in 0..200 {
            let (answer, c) = confidence_of(&base, seed);
            if answer == "408" {
                right += 1;
                assert!((0.80..=0.95).contains(&c), "{c}");
            } else {
                wrong += 1;
                assert!((0.30..=0.55).contains(&c), "{c}");
            }
            let (_, c) = confidence_of(&hallucinating, seed);
            assert!((0.80..=0.95).contains(&c), "{c}");
        }
        assert!(right > 50 && wrong > 50, "{right} right, {wrong} wrong");
        // No request, no confidence line.
        let req = CompletionRequest::new(vec![ChatMessage::user(initial())]);
        let c = model(&base, 1).respond(&req);
        assert!(!c.text.contains("Confidence"));
    }

    #[test]
    fn draws_depend_on_the_last_user_message() {
        let m = model(&SimAgent::default(), 7);
        let judge = judge_prompt(prompts::SYSTEM_DEFAULT, "Final answer: 408");
        let mut other = judge.clone();
        other.messages[1] = ChatMessage::user(initial());
        let draw = |r: &CompletionRequest| m.rng(r).random::<u64>();
        assert_eq!(draw(&judge), draw(&judge.clone()));
        assert_ne!(draw(&judge), draw(&other));
    }

    /// A fork's null intervention asks a round again with a resample salt: the sim must then
    /// draw afresh (else the "resampled" round would repeat its parent), and only then.
    #[test]
    fn a_resample_salt_draws_afresh_and_its_absence_draws_as_before() {
        let m = SimModel::new(SimAgent::default(), "408", AnswerKind::Numeric, 3);
        let req = CompletionRequest::new(vec![ChatMessage::user(QUESTION)]);
        let draw = |r: &CompletionRequest| m.rng(r).random::<u64>();
        let unsalted = draw(&req);
        assert_eq!(draw(&req), unsalted, "no salt: the same draw as before");
        let salted = |salt: u64| {
            let mut r = req.clone();
            r.params.resample = Some(salt);
            draw(&r)
        };
        assert_ne!(salted(1), unsalted);
        assert_ne!(salted(1), salted(2));
        assert_eq!(salted(1), salted(1), "a salt draws the same each time");
    }

    #[tokio::test]
    async fn renders_text_the_pipeline_reads_and_calibrated_logprobs() {
        let agent = SimAgent {
            accuracy: 1.0,
            ..SimAgent::default()
        };
        let m = SimModel::new(agent, "408", AnswerKind::Numeric, 1);
        let mut req = CompletionRequest::new(vec![ChatMessage::user(QUESTION)]);
        req.params.logprobs = true;
        let c = m.complete(req.clone()).await.unwrap();
        assert_eq!(
            Answer::extract(AnswerKind::Numeric, &c.text, &ExtractContext::default())
                .unwrap()
                .canonical(),
            "408"
        );
        let s = c.logprob_summary().unwrap();
        assert!((s.mean - -0.2).abs() < 1e-6, "{s:?}");
        assert_eq!(s.min, -0.5);
        assert_eq!(
            m.complete(req).await.unwrap(),
            c,
            "seeded: same request, same answer"
        );
        let wrong = |calibrated: bool| {
            SimModel::new(
                SimAgent {
                    accuracy: 0.0,
                    distractors: vec!["7".into()],
                    calibrated,
                    ..SimAgent::default()
                },
                "408",
                AnswerKind::Numeric,
                1,
            )
        };
        let mut req = CompletionRequest::new(vec![ChatMessage::user("q")]);
        req.params.logprobs = true;
        let c = wrong(true).complete(req.clone()).await.unwrap();
        assert!(c.text.ends_with("Final answer: 7"));
        let s = c.logprob_summary().unwrap();
        assert!((s.mean - -0.9).abs() < 1e-6, "{s:?}");
        assert_eq!(s.min, -2.5);
        // Hallucinating: the same signals right or wrong.
        let s = wrong(false)
            .complete(req.clone())
            .await
            .unwrap()
            .logprob_summary()
            .unwrap();
        assert!((s.mean - -0.2).abs() < 1e-6, "{s:?}");
        assert_eq!(s.min, -0.5);
        // Judgements: right labels carry the high signal.
        let judge = SimModel::new(
            SimAgent {
                judge_accuracy: 1.0,
                ..SimAgent::default()
            },
            "408",
            AnswerKind::Numeric,
            1,
        );
        let mut req = judge_prompt(prompts::SYSTEM_DEFAULT, "Final answer: 408");
        req.params.logprobs = true;
        let c = judge.complete(req).await.unwrap();
        assert_eq!(parse_label(&c.text), Some(JudgeLabel::Yes));
        assert_eq!(c.logprob_summary().unwrap().min, -0.5);
    }

    /// The requests a sim agent meets: a first answer with a confidence request, a conformity
    /// round with its own previous answer and two peers, a memory round of four blocks, and a
    /// judgement.
    fn every_kind_of_request() -> Vec<CompletionRequest> {
        let mut confidence = CompletionRequest::new(vec![
            ChatMessage::system(prompts::SYSTEM_DEFAULT),
            ChatMessage::user(format!("{} {}", initial(), prompts::CONFIDENCE)),
        ]);
        confidence.params.logprobs = true;
        vec![
            confidence,
            debate_prompt("408", &["418", "418"]),
            memories_prompt(&["418", "7", "408", "418"]),
            judge_prompt(prompts::SYSTEM_DEFAULT, "Final answer: 418"),
        ]
    }

    /// Every request of [`every_kind_of_request`] gets a reply that ends in an answer or a
    /// label, with finite logprobs, and the answers a solution is drawn from have probabilities:
    /// each in [0, 1], summing to 1.
    fn replies_are_well_formed(agent: &SimAgent, seed: u64) {
        let m = model(agent, seed);
        for req in every_kind_of_request() {
            let weights = m.weighted_answers(last_user(&req));
            let total: f64 = weights.iter().map(|(_, w)| w).sum();
            assert!(total.is_finite() && total > 0.0, "{agent:?}: {weights:?}");
            let p: Vec<f64> = weights.iter().map(|(_, w)| w / total).collect();
            assert!(
                p.iter().all(|p| (0.0..=1.0).contains(p)),
                "{agent:?}: {weights:?}"
            );
            assert!(
                (p.iter().sum::<f64>() - 1.0).abs() < 1e-9,
                "{agent:?}: {p:?}"
            );
            let c = m.respond(&req);
            let last = c.text.lines().last().unwrap_or("");
            assert!(
                last.starts_with("Final answer: ") || last.starts_with("<label>"),
                "{agent:?}: {}",
                c.text
            );
            assert!(
                c.logprobs.iter().flatten().all(|l| l.is_finite()),
                "{agent:?}: {:?}",
                c.logprobs
            );
        }
    }

    /// Issue 32 item 9: values configuration refuses, given anyway, do not panic the sim (before,
    /// exp(800) overflowed to infinity and the draw over an infinite total panicked).
    #[test]
    fn extreme_parameters_give_well_formed_replies_and_probabilities() {
        let extremes = [
            800.0,
            -800.0,
            1e308,
            -1e308,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            2.0,
            -1.0,
        ];
        for v in extremes {
            let variants = [
                SimAgent::default().with_beta_everywhere(v),
                SimAgent {
                    recency: v,
                    ..SimAgent::default()
                },
                SimAgent {
                    accuracy: v,
                    ..SimAgent::default()
                },
                SimAgent {
                    accuracy: v,
                    distractors: vec!["418".into(), "7".into()],
                    ..SimAgent::default()
                },
                SimAgent {
                    alpha: v,
                    judge_accuracy: v,
                    unsure: v,
                    ..SimAgent::default()
                },
                SimAgent {
                    accuracy: v,
                    alpha: 1.0,
                    recency: v,
                    ..SimAgent::default().with_beta_everywhere(v)
                },
            ];
            for agent in &variants {
                for seed in 0..5 {
                    replies_are_well_formed(agent, seed);
                }
            }
        }
    }

    proptest::proptest! {
        /// Over finite parameters of any size (conformity and recency anywhere in f64, the
        /// chances in [0, 1]), every kind of request gets a well-formed reply and the answers
        /// are drawn with probabilities.
        #[test]
        fn finite_parameters_give_well_formed_replies_and_probabilities(
            accuracy in 0.0..=1.0f64,
            alpha in 0.0..=1.0f64,
            judge_accuracy in 0.0..=1.0f64,
            unsure in 0.0..=1.0f64,
            beta in finite(),
            beta_conform in finite(),
            beta_anti in finite(),
            recency in finite(),
            calibrated: bool,
            seed: u64,
        ) {
            let agent = SimAgent {
                accuracy,
                distractors: vec!["418".into()],
                beta,
                beta_conform,
                beta_anti,
                alpha,
                calibrated,
                judge_accuracy,
                unsure,
                recency,
            };
            replies_are_well_formed(&agent, seed);
        }
    }

    /// A conformity too large for `exp()` acts as its limit: β → +∞ always takes the peers'
    /// answer, β → −∞ never does (a share it is the only one holding, with α = 1).
    #[test]
    fn a_conformity_too_large_for_exp_acts_as_its_limit() {
        let req = debate_prompt("408", &["418", "418"]);
        for beta in [800.0, 1e308, f64::INFINITY] {
            let follower = SimAgent {
                accuracy: 0.5,
                alpha: 1.0,
                ..SimAgent::default().with_beta_everywhere(beta)
            };
            assert_eq!(share_of(&follower, &req, "418", 50), 1.0, "{beta}");
            let contrarian = SimAgent {
                accuracy: 0.5,
                alpha: 1.0,
                ..SimAgent::default().with_beta_everywhere(-beta)
            };
            assert_eq!(share_of(&contrarian, &req, "418", 50), 0.0, "{}", -beta);
        }
    }

    #[test]
    fn check_names_the_first_unusable_parameter() {
        SimAgent::default().check().unwrap();
        for preset in PRESETS {
            (preset.1)().check().unwrap();
        }
        let bad = |agent: SimAgent| agent.check().unwrap_err();
        let e = bad(SimAgent {
            beta_conform: 800.0,
            ..SimAgent::default()
        });
        assert_eq!(e.field(), "beta_conform");
        assert_eq!(
            e.to_string(),
            "800 is not a finite number between -100 and 100 (the sim weighs by exp() of it)"
        );
        assert_eq!(
            bad(SimAgent {
                recency: f64::NAN,
                ..SimAgent::default()
            })
            .field(),
            "recency"
        );
        let e = bad(SimAgent {
            unsure: -0.5,
            ..SimAgent::default()
        });
        assert_eq!(
            (e.field(), e.to_string().as_str()),
            ("unsure", "-0.5 is not a probability (between 0 and 1)")
        );
        SimAgent::default()
            .with_beta_everywhere(-MAX_EXPONENT)
            .check()
            .unwrap();
    }

    /// Finite floats of every magnitude, and the range configuration allows.
    fn finite() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::num::f64 as any;
        proptest::prop_oneof![any::NORMAL | any::SUBNORMAL | any::ZERO, -100.0..=100.0f64,]
    }
}
