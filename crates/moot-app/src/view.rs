//! What the pages and the JSON API show of a stored run, built from the store's records alone
//! (pure: no I/O), so that a run written by `moot ask`, a benchmark or this server reads the
//! same. [`markdown`] writes the same records out for `moot show`, with the same program labels.

use std::collections::BTreeMap;

use moot_core::chat::{total_tokens, Usage};
use moot_store::{CallRecord, DecisionRecord, RunRecord, ValidationRecord};
use serde::Serialize;
use serde_json::Value;

pub mod markdown;

/// One cell of the rounds × agents grid.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub agent: u32,
    pub agent_id: String,
    /// The answer, `None` when the response had none or there was no response.
    pub answer: Option<String>,
    /// A short form of the answer for the grid (programs by their label).
    pub label: String,
    /// The agent held a different answer in its previous response.
    pub changed: bool,
    /// `responded`, `no answer`, `missing` or `skipped`.
    pub status: String,
    pub response: Option<String>,
    pub error: Option<String>,
    pub input_tokens: u64,
    /// Of the input tokens, those read from a prompt cache, and those written to one, when the
    /// backend said (see [`CacheCounts`]).
    #[serde(flatten)]
    pub prompt_cache: CacheCounts,
    pub output_tokens: u64,
    pub latency_ms: u64,
    pub cached: bool,
    /// The run this call was copied from (a fork reusing its parent's call at 0 tokens).
    pub reused_from: Option<String>,
    /// A fork put this text in the agent's place (`moot fork --say`): no model answered.
    pub injected: bool,
    /// Peers whose responses were in the prompt, numbered from 1.
    pub peers: Vec<u32>,
    /// Faults and protocol notes on the call, as lines.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Round {
    pub round: u32,
    /// One per agent, in agent order (`None`: the agent had no call this round).
    pub cells: Vec<Option<Cell>>,
    pub input_tokens: u64,
    #[serde(flatten)]
    pub prompt_cache: CacheCounts,
    pub output_tokens: u64,
    /// The slowest call of the round: what it cost in time.
    pub slowest_ms: u64,
}

/// One term of the chosen rule's score: who moved which answer's score, and by how much.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Contribution {
    pub round: Option<u64>,
    pub agent: Option<String>,
    pub action: String,
    pub answer: String,
    pub delta: f64,
}

/// A rule's decision on the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RuleDecision {
    pub rule: String,
    pub answer: Option<String>,
    pub chosen: bool,
    /// `answer: score` pairs, highest first.
    pub scores: Vec<(String, f64)>,
    pub tie: Option<String>,
}

/// Totals of one agent over the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentTotals {
    pub agent_id: String,
    pub backend: String,
    /// `judge`, `aggregator` or `chairman`; `None` for a debater.
    pub role: Option<String>,
    pub calls: usize,
    pub input_tokens: u64,
    #[serde(flatten)]
    pub prompt_cache: CacheCounts,
    pub output_tokens: u64,
    pub latency_ms: u64,
}

/// What providers' prompt caches did for some input tokens: how many were read from a cache
/// (billed at a fraction of the input price) and how many written to one (Anthropic bills
/// them at 1.25 times it); `None` when no call said.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Default)]
pub struct CacheCounts {
    pub cached_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
}

impl CacheCounts {
    pub fn of(usage: &Usage) -> CacheCounts {
        CacheCounts {
            cached_input_tokens: usage.cached_input_tokens(),
            cache_write_input_tokens: usage.cache_write_input_tokens,
        }
    }
}

/// A checked program (code runs).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Program {
    pub label: String,
    pub code: String,
    /// Every text the calls gave it as (formattings the rules count as one program).
    #[serde(skip)]
    pub texts: Vec<String>,
    /// `check verdict (detail)`, one per check.
    pub checks: Vec<String>,
    pub passed: bool,
}

