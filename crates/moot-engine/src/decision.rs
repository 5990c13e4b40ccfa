//! Deciding a transcript: every registered rule's decision, and the JSON a decision is stored
//! and printed as.

use moot_core::debate::{DebateSpec, Transcript};
use moot_core::decision::{build_rule, Decision, DecisionConfig, Evidence, RULES};
use moot_core::protocol::Protocol;
use moot_core::validation::{drop_failing, Validations};
use moot_store::DecisionJson;

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
/// `moot decide` prints — written straight to its text: a debate stores one per rule, and
/// building each as a `serde_json::Value` (a map per explanation event) cost more than the
/// rest of deciding.
pub fn decision_json(d: &Decision) -> DecisionJson {
    use serde::ser::{Serialize, SerializeMap, Serializer};

    /// Answer → score, each key once, where it first appeared, with its last score (as a
    /// JSON object built key by key would have it).
    struct Scores(Vec<(String, f64)>);
    impl Serialize for Scores {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (answer, score) in &self.0 {
                map.serialize_entry(answer, score)?;
            }
            map.end()
        }
    }
    #[derive(serde::Serialize)]
    struct Event<'a> {
        round: usize,
        agent: Option<usize>,
        action: moot_core::decision::Action,
        answer: &'a Option<String>,
        delta: f64,
    }
    #[derive(serde::Serialize)]
    struct Out<'a> {
        rule: &'a str,
        answer: Option<&'a str>,
        scores: Scores,
        no_answer_score: Option<f64>,
        tie: &'a Option<moot_core::decision::Tie>,
        explanation: Vec<Event<'a>>,
    }

    let mut scores: Vec<(String, f64)> = Vec::with_capacity(d.scores.len());
    let mut no_answer = None;
    for (key, score) in &d.scores {
        match key {
            Some(a) => {
                let answer = a.canonical();
                match scores.iter_mut().find(|(seen, _)| seen == answer) {
                    Some(entry) => entry.1 = tidy(*score),
                    None => scores.push((answer.to_string(), tidy(*score))),
                }
            }
            None => no_answer = Some(tidy(*score)),
        }
    }
    let out = Out {
        rule: d.rule,
        answer: d.answer.as_ref().map(|a| a.canonical()),
        scores: Scores(scores),
        no_answer_score: no_answer,
        tie: &d.tie,
        explanation: d
            .events
            .iter()
            .map(|e| Event {
                round: e.round,
                agent: e.agent,
                action: e.action,
                answer: &e.answer,
                delta: tidy(e.delta),
            })
            .collect(),
    };
    // Numbers, strings and options only: serialising cannot fail.
    let text = serde_json::to_string(&out).unwrap_or_else(|_| "null".into());
    DecisionJson::from_text(text)
        .unwrap_or_else(|_| DecisionJson::from_value(&serde_json::Value::Null))
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

#[cfg(test)]
mod tests {
    use super::*;
    use moot_core::answer::{Answer, AnswerKind, ExtractContext};
    use moot_core::decision::{Action, ScoreEvent, Tie};
    use serde_json::{json, Map, Value};

    /// The decision JSON as it was built before, through `serde_json::Value`: the text written
    /// now must be the same, byte for byte, or stored decisions would change shape.
    fn through_value(d: &Decision) -> String {
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
        .to_string()
    }

    fn answer(kind: AnswerKind, text: &str) -> Answer {
        Answer::parse(kind, text, &ExtractContext::default()).expect("a test answer parses")
    }

    fn event(
        round: usize,
        agent: Option<usize>,
        action: Action,
        answer: Option<&str>,
        delta: f64,
    ) -> ScoreEvent {
        ScoreEvent {
            round,
            agent,
            action,
            answer: answer.map(String::from),
            delta,
        }
    }

    #[test]
    fn the_decision_text_is_what_the_json_value_printed() {
        let n = |s| answer(AnswerKind::Numeric, s);
        let decisions = [
            Decision {
                rule: "free-mad",
                answer: Some(n("408")),
                // The same key twice: the first place, the last score.
                scores: vec![
                    (Some(n("408")), 20.0 / 3.0),
                    (None, -1.5),
                    (Some(n("400")), 0.1 + 0.2),
                    (Some(n("408")), 80.000_000_000_000_01),
                ],
                events: vec![
                    event(0, Some(0), Action::Initial, Some("408"), 20.0),
                    event(1, Some(1), Action::Abandon, Some("400"), -25.0 / 3.0),
                    event(1, None, Action::Normalize, None, f64::NAN),
                    event(
                        2,
                        Some(2),
                        Action::Adopt,
                        Some("a \"quoted\" \u{e9} answer"),
                        f64::INFINITY,
                    ),
                ],
                tie: Some(Tie {
                    candidates: vec!["408".into(), "400".into()],
                    broken_by: "last round".into(),
                }),
            },
            Decision {
                rule: "majority-last",
                answer: None,
                scores: Vec::new(),
                events: Vec::new(),
                tie: None,
            },
            Decision {
                rule: "verdict",
                answer: Some(answer(AnswerKind::Text, "Paris")),
                scores: vec![(Some(answer(AnswerKind::Text, "Paris")), 1.0), (None, 0.0)],
                events: vec![event(3, Some(4), Action::Vote, Some("Paris"), 1.0)],
                tie: None,
            },
        ];
        for d in &decisions {
            let text = decision_json(d);
            assert_eq!(text.text(), through_value(d), "{}", d.rule);
            // And it reads back as the value it was.
            assert_eq!(text.value().to_string(), through_value(d));
        }
    }
}
