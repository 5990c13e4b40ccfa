//! freemad's transcript, written from a run in moot's store: the JSON (or Markdown) file a
//! freemad user's scripts read, with the same keys (docs/freemad-reference.md §5).
//!
//! The store stays the source of truth; this is a view of a run. Where moot and freemad
//! differ, the view says what moot did: an answer is moot's reading of a reply (freemad's
//! contract for agents on it), scores are moot's FREE-MAD rule with the run's settings, and a
//! reply moot could not read has an empty solution and decision `KEEP` with `changed: false`
//! (freemad's own fallback), marked `"unparsed": 1.0` in its metadata.
//!
//! [`crate::import`] reads such files back into moot's records.
//!
//! Answer ids are freemad's: the first 16 hex digits of the SHA-256 of the answer's canonical
//! text, where a text with fenced code blocks stands for their bodies ([`answer_id`]).

use std::collections::{BTreeMap, BTreeSet};

use moot_core::contract::{self, Critique, Decision as ContractDecision, ReplyContract};
use moot_core::debate::{DebateSpec, Outcome, Transcript};
use moot_core::decision::{build_rule, Action, DecisionConfig};
use moot_core::protocol::CallNotes;
use moot_store::{CallRecord, RunRecord};
use serde_json::{json, Map, Value};

/// freemad's id of an answer text: CRLF/CR become LF, the text is trimmed, and a text holding
/// fenced code blocks (```` ```lang ```` on its own line … ```` ``` ````) stands for their
/// bodies, trimmed and joined by a blank line; then the first 16 hex digits of its SHA-256.
pub fn answer_id(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let canonical = canonical_text(text);
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A fenced code block's body: non-greedy and across lines, as freemad's pattern. Compiled once:
/// every answer id of a transcript goes through it.
static FENCE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?s)```[A-Za-z0-9_-]*\n(.*?)\n```")
        .unwrap_or_else(|_| unreachable!("the fence pattern is a valid regular expression"))
});

fn canonical_text(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text = text.trim();
    let bodies: Vec<&str> = FENCE
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str().trim()))
        .collect();
    if bodies.is_empty() {
        text.to_string()
    } else {
        bodies.join("\n\n").trim().to_string()
    }
}

/// What a run's freemad transcript is built from.
pub struct Run<'a> {
    pub record: &'a RunRecord,
    pub spec: &'a DebateSpec,
    pub calls: &'a [CallRecord],
    /// The run's FREE-MAD settings (weights, tie-break, normalisation).
    pub decision: &'a DecisionConfig,
    /// Secret patterns, for freemad's security validator.
    pub redact_patterns: &'a [String],
    /// freemad's `topology_info`, e.g. `{"type": "all_to_all"}` (`{}` to leave it out).
    pub topology_info: Value,
    /// The sandbox's checks of the run's code answers (empty for other runs): they stand in
    /// for freemad's `syntax` and `sandbox` validators.
    pub validations: &'a moot_core::validation::Validations,
}

/// One agent's turn in a round, as freemad writes it.
struct Turn {
    solution: String,
    reasoning: String,
    decision: &'static str,
    changed: bool,
    unparsed: bool,
}

