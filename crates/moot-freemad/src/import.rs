//! Reading freemad's transcript files back into moot's records, so that `moot decide --run`
//! re-decides freemad's debates under every rule.
//!
//! A transcript holds each agent's solution, decision and peers per round, but not the question
//! or the configuration: the run gets a question naming the file, freemad's default scoring
//! settings, and agents on freemad's reply contract. Each turn is stored as the reply that
//! contract reads back to the same answer (`SOLUTION:` in round 0, `DECISION: KEEP` or
//! `DECISION: REVISE` with `REVISED_SOLUTION:` after).

use moot_core::answer::AnswerKind;
use moot_core::chat::MAX_CALL_TOKENS;
use moot_core::contract::{ContractNote, Decision, ReplyContract};
use moot_core::debate::{AgentSpec, DebateSpec};
use moot_core::layout::Layout;
use moot_core::protocol::CallNotes;
use moot_store::{CallRecord, RunRecord, RunStatus};
use serde_json::{json, Value};

/// A freemad transcript as moot's run, calls and final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub run: RunRecord,
    pub calls: Vec<CallRecord>,
}

/// Why a file is not a freemad transcript moot can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotATranscript(pub String);

impl std::fmt::Display for NotATranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotATranscript {}

/// The JSON of a transcript file: the file itself, or the ```` ```json ```` block of freemad's
/// Markdown form.
pub fn transcript_json(text: &str) -> Result<Value, NotATranscript> {
    let body = match text.find("```json\n") {
        Some(start) => {
            let rest = &text[start + "```json\n".len()..];
            rest.rfind("\n```").map_or(rest, |end| &rest[..end])
        }
        None => text,
    };
    serde_json::from_str(body).map_err(|e| NotATranscript(format!("not JSON: {e}")))
}

/// How an imported run's question names its file: `(imported from the freemad transcript
/// PATH)`.
const QUESTION_START: &str = "(imported from the freemad transcript ";
const QUESTION_END: &str = ")";

/// The file an imported run's question names (as it was given to `moot import`), if it is one.
pub fn source_of(question: &str) -> Option<&str> {
    question
        .strip_prefix(QUESTION_START)?
        .strip_suffix(QUESTION_END)
}

/// The run `id` a transcript stands for, stamped `at`.
pub fn import(id: &str, source: &str, doc: &Value, at: &str) -> Result<Imported, NotATranscript> {
    let rounds = doc["transcript"]
        .as_array()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| NotATranscript("no `transcript` rounds".into()))?;
    // Agents in configuration order: the order of a critique round (freemad lists round 0 in
    // the order the agents finished), then any agent only round 0 has.
    let mut agents: Vec<String> = Vec::new();
    for round in rounds.iter().skip(1).chain(rounds.iter().take(1)) {
        for id in round["agents"]
            .as_object()
            .into_iter()
            .flat_map(|a| a.keys())
        {
            if !agents.contains(id) {
                agents.push(id.clone());
            }
        }
    }
    let spec = DebateSpec {
        question: format!("{QUESTION_START}{source}{QUESTION_END}"),
        kind: AnswerKind::Text,
        choices: vec![],
        agents: agents
            .iter()
            .map(|a| AgentSpec {
                contract: ReplyContract::Freemad,
                ..AgentSpec::named(a.clone())
            })
            .collect(),
        rounds: rounds.len() - 1,
        seed: 0,
        tests: None,
        layout: Layout::Papers,
        passage: None,
    };
    let mut calls = Vec::new();
    for (r, round) in rounds.iter().enumerate() {
        let entries = round["agents"]
            .as_object()
            .ok_or_else(|| NotATranscript(format!("round {r} has no `agents`")))?;
        for (agent_id, entry) in entries {
            let agent = agents
                .iter()
                .position(|a| a == agent_id)
                .unwrap_or_default();
            calls.push(call(id, r, agent, agent_id, entry, &agents, at)?);
        }
    }
    // freemad's scoring defaults (its transcript does not say which were used).
    let config = json!({"debate": {
        "protocol": "free-mad-n", "answer": "text", "decision": "free-mad",
        "weights": [20.0, 25.0, 30.0, 20.0], "normalize": true, "rounds": rounds.len() - 1,
    }});
    Ok(Imported {
        run: RunRecord {
            id: id.to_string(),
            created_at: at.to_string(),
            question: spec.question.clone(),
            protocol: "free-mad-n".into(),
            rule: "free-mad".into(),
            spec: serde_json::to_value(&spec).unwrap_or_default(),
            config,
            status: RunStatus::Done,
            answer: doc["final_solution"].as_str().map(str::to_string),
            finished_at: Some(at.to_string()),
            silent_ms: None,
            owner: None,
            fork: None,
        },
        calls,
    })
}

