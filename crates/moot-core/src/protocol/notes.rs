//! Call notes: what the transcript records about how a call's prompt was assembled (masks,
//! speaking order, faults, skips, prompt cuts, re-asks). Owns [`CallNotes`] and the notes no
//! single protocol owns; the protocol-specific parts come from the lower modules of their
//! protocols ([`MaskNote`], [`OrderNote`], [`ChallengeNote`]).
//!
//! Notes are stored as JSON and read back by resume and `moot show`, so every note type both
//! serialises and deserialises, and a value read back equals the one written. Fields left out
//! when empty default on reading, and [`CallNotes`] as a whole defaults missing fields and
//! ignores unknown ones, so notes written by older or newer runs still read.

use serde::{Deserialize, Serialize};

use super::challenge::ChallengeNote;
use super::masking::MaskNote;
use super::speaking_order::OrderNote;
use crate::debate::DebateSpec;
use crate::faults::{Delivery, Faults};

/// What the transcript records about how a call's prompt was assembled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CallNotes {
    /// Pairwise context transfers: peer messages placed in this prompt (SVR-MAD's NComm).
    pub ncomm: usize,
    /// Peer messages a fault changed or removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultNote>,
    /// The wrong answer this agent was instructed to argue for (the `malicious` fault).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malicious: Option<String>,
    /// MAD-M²: each candidate memory and whether it was kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<MaskNote>,
    /// MADC (and any protocol with an ordering): the speaking order of the round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering: Option<OrderNote>,
    /// GroupDebate: peers from other groups, of whom only the final answer was shown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers_only: Vec<usize>,
    /// S2-MAD: peers not shown because they hold the agent's own answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<usize>,
    /// SVR-MAD: the challenge this call answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub challenge: Option<ChallengeNote>,
    /// `assigned` and `consultancy`: the answer this debater was assigned to defend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<String>,
    /// `council`: the agents whose responses the prompt shows as Response A, B, … in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anonymised: Vec<usize>,
    /// The protocol recorded this call without asking the model, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Skipped because the deciding agent ended the debate after this round (`judge`'s
    /// adaptive break).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_after: Option<usize>,
    /// The call may rightly give no answer (a judge's look at the debate that lets it go on),
    /// so it is not re-asked for a final line.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub answer_optional: bool,
    /// The prompt was cut to fit the prompt budget (estimated tokens before and after).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cut: Option<PromptCut>,
    /// The response had no readable answer, so the agent was asked once more for just its final
    /// line: what it said then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reask: Option<ReaskNote>,
    /// freemad's reply contract: the decision read and whether the answer changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<crate::contract::ContractNote>,
    /// The response is text a fork put in the agent's place (`moot fork --say`, see
    /// [`crate::fork`]): no model was asked, and it has no token log-probabilities.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
}

/// The one re-ask of a response without a readable answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaskNote {
    /// The reply to the format reminder, when there was one.
    pub reply: Option<String>,
    /// Why there was no reply.
    pub error: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those the backend really processed (the rest came from its prompt
    /// cache), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed_input_tokens: Option<u64>,
    /// Of those, the tokens the provider wrote to its prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
}

/// A prompt cut to fit the engine's prompt budget: the middle of its longest message was
/// replaced by a marker saying how much was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCut {
    pub from_tokens: u64,
    pub to_tokens: u64,
}

/// A peer message a fault changed or removed: the peer, and the delivery's fields inline
/// (`{"peer": 1, "fate": "delayed", "from_round": 0}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultNote {
    pub peer: usize,
    #[serde(flatten)]
    pub delivery: Delivery,
}

impl CallNotes {
    /// Notes for a call of `agent`, with the malicious fault's target when it applies.
    pub(crate) fn for_agent(spec: &DebateSpec, faults: &Faults, agent: usize) -> CallNotes {
        CallNotes {
            malicious: faults
                .malicious_target(agent, spec.agents.len(), spec.seed)
                .map(str::to_string),
            ..CallNotes::default()
        }
    }

    /// Notes as stored (the JSON of [`CallNotes`]'s serialisation), read back. Missing fields
    /// take their defaults and unknown ones are ignored; a field of the wrong type is an error.
    pub fn from_json(value: &serde_json::Value) -> Result<CallNotes, serde_json::Error> {
        CallNotes::deserialize(value)
    }
}