/// Everything the run page shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunView {
    pub id: String,
    pub question: String,
    pub protocol: String,
    pub rule: String,
    pub status: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub answer: Option<String>,
    pub answer_label: Option<String>,
    pub agents: Vec<AgentTotals>,
    pub rounds: Vec<Round>,
    /// The chosen rule's terms, in order, and each answer's final score.
    pub why: Vec<Contribution>,
    pub rules: Vec<RuleDecision>,
    pub programs: Vec<Program>,
    /// Who reads whom in each round: `(round, agent, peers)` edges for the topology picture.
    pub edges: Vec<(u32, u32, u32)>,
    /// Faults the run injected, as lines.
    pub faults: Vec<String>,
    /// Each agent with failed calls, as a line naming its rounds and distinct errors.
    pub failures: Vec<String>,
    pub input_tokens: u64,
    #[serde(flatten)]
    pub prompt_cache: CacheCounts,
    pub output_tokens: u64,
    pub calls: usize,
}

/// A run's place among forks (`moot fork`): the run it was forked from, and the runs forked
/// from it.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Lineage {
    pub parent: Option<ForkLink>,
    pub forks: Vec<ForkLink>,
}

/// One end of a fork: the run, the round it was forked at and what changed there.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ForkLink {
    pub id: String,
    pub round: u32,
    /// The intervention in one line (`agent 2 says "…"`), for people.
    pub intervention: String,
    /// The fork's status and answer (`None` for a parent, which is not read).
    pub status: Option<String>,
    pub answer: Option<String>,
}

/// What the page and `moot show` say of `run`'s lineage, from its record and its `forks`.
pub fn lineage(run: &RunRecord, forks: &[RunRecord]) -> Lineage {
    let link = |origin: &moot_store::ForkOrigin, id: &str| ForkLink {
        id: id.to_string(),
        round: origin.round,
        intervention: describe_intervention(&origin.intervention),
        status: None,
        answer: None,
    };
    Lineage {
        parent: run.fork.as_ref().map(|o| link(o, &o.parent)),
        forks: forks
            .iter()
            .filter_map(|f| {
                let origin = f.fork.as_ref()?;
                Some(ForkLink {
                    status: Some(f.shown_status().to_string()),
                    answer: f.answer.clone(),
                    ..link(origin, &f.id)
                })
            })
            .collect(),
    }
}

/// A stored intervention in one line, or what it holds when this moot cannot read it.
pub fn describe_intervention(stored: &Value) -> String {
    match serde_json::from_value::<moot_core::fork::Intervention>(stored.clone()) {
        Ok(i) => i.describe(60),
        Err(_) => shorten(&stored.to_string(), 60),
    }
}