impl Run<'_> {
    /// The transcript JSON, keys in freemad's order.
    pub fn json(&self) -> Value {
        let transcript = moot_engine::transcript_of(self.spec, self.calls);
        let answer_calls: Vec<&CallRecord> =
            self.calls.iter().filter(|c| c.slot == "answer").collect();
        let turns = self.turns(&transcript, &answer_calls);
        let normalized = self.scores(&transcript, self.decision.normalize);
        let raw = self.scores(&transcript, false);
        let final_answer = self.record.answer.clone().unwrap_or_default();
        let final_id = answer_id(&final_answer);
        let rounds = transcript.rounds();
        let holders = |round: usize| -> Vec<String> {
            (0..self.spec.agents.len())
                .filter(|&a| {
                    transcript
                        .get(round, a)
                        .and_then(Outcome::answer)
                        .is_some_and(|x| answer_id(x.canonical()) == final_id)
                })
                .map(|a| self.spec.agents[a].id.clone())
                .collect()
        };
        let mut holders_history = Map::new();
        for round in 0..rounds {
            holders_history.insert(round.to_string(), json!(holders(round)));
        }
        let origin = (0..rounds)
            .map(holders)
            .find(|h| !h.is_empty())
            .unwrap_or_default();
        let winners = holders(rounds.saturating_sub(1));
        let mut out = Map::new();
        out.insert("final_answer_id".into(), json!(final_id));
        out.insert("final_solution".into(), json!(final_answer));
        out.insert("scores".into(), Value::Object(normalized.finals.clone()));
        out.insert("raw_scores".into(), Value::Object(raw.finals));
        out.insert("winning_agents".into(), json!(winners));
        out.insert("origin_agents".into(), json!(origin));
        out.insert("holders_history".into(), Value::Object(holders_history));
        out.insert("early_stop_reason".into(), Value::Null);
        out.insert(
            "transcript".into(),
            json!((0..rounds)
                .map(|r| self.round_json(r, &turns, &answer_calls, &normalized.after_round))
                .collect::<Vec<_>>()),
        );
        let ids: BTreeSet<String> = normalized.finals.keys().cloned().collect();
        let solutions: BTreeMap<String, String> = turns
            .values()
            .map(|t| (answer_id(&t.solution), t.solution.clone()))
            .collect();
        let (validation, confidence) = self.validation(&ids, &solutions);
        // freemad: the winner's validators that passed, out of four.
        let pass_rate = validation[final_id.as_str()].as_object().map_or(0.0, |v| {
            v.values().filter(|c| c["passed"] == true).count() as f64 / 4.0
        });
        out.insert("validation".into(), validation);
        out.insert("validator_confidence".into(), confidence);
        out.insert("score_explainers".into(), normalized.explainers);
        out.insert(
            "metrics".into(),
            self.metrics(&turns, &normalized.finals, &winners, rounds, pass_rate),
        );
        Value::Object(out)
    }

    /// Every answer call's turn, by (round, agent).
    fn turns(
        &self,
        transcript: &Transcript,
        calls: &[&CallRecord],
    ) -> BTreeMap<(usize, usize), Turn> {
        let mut turns = BTreeMap::new();
        for c in calls {
            let (round, agent) = (c.round as usize, c.agent as usize);
            let held = |r: usize| {
                transcript
                    .get(r, agent)
                    .and_then(Outcome::answer)
                    .map(|a| a.canonical().to_string())
            };
            let answer = held(round);
            let previous = round.checked_sub(1).and_then(held);
            let text = c.response_text.clone().unwrap_or_default();
            let notes = CallNotes::from_json(&c.notes).unwrap_or_default();
            let freemad = self.spec.contract(agent) == ReplyContract::Freemad;
            let sections = contract::sections(&text);
            let reasoning = sections.iter().find(|(n, _)| n == "REASONING").map_or_else(
                || if freemad { String::new() } else { text.clone() },
                |(_, t)| t.clone(),
            );
            let unparsed = answer.is_none()
                || notes
                    .contract
                    .is_some_and(|n| n.decision == Some(ContractDecision::Unparsed));
            let changed = match notes.contract {
                Some(n) => n.changed,
                None => round > 0 && answer.is_some() && answer != previous,
            };
            let revised = freemad && matches!(contract::critique(&text), Critique::Revise(_));
            let decision = if round > 0 && (changed || revised) && !unparsed {
                "REVISE"
            } else {
                "KEEP"
            };
            turns.insert(
                (round, agent),
                Turn {
                    solution: answer.unwrap_or_default(),
                    reasoning,
                    decision,
                    changed: changed && !unparsed,
                    unparsed,
                },
            );
        }
        turns
    }

    fn round_json(
        &self,
        round: usize,
        turns: &BTreeMap<(usize, usize), Turn>,
        calls: &[&CallRecord],
        after_round: &[Map<String, Value>],
    ) -> Value {
        let mut agents = Map::new();
        for c in calls.iter().filter(|c| c.round as usize == round) {
            let agent = c.agent as usize;
            let Some(turn) = turns.get(&(round, agent)) else {
                continue;
            };
            let id = &self.spec.agents[agent].id;
            let peers: Vec<String> = c
                .peers
                .iter()
                .filter_map(|&p| self.spec.agents.get(p as usize).map(|a| a.id.clone()))
                .collect();
            let mut metadata = json!({
                "timings": {"elapsed_ms": c.latency_ms as f64, "cached": if c.cached { 1.0 } else { 0.0 }},
                "tokens": {"prompt": c.input_tokens, "output": c.output_tokens},
            });
            if turn.unparsed {
                metadata["unparsed"] = json!(1.0);
            }
            agents.insert(
                id.clone(),
                json!({
                    "response": {
                        "agent_id": id,
                        "solution": turn.solution,
                        "reasoning": turn.reasoning,
                        "decision": turn.decision,
                        "changed": turn.changed,
                        "answer_id": answer_id(&turn.solution),
                        "metadata": metadata,
                    },
                    "peers_assigned": peers,
                    "peers_assigned_count": peers.len(),
                    "peers_seen": peers,
                    "peers_seen_count": peers.len(),
                }),
            );
        }
        json!({
            "round": round,
            "type": if round == 0 { "generation" } else { "critique" },
            "agents": agents,
            "scores": after_round.get(round).cloned().unwrap_or_default(),
            "topology_info": self.topology_info,
            "deadline_hit_soft": false,
            "deadline_hit_hard": false,
        })
    }

    /// FREE-MAD's scores by answer id: final, after each round, and their explainers.
    fn scores(&self, transcript: &Transcript, normalize: bool) -> Scores {
        let config = DecisionConfig {
            normalize: false,
            ..self.decision.clone()
        };
        let decision = transcript
            .decided_part()
            .trajectory()
            .and_then(|t| build_rule("free-mad", &config).ok().map(|r| r.decide(&t)));
        let events = decision.map(|d| d.events).unwrap_or_default();
        let rounds = transcript.rounds();
        let mut raw: BTreeMap<String, f64> = BTreeMap::new();
        let mut contributors: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        let mut explainers: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut after_round = Vec::new();
        let mut next_round = 0;
        let snapshot = |raw: &BTreeMap<String, f64>, who: &BTreeMap<String, BTreeSet<usize>>| {
            raw.iter()
                .map(|(id, s)| {
                    let n = who.get(id).map_or(0, BTreeSet::len).max(1) as f64;
                    (id.clone(), json!(if normalize { s / n } else { *s }))
                })
                .collect::<Map<String, Value>>()
        };
        for e in events.iter().filter(|e| e.answer.is_some()) {
            while next_round < e.round {
                after_round.push(snapshot(&raw, &contributors));
                next_round += 1;
            }
            let (Some(answer), Some(agent)) = (&e.answer, e.agent) else {
                continue;
            };
            let id = answer_id(answer);
            let action = match e.action {
                Action::Initial => "initial",
                Action::Keep => "keep",
                Action::Abandon | Action::Adopt => "change",
                _ => continue,
            };
            *raw.entry(id.clone()).or_default() += e.delta;
            if e.action != Action::Abandon {
                contributors.entry(id.clone()).or_default().insert(agent);
            }
            let counts: Map<String, Value> = contributors
                .iter()
                .map(|(k, v)| (k.clone(), json!(v.len())))
                .collect();
            explainers.entry(id.clone()).or_default().push(json!({
                "round": e.round,
                "agent_id": self.spec.agents.get(agent).map_or("", |a| a.id.as_str()),
                "action": action,
                "deltas": {id: e.delta},
                "contributors": counts,
            }));
        }
        while next_round < rounds {
            after_round.push(snapshot(&raw, &contributors));
            next_round += 1;
        }
        Scores {
            finals: snapshot(&raw, &contributors),
            after_round,
            explainers: json!(explainers),
        }
    }

    /// freemad's four validators, as freemad 2.0.0 scores them with its sandbox off.
    fn validation(
        &self,
        ids: &BTreeSet<String>,
        solutions: &BTreeMap<String, String>,
    ) -> (Value, Value) {
        let secrets: Vec<regex::Regex> = self
            .redact_patterns
            .iter()
            .filter_map(|p| regex::Regex::new(p).ok())
            .collect();
        let mut validation = Map::new();
        let mut confidence = Map::new();
        for id in ids {
            let text = solutions.get(id).map_or("", String::as_str);
            let check = |passed: bool, conf: f64, warnings: Vec<&str>, metrics: Value| json!({"passed": passed, "confidence": conf, "errors": [], "warnings": warnings, "metrics": metrics});
            let syntax = if text.trim().is_empty() {
                check(false, 0.0, vec![], json!({}))
            } else if text.contains("SYNTAX_ERROR") {
                check(false, 0.2, vec![], json!({}))
            } else {
                check(
                    true,
                    0.7,
                    vec![],
                    json!({"length": text.chars().count() as f64}),
                )
            };
            let leaked = secrets.iter().any(|r| r.is_match(text));
            let security = if leaked {
                check(false, 0.3, vec!["possible secret"], json!({}))
            } else {
                check(true, 0.8, vec![], json!({}))
            };
            let (syntax, sandbox) = match self.checks_of(text) {
                Some(checks) => sandbox_checks(checks),
                None => (syntax, check(true, 0.5, vec![], json!({}))),
            };
            let all = json!({
                "syntax": syntax,
                "sandbox": sandbox,
                "security": security,
                "coverage": check(true, 0.5, vec![], json!({})),
            });
            let mean = ["syntax", "sandbox", "security", "coverage"]
                .iter()
                .map(|k| all[*k]["confidence"].as_f64().unwrap_or(0.0))
                .sum::<f64>()
                / 4.0;
            confidence.insert(id.clone(), json!(mean));
            validation.insert(id.clone(), all);
        }
        (Value::Object(validation), Value::Object(confidence))
    }

    /// moot's checks of the program a freemad solution text holds, when it was checked.
    fn checks_of(&self, solution: &str) -> Option<&Vec<moot_core::validation::Validation>> {
        if self.validations.is_empty() {
            return None;
        }
        // A solution is a bare program (moot's agents) or a freemad SOLUTION text with fences.
        let program = moot_core::answer::Answer::parse(
            moot_core::answer::AnswerKind::Code,
            solution,
            &Default::default(),
        )?;
        self.validations.get(program.canonical())
    }

    fn metrics(
        &self,
        turns: &BTreeMap<(usize, usize), Turn>,
        scores: &Map<String, Value>,
        winners: &[String],
        rounds: usize,
        pass_rate: f64,
    ) -> Value {
        let values: Vec<f64> = scores.values().filter_map(Value::as_f64).collect();
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let mean = if values.is_empty() {
            0.0
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        };
        let agents = self.spec.agents.len().max(1) as f64;
        json!({
            "num_rounds": rounds.saturating_sub(1) as f64,
            "num_agents": self.spec.agents.len() as f64,
            "deadline_soft_hits": 0.0,
            "deadline_hard_hits": 0.0,
            "opinion_changes": turns.values().filter(|t| t.changed).count() as f64,
            "agreement_rate": winners.len() as f64 / agents,
            "score_min": if values.is_empty() { 0.0 } else { min },
            "score_max": if values.is_empty() { 0.0 } else { max },
            "score_mean": mean,
            "validation_pass_rate": pass_rate,
        })
    }
}

