//! Deciding a transcript: every registered rule's decision, and the JSON a decision is stored
//! and printed as.

use moot_core::debate::{DebateSpec, Transcript};
use moot_core::decision::{build_rule, Decision, DecisionConfig, Evidence, RULES};
use moot_core::protocol::Protocol;
use moot_core::validation::{drop_failing, Validations};

/// Every registered rule's decision on a transcript, with the evidence its protocol derives.
/// With `config.require_passing`, code answers whose checks failed (`validations`) lose before
/// any rule scores.
pub fn decide_all(
    protocol: &dyn Protocol,
    spec: &DebateSpec,
    transcript: &Transcript,
    validations: &Validations,
    config: &DecisionConfig,
) -> Vec<Decision> {
    let decided = transcript.decided_part();
    decide_all_with(
        &decided,
        &protocol.evidence(spec, &decided),
        validations,
        config,
    )
}

/// Every registered rule's decision on a transcript, with the given evidence (for runs whose
/// protocol cannot be rebuilt: [`Evidence::from_transcript`](moot_core::decision::Evidence)).
pub fn decide_all_with(
    transcript: &Transcript,
    evidence: &Evidence,
    validations: &Validations,
    config: &DecisionConfig,
) -> Vec<Decision> {
    let transcript = transcript.decided_part();
    let Some(trajectory) = transcript.trajectory() else {
        return Vec::new();
    };
    let trajectory = if config.require_passing {
        drop_failing(&trajectory, validations)
    } else {
        trajectory
    };
    RULES
        .iter()
        .filter_map(|r| build_rule(r.name, config).ok())
        .map(|rule| rule.decide_with(&trajectory, evidence))
        .collect()
}

/// `{"rule", "answer", "scores", "no_answer_score", "tie", "explanation"}` — the same shape
/// `moot decide` prints.
pub fn decision_json(d: &Decision) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut scores = Map::new();
    let mut no_answer = None;
    for (key, score) in &d.scores {
        match key {
            Some(a) => {
                scores.insert(a.canonical().to_string(), json!(tidy(*score)));
            }
            None => no_answer = Some(tidy(*score)),
        }
    }
    let explanation: Vec<Value> = d
        .events
        .iter()
        .map(|e| {
            let mut v = json!(e);
            v["delta"] = json!(tidy(e.delta));
            v
        })
        .collect();
    json!({
        "rule": d.rule,
        "answer": d.answer.as_ref().map(|a| a.canonical()),
        "scores": scores,
        "no_answer_score": no_answer,
        "tie": d.tie,
        "explanation": explanation,
    })
}

/// Scores are short sums of fractions like 20/3; 9 decimals hide float noise
/// (80.00000000000001) without hiding any real difference.
fn tidy(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1e9).round() / 1e9
    } else {
        x
    }
}
