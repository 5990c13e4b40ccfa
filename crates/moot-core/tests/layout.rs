//! `debate.layout`: the papers' layout stays exactly as it was, and under `shared-first` every
//! agent's prompt of a debate round starts with the same text: the question and every solution
//! shown so far, in one order whatever the agent.

use moot_core::answer::AnswerKind;
use moot_core::debate::{AgentRole, AgentSpec, CallKey, DebateSpec, Outcome, Transcript};
use moot_core::protocol::{build_protocol, PlannedCall, Protocol, ProtocolOptions, Step};
use serde_json::{json, Value};

fn say(s: &DebateSpec, t: &mut Transcript, round: usize, agent: usize, text: &str) {
    let outcome = Outcome::Responded {
        text: text.into(),
        answer: s.extract(text),
        logprobs: None,
    };
    assert!(t.set_call(CallKey::answer(round, agent), outcome));
}

fn calls(p: &dyn Protocol, s: &DebateSpec, t: &Transcript) -> (usize, Vec<PlannedCall>) {
    match p.next(s, t) {
        Step::Round { round, calls } => (round, calls),
        Step::Done => panic!("{} is done too early", p.name()),
    }
}

/// A three-debater spec (agent 1 with a persona), two rounds, with `extra` agents of `role`
/// after the debaters.
fn fixed_spec(extra: Option<AgentRole>) -> DebateSpec {
    let mut s = DebateSpec::with_agents(
        "A farmer has 17 rows of 24 apple trees. How many trees are there?",
        AnswerKind::Numeric,
        3,
        2,
        7,
    );
    s.agents[0].persona = Some("You are a meticulous accountant.".into());
    if let Some(role) = extra {
        s.agents.push(AgentSpec {
            role,
            ..AgentSpec::named("decider")
        });
    }
    s
}

/// Every debate call of rounds 1 and 2 of a fixed debate under `protocol`: round 0 answered
/// by every debater, round 1 by debaters 0 and 2 (1 times out).
fn fixed_debate(protocol: &str, s: &DebateSpec) -> Vec<Value> {
    let p = build_protocol(protocol, &ProtocolOptions::default()).unwrap();
    let mut t = Transcript::new(s.agents.len(), s.rounds);
    let mut out = Vec::new();
    let mut record = |calls: &[PlannedCall]| {
        for c in calls {
            out.push(json!({
                "round": c.round,
                "agent": c.agent,
                "template": c.template,
                "template_hash": c.template_hash,
                "messages": c.messages,
            }));
        }
    };
    let answers = ["408", "418", "408"];
    loop {
        let (round, planned) = calls(&*p, s, &t);
        if round >= 1 {
            record(&planned);
        }
        if round == 2 {
            break;
        }
        for c in planned {
            if let Some(reason) = c.skipped() {
                t.set_call(
                    CallKey::answer(c.round, c.agent),
                    Outcome::Skipped {
                        reason: reason.into(),
                    },
                );
                continue;
            }
            if round == 1 && c.agent == 1 {
                t.set_call(
                    CallKey::answer(1, 1),
                    Outcome::Missing {
                        reason: "timeout".into(),
                    },
                );
                continue;
            }
            let text = format!(
                "Agent {} in round {round}: 17 rows of 24 trees.\nFinal answer: {}",
                c.agent + 1,
                answers[c.agent]
            );
            say(s, &mut t, round, c.agent, &text);
        }
    }
    out
}

/// The papers' layout of every protocol whose prompts show peers, as recorded before
/// `debate.layout` existed.
fn papers_snapshot() -> Value {
    let mut all = serde_json::Map::new();
    for protocol in [
        "som",
        "free-mad-n",
        "free-mad-c",
        "free-mad-neutral",
        "sparse",
        "madc",
        "s2-mad",
        "group-debate",
    ] {
        all.insert(
            protocol.into(),
            Value::Array(fixed_debate(protocol, &fixed_spec(None))),
        );
    }
    for (protocol, role) in [
        ("judge", AgentRole::Judge),
        ("assigned", AgentRole::Judge),
        ("moa", AgentRole::Aggregator),
    ] {
        all.insert(
            protocol.into(),
            Value::Array(fixed_debate(protocol, &fixed_spec(Some(role)))),
        );
    }
    Value::Object(all)
}

/// Compared as JSON values, so a difference shows the call and message at fault.
#[test]
fn the_papers_layout_is_the_one_recorded_before_layouts_existed() {
    let recorded: Value =
        serde_json::from_str(include_str!("data/papers-layout.json")).unwrap();
    let now = papers_snapshot();
    for (protocol, calls) in recorded.as_object().unwrap() {
        assert_eq!(&now[protocol], calls, "{protocol}");
    }
    assert_eq!(now, recorded);
}