impl CallNotes {
    /// What the protocol did to the call's prompt, a line each, for people: re-asks, the
    /// freemad contract, prompt cuts, faults, masks, orderings, pruned and answers-only peers,
    /// challenges. Faults start with `fault:` or `malicious:`.
    pub fn describe(&self) -> Vec<String> {
        let notes = self;
        let mut lines = Vec::new();
        if notes.injected {
            lines.push(
                "injected by a fork: this text was put in the agent's place, no model was asked"
                    .to_string(),
            );
        }
        if let Some(reask) = &notes.reask {
            let said = match (&reask.reply, &reask.error) {
                (Some(reply), _) => format!("replied {:?}", reply.trim()),
                (None, Some(e)) => format!("failed: {e}"),
                (None, None) => "no reply".into(),
            };
            lines.push(format!(
                "no readable answer, so re-asked once for the final line: {said}"
            ));
        }
        if let Some(contract) = &notes.contract {
            let decision = match contract.decision {
                None => "first answer".to_string(),
                Some(crate::contract::Decision::Keep) => "decision KEEP".into(),
                Some(crate::contract::Decision::Revise) => "decision REVISE".into(),
                Some(crate::contract::Decision::Unparsed) => {
                    "no readable decision (raw reply kept below)".into()
                }
            };
            let changed = if contract.changed {
                "changed"
            } else {
                "unchanged"
            };
            lines.push(format!("freemad contract: {decision}, answer {changed}"));
        }
        if let Some(cut) = &notes.prompt_cut {
            lines.push(format!(
                "prompt cut to fit the budget: {} → {} estimated tokens",
                cut.from_tokens, cut.to_tokens
            ));
        }
        if let Some(answer) = &notes.malicious {
            lines.push(format!("malicious: instructed to argue for {answer}"));
        }
        if let Some(position) = &notes.position {
            lines.push(format!("assigned to defend {position}"));
        }
        if !notes.anonymised.is_empty() {
            let shown: Vec<String> = notes
                .anonymised
                .iter()
                .enumerate()
                .map(|(i, a)| format!("{} = agent {}", crate::prompts::response_label(i), a + 1))
                .collect();
            lines.push(format!("anonymous labels: {}", shown.join(", ")));
        }
        if let Some(order) = &notes.ordering {
            let consistency = order
                .consistency
                .as_ref()
                .map(|c| {
                    format!(
                        "; consistency {}",
                        c.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .unwrap_or_default();
            lines.push(format!(
                "ordering {}: speaking order {} (last = most influential){consistency}",
                serde_json::to_value(order.policy)
                    .ok()
                    .and_then(|p| p.as_str().map(str::to_string))
                    .unwrap_or_default(),
                numbered_list(&order.order)
            ));
        }
        if !notes.masks.is_empty() {
            let parts: Vec<String> = notes
                .masks
                .iter()
                .map(|m| {
                    format!(
                        "agent {} {} ({})",
                        m.author + 1,
                        if m.kept { "kept" } else { "masked" },
                        m.why
                    )
                })
                .collect();
            lines.push(format!("memories: {}", parts.join("; ")));
        }
        for f in &notes.faults {
            let peer = f.peer + 1;
            let what = match f.delivery {
                Delivery::CutOff => format!("cut off: agent {peer}'s message not received"),
                Delivery::Dropped => format!("agent {peer}'s message dropped"),
                Delivery::Delayed { from_round } => {
                    format!(
                        "agent {peer}'s message delayed (its round-{from_round} response shown)"
                    )
                }
                Delivery::Delivered { from_round } => {
                    format!("agent {peer}: delivered from round {from_round}")
                }
            };
            lines.push(format!("fault: {what}"));
        }
        if !notes.answers_only.is_empty() {
            lines.push(format!(
                "other groups (final answers only): {} {}",
                crate::text::noun_for(notes.answers_only.len(), "agent"),
                numbered_list(&notes.answers_only)
            ));
        }
        if !notes.pruned.is_empty() {
            lines.push(format!(
                "not shown (same answer, s2-mad): {} {}",
                crate::text::noun_for(notes.pruned.len(), "agent"),
                numbered_list(&notes.pruned)
            ));
        }
        if let Some(ch) = &notes.challenge {
            lines.push(format!(
                "challenge: receiver score {:.3} · budget left {}",
                ch.receiver_score, ch.budget_left
            ));
        }
        lines
    }
}

/// Agent indices as people count them (from 1), comma-separated.
fn numbered_list(agents: &[usize]) -> String {
    agents
        .iter()
        .map(|a| (a + 1).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;
    use serde_json::json;

    use super::*;
    use crate::protocol::{Ordering, Prior};

    /// Serialises `value`, reads it back from the JSON text, and checks it is equal and
    /// re-serialises to the same text; returns the JSON.
    fn round_trip<T>(value: &T) -> serde_json::Value
    where
        T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let text = serde_json::to_string(value).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, value, "{text}");
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        serde_json::to_value(value).unwrap()
    }

    fn reask() -> ReaskNote {
        ReaskNote {
            reply: Some("Final answer: 408".into()),
            error: None,
            input_tokens: 120,
            output_tokens: 7,
            processed_input_tokens: Some(20),
            cache_write_input_tokens: None,
        }
    }

    fn order() -> OrderNote {
        OrderNote {
            policy: Ordering::ConsistencyLast,
            order: vec![0, 3, 2, 1],
            consistency: Some(vec![0, 1, 1, 0]),
        }
    }

    fn challenge() -> ChallengeNote {
        ChallengeNote {
            receiver: 2,
            challenger: 0,
            // exp(−1), with all 17 significant digits, as exp(min log-likelihood) gives.
            receiver_score: 0.367_879_441_171_442_33,
            budget_left: 6,
        }
    }

    fn full() -> CallNotes {
        CallNotes {
            position: Some("408".into()),
            anonymised: vec![2, 0],
            ncomm: 2,
            faults: vec![
                FaultNote {
                    peer: 1,
                    delivery: Delivery::Delayed { from_round: 0 },
                },
                FaultNote {
                    peer: 3,
                    delivery: Delivery::Dropped,
                },
            ],
            malicious: Some("17".into()),
            masks: vec![MaskNote {
                author: 1,
                kept: false,
                why: "judged NO by agent 3".into(),
            }],
            ordering: Some(order()),
            answers_only: vec![4],
            pruned: vec![5],
            challenge: Some(challenge()),
            skipped: Some("s2-mad: every peer agrees".into()),
            ended_after: Some(1),
            answer_optional: true,
            prompt_cut: Some(PromptCut {
                from_tokens: 9000,
                to_tokens: 4000,
            }),
            reask: Some(reask()),
            contract: Some(crate::contract::ContractNote {
                decision: Some(crate::contract::Decision::Revise),
                changed: true,
            }),
            injected: false,
        }
    }

    /// A fork's injected response is marked in its notes, under this name; notes without the
    /// mark (every call a model answered) read as not injected and are stored without it.
    #[test]
    fn the_injected_mark_reads_back_and_is_left_out_when_unset() {
        let marked = CallNotes {
            injected: true,
            ..CallNotes::default()
        };
        let stored = serde_json::to_value(&marked).unwrap();
        assert_eq!(stored["injected"], json!(true));
        assert_eq!(CallNotes::from_json(&stored).unwrap(), marked);
        assert!(marked.describe()[0].starts_with("injected by a fork"));
        let plain = serde_json::to_value(CallNotes::default()).unwrap();
        assert!(plain.get("injected").is_none());
        assert!(!CallNotes::from_json(&json!({"ncomm": 1})).unwrap().injected);
    }

    #[test]
    fn reask_note_round_trips() {
        round_trip(&reask());
        let bare = ReaskNote {
            reply: None,
            error: Some("timeout".into()),
            processed_input_tokens: None,
            cache_write_input_tokens: None,
            ..reask()
        };
        let v = round_trip(&bare);
        assert!(v.get("processed_input_tokens").is_none());
        assert!(
            v["reply"].is_null(),
            "reply and error are written even when absent"
        );
    }

    #[test]
    fn fault_notes_round_trip_with_every_fate() {
        for delivery in [
            Delivery::Delivered { from_round: 1 },
            Delivery::Delayed { from_round: 0 },
            Delivery::CutOff,
            Delivery::Dropped,
        ] {
            round_trip(&FaultNote { peer: 2, delivery });
        }
        let v = round_trip(&FaultNote {
            peer: 2,
            delivery: Delivery::CutOff,
        });
        assert_eq!(v, json!({"peer": 2, "fate": "cut-off"}));
    }

    #[test]
    fn mask_note_round_trips() {
        round_trip(&MaskNote {
            author: 0,
            kept: true,
            why: "perplexity 1.234".into(),
        });
    }

    #[test]
    fn order_note_round_trips_with_and_without_consistency() {
        round_trip(&order());
        for policy in [
            Ordering::Fixed,
            Ordering::Random,
            Ordering::TruthFirst,
            Ordering::TruthLast,
        ] {
            let v = round_trip(&OrderNote {
                policy,
                order: vec![1, 0],
                consistency: None,
            });
            assert!(v.get("consistency").is_none());
        }
    }

    #[test]
    fn challenge_note_round_trips_exactly() {
        round_trip(&challenge());
        round_trip(&ChallengeNote {
            receiver_score: -1.0 / 3.0,
            ..challenge()
        });
    }

    proptest::proptest! {
        /// Scores are any finite f64 (survival rates, priors); the stored text must give back
        /// the same bits.
        #[test]
        fn challenge_scores_round_trip_through_text(score in proptest::num::f64::NORMAL) {
            round_trip(&ChallengeNote { receiver_score: score, ..challenge() });
        }
    }

    #[test]
    fn prompt_cut_round_trips() {
        round_trip(&PromptCut {
            from_tokens: 5000,
            to_tokens: 3000,
        });
    }

    #[test]
    fn call_notes_round_trip_empty_and_full() {
        let v = round_trip(&CallNotes::default());
        assert_eq!(v, json!({"ncomm": 0}));
        round_trip(&full());
        assert_eq!(
            CallNotes::from_json(&serde_json::to_value(full()).unwrap()).unwrap(),
            full()
        );
    }

    #[test]
    fn prior_names_are_stable() {
        // Not a note, but read back from stored options the same way.
        for (prior, name) in [
            (Prior::MinLl, "min-ll"),
            (Prior::Ppl, "ppl"),
            (Prior::Confidence, "confidence"),
        ] {
            assert_eq!(serde_json::to_value(prior).unwrap(), json!(name));
        }
    }

    /// The stored shape, written out literally: a renamed field or variant fails here instead of
    /// silently breaking resume and `moot show` on existing stores.
    #[test]
    fn stored_field_names_still_read() {
        let stored = json!({
            "ncomm": 2,
            "faults": [
                {"peer": 1, "fate": "delayed", "from_round": 0},
                {"peer": 3, "fate": "dropped"}
            ],
            "malicious": "17",
            "masks": [{"author": 1, "kept": false, "why": "judged NO by agent 3"}],
            "ordering": {
                "policy": "consistency-last",
                "order": [0, 3, 2, 1],
                "consistency": [0, 1, 1, 0]
            },
            "answers_only": [4],
            "pruned": [5],
            "challenge": {
                "receiver": 2,
                "challenger": 0,
                "receiver_score": 0.36787944117144233,
                "budget_left": 6
            },
            "position": "408",
            "anonymised": [2, 0],
            "skipped": "s2-mad: every peer agrees",
            "ended_after": 1,
            "answer_optional": true,
            "prompt_cut": {"from_tokens": 9000, "to_tokens": 4000},
            "reask": {
                "reply": "Final answer: 408",
                "error": null,
                "input_tokens": 120,
                "output_tokens": 7,
                "processed_input_tokens": 20
            },
            "contract": {"decision": "revise", "changed": true}
        });
        assert_eq!(CallNotes::from_json(&stored).unwrap(), full());
        // Today's serialisation is exactly that shape, in that field order.
        assert_eq!(
            serde_json::to_string(&full()).unwrap(),
            serde_json::to_string(&stored).unwrap()
        );
        let other_fates = json!([
            {"peer": 0, "fate": "delivered", "from_round": 1},
            {"peer": 0, "fate": "cut-off"}
        ]);
        let read: Vec<FaultNote> = serde_json::from_value(other_fates).unwrap();
        assert_eq!(
            read.iter().map(|f| f.delivery).collect::<Vec<_>>(),
            vec![Delivery::Delivered { from_round: 1 }, Delivery::CutOff]
        );
        let policies = json!([
            "fixed",
            "random",
            "consistency-last",
            "truth-first",
            "truth-last"
        ]);
        let read: Vec<Ordering> = serde_json::from_value(policies).unwrap();
        assert_eq!(read.len(), 5);
    }

    #[test]
    fn older_and_newer_notes_still_read() {
        // An older run: fields added since are missing.
        let old = json!({"ncomm": 1, "reask": {"reply": null, "error": "timeout",
            "input_tokens": 5, "output_tokens": 0}});
        let notes = CallNotes::from_json(&old).unwrap();
        assert_eq!(notes.ncomm, 1);
        assert_eq!(notes.reask.unwrap().processed_input_tokens, None);
        assert_eq!(
            CallNotes::from_json(&json!({})).unwrap(),
            CallNotes::default()
        );
        // A newer run: a field this version does not know is ignored.
        let newer = json!({"ncomm": 3, "some_future_note": {"x": 1}});
        assert_eq!(CallNotes::from_json(&newer).unwrap().ncomm, 3);
        // A known field of the wrong type is an error, not a silent default.
        assert!(CallNotes::from_json(&json!({"ncomm": "three"})).is_err());
    }
}