/// The run page's view of a stored run.
pub fn run_view(
    run: &RunRecord,
    calls: &[CallRecord],
    decisions: &[DecisionRecord],
    checks: &[ValidationRecord],
) -> RunView {
    let programs = programs(calls, checks);
    let label = |answer: &str| -> String {
        match programs
            .iter()
            .find(|p| p.code == answer || p.texts.iter().any(|t| t == answer))
        {
            Some(p) => p.label.clone(),
            None => shorten(answer, 60),
        }
    };
    let agents = agent_totals(calls, &roles(&run.spec));
    let answer_calls: Vec<&CallRecord> = calls.iter().filter(|c| c.slot == "answer").collect();
    // The rounds that have calls, not every number up to the largest: what is stored is data.
    let present: std::collections::BTreeSet<u32> = answer_calls.iter().map(|c| c.round).collect();
    let mut rounds = Vec::new();
    let mut edges = Vec::new();
    let mut faults = Vec::new();
    for r in present {
        let mut cells: Vec<Option<Cell>> = vec![None; agents.len()];
        for c in answer_calls.iter().filter(|c| c.round == r) {
            let before = answer_calls
                .iter()
                .filter(|p| p.agent == c.agent && p.round < r && p.response_text.is_some())
                .max_by_key(|p| p.round);
            let changed = match before {
                Some(b) => c.response_text.is_some() && b.answer != c.answer,
                None => false,
            };
            for p in &c.peers {
                edges.push((r, c.agent, *p));
            }
            let notes = note_lines(&c.notes);
            faults.extend(
                notes
                    .iter()
                    .filter(|n| n.starts_with("fault:") || n.starts_with("malicious:"))
                    .map(|n| format!("round {r}, {}: {n}", c.agent_id)),
            );
            let status = if c.skipped {
                "skipped"
            } else if c.response_text.is_none() {
                // No response after its retries: the error says why.
                "failed"
            } else if c.answer.is_none() {
                "no answer"
            } else {
                "responded"
            };
            if let Some(slot) = cells.get_mut(c.agent as usize) {
                *slot = Some(Cell {
                    agent: c.agent,
                    agent_id: c.agent_id.clone(),
                    label: c
                        .answer
                        .as_deref()
                        .map_or_else(|| format!("({status})"), label),
                    answer: c.answer.clone(),
                    changed,
                    status: status.into(),
                    response: c.response_text.clone(),
                    error: c.error.clone(),
                    input_tokens: c.input_tokens,
                    prompt_cache: CacheCounts::of(&call_usage(c)),
                    output_tokens: c.output_tokens,
                    latency_ms: c.latency_ms,
                    cached: c.cached,
                    reused_from: c.reused_from.clone(),
                    injected: moot_core::protocol::CallNotes::from_json(&c.notes)
                        .is_ok_and(|n| n.injected),
                    peers: c.peers.iter().map(|p| p + 1).collect(),
                    notes,
                });
            }
        }
        let in_round: Vec<&CallRecord> = calls.iter().filter(|c| c.round == r).collect();
        let usage = calls_usage(in_round.iter().copied());
        rounds.push(Round {
            round: r,
            cells,
            input_tokens: usage.input_tokens,
            prompt_cache: CacheCounts::of(&usage),
            output_tokens: usage.output_tokens,
            slowest_ms: in_round.iter().map(|c| c.latency_ms).max().unwrap_or(0),
        });
    }
    let ids: Vec<String> = agents.iter().map(|a| a.agent_id.clone()).collect();
    let rules: Vec<RuleDecision> = decisions
        .iter()
        .map(|d| rule_decision(d, d.rule == run.rule, &label))
        .collect();
    let why = decisions
        .iter()
        .find(|d| d.rule == run.rule)
        .map(|d| contributions(&d.decision.value(), &ids, &label))
        .unwrap_or_default();
    RunView {
        id: run.id.clone(),
        question: run.question.clone(),
        protocol: run.protocol.clone(),
        rule: run.rule.clone(),
        status: run.shown_status().into(),
        created_at: run.created_at.clone(),
        finished_at: run.finished_at.clone(),
        answer_label: run.answer.as_deref().map(label),
        answer: run.answer.clone(),
        input_tokens: total_tokens(calls.iter().map(|c| c.input_tokens)),
        prompt_cache: CacheCounts::of(&calls_usage(calls)),
        output_tokens: total_tokens(calls.iter().map(|c| c.output_tokens)),
        calls: calls.iter().filter(|c| !c.skipped).count(),
        agents,
        rounds,
        why,
        rules,
        programs,
        edges,
        faults,
        failures: moot_store::agent_failures(calls)
            .iter()
            .map(moot_store::AgentFailures::describe)
            .collect(),
    }
}

/// A stored call's token counts.
pub fn call_usage(c: &CallRecord) -> Usage {
    Usage {
        input_tokens: c.input_tokens,
        output_tokens: c.output_tokens,
        processed_input_tokens: c.processed_input_tokens,
        cache_write_input_tokens: c.cache_write_input_tokens,
    }
}

/// The token counts of `calls` together (saturating; see [`Usage`]'s sum for what a call that
/// said nothing of a cache adds).
pub fn calls_usage<'a>(calls: impl IntoIterator<Item = &'a CallRecord>) -> Usage {
    calls.into_iter().fold(Usage::default(), |mut sum, c| {
        sum += call_usage(c);
        sum
    })
}