/// One turn of a transcript as the call that made it.
fn call(
    run: &str,
    round: usize,
    agent: usize,
    agent_id: &str,
    entry: &Value,
    agents: &[String],
    at: &str,
) -> Result<CallRecord, NotATranscript> {
    let response = &entry["response"];
    let solution = response["solution"].as_str().unwrap_or_default();
    let reasoning = response["reasoning"].as_str().unwrap_or_default();
    let revise = response["decision"].as_str() == Some("REVISE");
    let changed = response["changed"].as_bool().unwrap_or(false);
    let (mode, text, decision) = if round == 0 {
        (
            "generate",
            format!("SOLUTION: {solution}\nREASONING: {reasoning}"),
            None,
        )
    } else if revise && changed {
        (
            "critique",
            format!("DECISION: REVISE\nREVISED_SOLUTION: {solution}\nREASONING: {reasoning}"),
            Some(Decision::Revise),
        )
    } else {
        (
            "critique",
            format!("DECISION: KEEP\nREASONING: {reasoning}"),
            Some(Decision::Keep),
        )
    };
    let peers: Vec<u32> = entry["peers_seen"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|p| agents.iter().position(|a| a == p).map(|i| i as u32))
        .collect();
    let notes = CallNotes {
        ncomm: peers.len(),
        contract: Some(ContractNote { decision, changed }),
        ..CallNotes::default()
    };
    let place = format!("round {round}, agent {}", quoted(agent_id));
    let tokens = &response["metadata"]["tokens"];
    let input_tokens = token_count(tokens, "prompt", &place)?;
    let output_tokens = token_count(tokens, "output", &place)?;
    let latency_ms = elapsed_ms(&response["metadata"]["timings"]["elapsed_ms"], &place)?;
    Ok(CallRecord {
        agent_id: agent_id.to_string(),
        backend: "freemad".into(),
        mode: mode.into(),
        template: "freemad-import".into(),
        ncomm: peers.len() as u32,
        peers,
        answer: (!solution.trim().is_empty()).then(|| solution.to_string()),
        response_text: Some(text),
        input_tokens,
        output_tokens,
        latency_ms,
        recorded_at: at.to_string(),
        notes: serde_json::to_value(&notes).unwrap_or_default(),
        cached: response["metadata"]["timings"]["cached"].as_f64() == Some(1.0),
        ..CallRecord::empty(run, round as u32, agent as u32)
    })
}

/// `metadata.tokens.FIELD` of a turn (`place`): 0 when it is absent or null (a file written by
/// hand or an older freemad), else a whole number no call reaches past
/// [`MAX_CALL_TOKENS`]. Anything else is refused rather than read as 0 or stored wrapped: an
/// imported run's token counts are summed into reports.
fn token_count(tokens: &Value, field: &str, place: &str) -> Result<u64, NotATranscript> {
    match &tokens[field] {
        Value::Null => Ok(0),
        v => v.as_u64().filter(|n| *n <= MAX_CALL_TOKENS).ok_or_else(|| {
            NotATranscript(format!(
                "{place}: response.metadata.tokens.{field} is {}, not a token count (a whole number up to {MAX_CALL_TOKENS})",
                shown_value(v)
            ))
        }),
    }
}

/// The longest time a call can be said to have taken: 2^40 ms, some 35 years.
const MAX_ELAPSED_MS: f64 = (1u64 << 40) as f64;

