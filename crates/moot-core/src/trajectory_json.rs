//! The trajectory document `moot decide` reads: `{"answers": [[agent0 round0, agent0 round1,
//! …], [agent1 …], …]}`. A cell is an answer string, `null` (the agent responded without an
//! answer) or `{"missing": true}` (the agent gave no response that round).

use crate::answer::{Answer, AnswerKind, ExtractContext};
use crate::trajectory::{Cell, Trajectory};
use serde_json::Value;

/// Parses and validates a trajectory document; errors name the offending key or cell.
pub fn parse_trajectory(text: &str, kind: Option<AnswerKind>) -> Result<Trajectory, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(doc) = doc else {
        return Err("expected a JSON object with an \"answers\" key".into());
    };
    if let Some(k) = doc.keys().find(|k| k.as_str() != "answers") {
        return Err(format!("unknown key {k:?} (expected only \"answers\")"));
    }
    let rows = match doc.get("answers") {
        Some(Value::Array(rows)) => rows,
        Some(other) => {
            return Err(format!(
                "\"answers\" must be an array of rows, got {}",
                type_name(other)
            ))
        }
        None => return Err("missing key \"answers\"".into()),
    };
    if rows.is_empty() {
        return Err("\"answers\" is empty: a trajectory needs at least one agent".into());
    }
    let mut cells = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let Value::Array(row) = row else {
            return Err(format!(
                "answers[{i}] must be an array (one cell per round), got {}",
                type_name(row)
            ));
        };
        let mut parsed = Vec::with_capacity(row.len());
        for (j, cell) in row.iter().enumerate() {
            parsed.push(parse_cell(cell, kind).map_err(|e| format!("answers[{i}][{j}]: {e}"))?);
        }
        cells.push(parsed);
    }
    Trajectory::new(cells).map_err(|e| e.to_string())
}

fn parse_cell(cell: &Value, kind: Option<AnswerKind>) -> Result<Cell, String> {
    match cell {
        Value::Null => Ok(Cell::Answered(None)),
        Value::String(s) => match kind {
            None => Ok(Cell::Answered(Some(Answer::verbatim(s)))),
            Some(kind) => Answer::parse(kind, s, &ExtractContext::default())
                .map(|a| Cell::Answered(Some(a)))
                .ok_or_else(|| format!("{s:?} is not a {kind} answer (use null for no answer)")),
        },
        Value::Object(o) if o.len() == 1 && o.get("missing") == Some(&Value::Bool(true)) => {
            Ok(Cell::Missing)
        }
        other => Err(format!(
            "expected a string, null or {{\"missing\": true}}, got {}",
            type_name(other)
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