/// Each agent's role as the stored spec names it (`None`: a debater, or a spec without roles).
pub fn roles(spec: &Value) -> Vec<Option<String>> {
    spec.get("agents")
        .and_then(Value::as_array)
        .map(|agents| {
            agents
                .iter()
                .map(|a| a.get("role").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn agent_totals(calls: &[CallRecord], roles: &[Option<String>]) -> Vec<AgentTotals> {
    let role = |agent: u32| roles.get(agent as usize).cloned().flatten();
    let mut by_agent: BTreeMap<u32, (AgentTotals, Usage)> = BTreeMap::new();
    for c in calls {
        let (t, usage) = by_agent.entry(c.agent).or_insert_with(|| {
            let mut t = no_calls(c.agent_id.clone(), role(c.agent));
            t.backend = c.backend.clone();
            (t, Usage::default())
        });
        if !c.skipped {
            t.calls += 1;
        }
        *usage += call_usage(c);
        t.input_tokens = usage.input_tokens;
        t.output_tokens = usage.output_tokens;
        t.prompt_cache = CacheCounts::of(usage);
        t.latency_ms = t.latency_ms.saturating_add(c.latency_ms);
    }
    // Agents are numbered from 0 without gaps; one with no call yet still gets its column.
    let n = by_agent.keys().max().map_or(0, |m| m + 1);
    (0..n)
        .map(|a| {
            by_agent
                .remove(&a)
                .map(|(t, _)| t)
                .unwrap_or_else(|| no_calls(format!("agent {}", a + 1), role(a)))
        })
        .collect()
}

/// The totals of an agent before any call.
fn no_calls(agent_id: String, role: Option<String>) -> AgentTotals {
    AgentTotals {
        agent_id,
        backend: String::new(),
        role,
        calls: 0,
        input_tokens: 0,
        prompt_cache: CacheCounts::default(),
        output_tokens: 0,
        latency_ms: 0,
    }
}

/// A program checked in the sandbox, with every text the calls gave it as.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedProgram<'a> {
    /// The text it was checked as.
    pub code: &'a str,
    /// Its texts: formattings the rules count as one program are one.
    pub texts: Vec<String>,
}

impl CheckedProgram<'_> {
    pub fn holds(&self, answer: &str) -> bool {
        self.code == answer || self.texts.iter().any(|t| t == answer)
    }
}

/// The programs `checks` covers, in the order the calls first gave them (then any the calls do
/// not hold), formattings of one program together: program `i` is labelled `P{i+1}` by the
/// run page and by `moot show`.
pub fn program_order<'a>(
    calls: &'a [CallRecord],
    checks: &'a [ValidationRecord],
) -> Vec<CheckedProgram<'a>> {
    if checks.is_empty() {
        return Vec::new();
    }
    let answers = calls.iter().filter_map(|c| c.answer.as_deref());
    let groups = moot_core::answer_groups::group_texts(
        moot_core::answer::AnswerKind::Code,
        answers.chain(checks.iter().map(|c| c.answer.as_str())),
    );
    groups
        .into_iter()
        .filter_map(|g| {
            let code = checks.iter().find(|c| g.holds(&c.answer))?.answer.as_str();
            Some(CheckedProgram {
                code,
                texts: g.texts,
            })
        })
        .collect()
}

/// Checked programs labelled `P1`, `P2` in order of first appearance in the calls.
fn programs(calls: &[CallRecord], checks: &[ValidationRecord]) -> Vec<Program> {
    program_order(calls, checks)
        .into_iter()
        .enumerate()
        .map(|(i, program)| {
            let code = program.code;
            let mine: Vec<&ValidationRecord> = checks.iter().filter(|c| c.answer == code).collect();
            Program {
                label: format!("P{}", i + 1),
                texts: program.texts,
                code: code.to_string(),
                checks: mine
                    .iter()
                    .map(|c| {
                        if c.detail.is_empty() {
                            format!("{} {}", c.check, c.verdict)
                        } else {
                            format!("{} {} ({})", c.check, c.verdict, c.detail)
                        }
                    })
                    .collect(),
                passed: mine.iter().all(|c| c.verdict == "passed"),
            }
        })
        .collect()
}