/// `metadata.timings.elapsed_ms` of a turn (`place`), whole milliseconds: 0 when absent or
/// null, refused when it is not a time a call could take.
fn elapsed_ms(v: &Value, place: &str) -> Result<u64, NotATranscript> {
    match v {
        Value::Null => Ok(0),
        v => v
            .as_f64()
            .filter(|ms| (0.0..=MAX_ELAPSED_MS).contains(ms))
            .map(|ms| ms as u64)
            .ok_or_else(|| {
                NotATranscript(format!(
                    "{place}: response.metadata.timings.elapsed_ms is {}, not a time in milliseconds (0 to {MAX_ELAPSED_MS})",
                    shown_value(v)
                ))
            }),
    }
}

/// Text from the file as an error shows it: quoted, control characters escaped, cut short.
fn quoted(text: &str) -> String {
    const SHOWN: usize = 40;
    let mut shown: String = text.chars().take(SHOWN).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// A JSON value from the file as an error shows it: its JSON text, cut short.
fn shown_value(v: &Value) -> String {
    const SHOWN: usize = 40;
    let text = v.to_string();
    if text.chars().count() <= SHOWN {
        text
    } else {
        format!("{}…", text.chars().take(SHOWN).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-round transcript whose only turn says `tokens` and `elapsed_ms`.
    fn transcript(tokens: Value, elapsed_ms: Value) -> Value {
        json!({"final_solution": "42", "transcript": [{"round": 0, "agents": {"a0": {"response": {
            "solution": "42", "reasoning": "r",
            "metadata": {"timings": {"elapsed_ms": elapsed_ms}, "tokens": tokens}
        }}}}]})
    }

    fn imported(tokens: Value, elapsed_ms: Value) -> Result<Imported, NotATranscript> {
        import("fm-x", "x.json", &transcript(tokens, elapsed_ms), "t")
    }

    /// Issue 32 item 10: a count up to `u64::MAX` was taken as it was, stored as -1 and shown
    /// as 0; now the file is refused, naming the turn and the field.
    #[test]
    fn a_token_count_no_call_spends_is_refused_naming_the_turn_and_field() {
        let e = imported(json!({"prompt": u64::MAX, "output": 4}), json!(5.0)).unwrap_err();
        assert_eq!(
            e.0,
            "round 0, agent \"a0\": response.metadata.tokens.prompt is 18446744073709551615, not a token count (a whole number up to 4294967296)"
        );
        for bad in [
            json!(MAX_CALL_TOKENS + 1),
            json!(-1),
            json!(1.5),
            json!("12"),
        ] {
            let e = imported(json!({"prompt": 7, "output": bad}), json!(5.0)).unwrap_err();
            assert!(
                e.0.contains("response.metadata.tokens.output is "),
                "{bad}: {e}"
            );
        }
        let c = &imported(json!({"prompt": MAX_CALL_TOKENS}), json!(5.0))
            .unwrap()
            .calls[0];
        assert_eq!(
            (c.input_tokens, c.output_tokens),
            (MAX_CALL_TOKENS, 0),
            "the bound itself is taken; an absent count is 0"
        );
    }

    #[test]
    fn an_elapsed_time_no_call_takes_is_refused() {
        for bad in [json!(1e300), json!(-1.0), json!("5")] {
            let e = imported(json!({}), bad.clone()).unwrap_err();
            assert!(
                e.0.starts_with("round 0, agent \"a0\": response.metadata.timings.elapsed_ms is "),
                "{bad}: {e}"
            );
        }
        let c = &imported(json!({}), json!(5.7)).unwrap().calls[0];
        assert_eq!(c.latency_ms, 5);
    }

    #[test]
    fn text_from_the_file_is_shown_escaped_and_cut_short() {
        assert_eq!(quoted("a\u{1b}[2J"), "\"a\\u{1b}[2J\"");
        let long = "x".repeat(100);
        assert_eq!(quoted(&long), format!("\"{}…\"", "x".repeat(40)));
        assert_eq!(shown_value(&json!(long)).chars().count(), 41);
    }
}