struct Scores {
    finals: Map<String, Value>,
    after_round: Vec<Map<String, Value>>,
    explainers: Value,
}

/// freemad's Markdown transcript: a title, the final answer id and winners, then the JSON.
pub fn markdown(json: &Value, stamp: &str) -> String {
    let winners: Vec<&str> = json["winning_agents"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    format!(
        "# FREE-MAD Run {stamp}\n\nFinal answer id: {}\nWinning agents: {}\n\n## Transcript (JSON)\n```json\n{}\n```",
        json["final_answer_id"].as_str().unwrap_or_default(),
        winners.join(", "),
        serde_json::to_string_pretty(json).unwrap_or_default()
    )
}

/// freemad's `syntax` and `sandbox` validator entries from moot's real checks, with freemad's
/// confidences (syntax 0.7 passed / 0.2 failed; sandbox 0.8 passed, 0.2 timed out, 0.4 any other
/// failure, 0.5 not run) and moot's detail as the error.
fn sandbox_checks(checks: &[moot_core::validation::Validation]) -> (Value, Value) {
    use moot_core::validation::{CheckKind, Verdict};
    let entry = |kind: CheckKind, passed_conf: f64, failed_conf: f64| match checks
        .iter()
        .find(|c| c.check == kind)
    {
        None => {
            json!({"passed": true, "confidence": 0.5, "errors": [], "warnings": [], "metrics": {}})
        }
        Some(c) => {
            let conf = match c.verdict {
                Verdict::Passed => passed_conf,
                Verdict::TimedOut => 0.2,
                _ => failed_conf,
            };
            let errors: Vec<String> = if c.passed() {
                vec![]
            } else {
                vec![format!("{}: {}", c.verdict, c.detail)]
            };
            json!({
                "passed": c.passed(),
                "confidence": conf,
                "errors": errors,
                "warnings": [],
                "metrics": {"elapsed_ms": c.elapsed_ms as f64},
            })
        }
    };
    (
        entry(CheckKind::Syntax, 0.7, 0.2),
        entry(CheckKind::Tests, 0.8, 0.4),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_ids_are_freemads() {
        // Values freemad 2.0.0 printed for these texts (docs/freemad-reference.md §4.7).
        assert_eq!(answer_id("42"), "73475cb40a568e8d");
        assert_eq!(answer_id("  42\r\n"), "73475cb40a568e8d");
        assert_eq!(answer_id("```text\n\n42\n```"), "73475cb40a568e8d");
        assert_eq!(answer_id(""), "e3b0c44298fc1c14");
    }
}