/// Text short enough for a cell: its first line, at most `n` characters, `…` when cut.
pub fn shorten(text: &str, n: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(n).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

fn rule_decision(d: &DecisionRecord, chosen: bool, label: &dyn Fn(&str) -> String) -> RuleDecision {
    let decision = d.decision.value();
    let mut scores: Vec<(String, f64)> = decision["scores"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((label(k), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    let tie = decision.get("tie").filter(|t| !t.is_null()).map(|t| {
        format!(
            "tie among {} broken {}",
            t["candidates"]
                .as_array()
                .map(|c| c
                    .iter()
                    .filter_map(Value::as_str)
                    .map(label)
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default(),
            t["broken_by"].as_str().unwrap_or("")
        )
    });
    RuleDecision {
        rule: d.rule.clone(),
        answer: d.answer.as_deref().map(label),
        chosen,
        scores,
        tie,
    }
}

fn contributions(
    decision: &Value,
    ids: &[String],
    label: &dyn Fn(&str) -> String,
) -> Vec<Contribution> {
    decision["explanation"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .map(|e| Contribution {
                    round: e["round"].as_u64(),
                    agent: e["agent"].as_u64().map(|a| {
                        ids.get(a as usize)
                            .cloned()
                            .unwrap_or_else(|| format!("agent {}", a + 1))
                    }),
                    action: e["action"].as_str().unwrap_or("").to_string(),
                    answer: e["answer"]
                        .as_str()
                        .map_or("(no answer)".to_string(), label),
                    delta: e["delta"].as_f64().unwrap_or(0.0),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A call's notes as lines, as `moot show` writes them (faults start with `fault:` or
/// `malicious:`).
fn note_lines(notes: &Value) -> Vec<String> {
    if notes.as_object().is_none_or(|m| m.is_empty()) {
        return Vec::new();
    }
    match moot_core::protocol::CallNotes::from_json(notes) {
        Ok(n) => n.describe(),
        Err(e) => vec![format!("the protocol's notes are unreadable: {e}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_store::RunStatus;
    use serde_json::json;

    fn call(round: u32, agent: u32, answer: Option<&str>) -> CallRecord {
        CallRecord {
            run_id: "r".into(),
            round,
            agent,
            slot: "answer".into(),
            agent_id: format!("a{agent}"),
            backend: "scripted".into(),
            mode: "generate".into(),
            template: "t".into(),
            template_hash: "h".into(),
            messages: json!([]),
            peers: if round == 0 { vec![] } else { vec![1 - agent] },
            response_text: Some(format!("Final answer: {}", answer.unwrap_or("?"))),
            answer: answer.map(str::to_string),
            error: None,
            skipped: false,
            finish: None,
            input_tokens: 10,
            output_tokens: 5,
            processed_input_tokens: None,
            cache_write_input_tokens: None,
            logprob_tokens: None,
            logprob_mean: None,
            logprob_min: None,
            perplexity: None,
            latency_ms: 100 + u64::from(agent),
            recorded_at: "t".into(),
            notes: json!({}),
            ncomm: 0,
            cached: false,
            retries: json!([]),
            request_key: None,
            reused_from: None,
        }
    }

    fn run() -> RunRecord {
        RunRecord {
            id: "r".into(),
            created_at: "2026-11-23T10:00:00Z".into(),
            question: "q".into(),
            protocol: "free-mad-n".into(),
            rule: "free-mad".into(),
            spec: json!({}),
            config: json!({}),
            status: RunStatus::Done,
            answer: Some("408".into()),
            finished_at: None,
            silent_ms: None,
            owner: None,
            fork: None,
        }
    }

    #[test]
    fn the_grid_marks_changes_and_the_why_names_agents() {
        let calls = vec![
            call(0, 0, Some("408")),
            call(0, 1, Some("418")),
            call(1, 0, Some("408")),
            call(1, 1, Some("408")),
        ];
        let decision = DecisionRecord {
            run_id: "r".into(),
            rule: "free-mad".into(),
            answer: Some("408".into()),
            decision: moot_store::DecisionJson::from_value(&json!({
                "scores": {"408": 70.0, "418": -5.0},
                "tie": null,
                "explanation": [
                    {"round": 0, "agent": 1, "action": "initial", "answer": "418", "delta": 20.0},
                    {"round": 1, "agent": 1, "action": "adopt", "answer": "408", "delta": 30.0}
                ]
            })),
            decided_at: "t".into(),
        };
        let v = run_view(&run(), &calls, &[decision], &[]);
        assert_eq!(v.rounds.len(), 2);
        let moved = v.rounds[1].cells[1].as_ref().unwrap();
        assert!(moved.changed);
        assert_eq!(moved.peers, vec![1]);
        assert!(!v.rounds[1].cells[0].as_ref().unwrap().changed);
        assert_eq!(v.rounds[1].slowest_ms, 101);
        assert_eq!(v.why[1].agent.as_deref(), Some("a1"));
        assert_eq!(v.why[1].action, "adopt");
        assert_eq!(v.rules[0].scores[0], ("408".to_string(), 70.0));
        assert!(v.rules[0].chosen);
        assert_eq!(v.agents[1].calls, 2);
        assert_eq!(v.edges, vec![(1, 0, 1), (1, 1, 0)]);
    }

    /// Issue 32 item 10: counts read from a store may be anything up to `u64::MAX` (an older
    /// moot stored what a file said); their totals stop at `u64::MAX` instead of wrapping to a
    /// small number (or panicking in a debug build).
    #[test]
    fn token_totals_past_u64_max_stop_at_it() {
        let huge = |round, agent| CallRecord {
            input_tokens: u64::MAX / 2 + 1,
            output_tokens: u64::MAX,
            latency_ms: u64::MAX,
            ..call(round, agent, Some("408"))
        };
        let calls = vec![huge(0, 0), huge(0, 1), huge(1, 0)];
        let v = run_view(&run(), &calls, &[], &[]);
        assert_eq!((v.input_tokens, v.output_tokens), (u64::MAX, u64::MAX));
        assert_eq!(
            (v.rounds[0].input_tokens, v.rounds[0].output_tokens),
            (u64::MAX, u64::MAX)
        );
        assert_eq!(v.rounds[1].input_tokens, u64::MAX / 2 + 1);
        assert_eq!(
            (
                v.agents[0].input_tokens,
                v.agents[0].output_tokens,
                v.agents[0].latency_ms
            ),
            (u64::MAX, u64::MAX, u64::MAX)
        );
    }

    #[test]
    fn programs_get_labels_everywhere() {
        let code = "def f():\n    return 1";
        let calls = vec![call(0, 0, Some(code)), call(0, 1, Some(code))];
        let checks = vec![ValidationRecord {
            run_id: "r".into(),
            answer: code.into(),
            check: "tests".into(),
            verdict: "failed".into(),
            detail: "AssertionError".into(),
            elapsed_ms: 3,
            checked_at: "t".into(),
        }];
        let mut r = run();
        r.answer = Some(code.into());
        let v = run_view(&r, &calls, &[], &checks);
        assert_eq!(v.answer_label.as_deref(), Some("P1"));
        assert_eq!(v.rounds[0].cells[0].as_ref().unwrap().label, "P1");
        assert_eq!(v.programs[0].checks, ["tests failed (AssertionError)"]);
        assert!(!v.programs[0].passed);
        assert_eq!(shorten("a long\nsecond line", 60), "a long…");
    }
}
