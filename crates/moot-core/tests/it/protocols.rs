//! The exact calls each protocol plans: who sees whom, in which order, which memories are masked,
//! which challenges are made, what faults do. Pure: transcripts are filled by hand.

use moot_core::answer::AnswerKind;
use moot_core::chat::{LogprobSummary, Role};
use moot_core::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use moot_core::faults::{Delivery, Faults};
use moot_core::protocol::{
    build_protocol, Masking, Ordering, PlannedCall, Prior, Protocol, ProtocolOptions, Step,
    TopologyName,
};
use proptest::prelude::*;

fn spec(agents: usize, rounds: usize) -> DebateSpec {
    DebateSpec::with_agents("What is 17 * 24?", AnswerKind::Numeric, agents, rounds, 7)
}

fn protocol(name: &str, options: ProtocolOptions) -> Box<dyn Protocol> {
    build_protocol(name, &options).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn logprobs(min: f64, mean: f64) -> LogprobSummary {
    LogprobSummary {
        tokens: 10,
        mean,
        min,
        perplexity: (-mean).exp(),
    }
}

fn say(s: &DebateSpec, t: &mut Transcript, key: CallKey, text: &str, lp: Option<LogprobSummary>) {
    let outcome = Outcome::Responded {
        text: text.into(),
        answer: s.extract(text),
        logprobs: lp,
    };
    assert!(t.set_call(key, outcome), "{key:?} outside the debate");
}

/// Round 0 with one answer per agent ("Final answer: x").
fn round0(s: &DebateSpec, answers: &[&str]) -> Transcript {
    let mut t = Transcript::new(s.agents.len(), s.rounds);
    for (a, x) in answers.iter().enumerate() {
        say(
            s,
            &mut t,
            CallKey::answer(0, a),
            &format!("I computed it.\nFinal answer: {x}"),
            None,
        );
    }
    t
}

fn step(p: &dyn Protocol, s: &DebateSpec, t: &Transcript) -> (usize, Vec<PlannedCall>) {
    match p.next(s, t) {
        Step::Round { round, calls } => (round, calls),
        Step::Done => panic!("{} is done too early", p.name()),
    }
}

fn call(calls: &[PlannedCall], agent: usize) -> &PlannedCall {
    calls
        .iter()
        .find(|c| c.agent == agent)
        .expect("a call for the agent")
}

fn last_user(c: &PlannedCall) -> &str {
    &c.messages.last().expect("messages").content
}

#[test]
fn sparse_runs_on_a_ring_by_default_and_takes_other_topologies() {
    let s = spec(4, 1);
    let t = round0(&s, &["1", "2", "3", "4"]);
    let (_, calls) = step(&*protocol("sparse", ProtocolOptions::default()), &s, &t);
    assert_eq!(call(&calls, 0).peers, vec![1, 3]);
    assert_eq!(call(&calls, 2).peers, vec![1, 3]);
    assert_eq!(call(&calls, 0).notes.ncomm, 2);
    let star = ProtocolOptions {
        topology: Some(TopologyName::Star),
        hub: Some(2),
        ..ProtocolOptions::default()
    };
    let (_, calls) = step(&*protocol("som", star), &s, &t);
    assert_eq!(
        call(&calls, 1).peers,
        vec![0, 2, 3],
        "the hub reads everyone"
    );
    assert_eq!(call(&calls, 3).peers, vec![1]);
    let k = ProtocolOptions {
        topology: Some(TopologyName::KReviewers),
        k: Some(2),
        ..ProtocolOptions::default()
    };
    let (_, calls) = step(&*protocol("free-mad-n", k), &s, &t);
    assert!(calls
        .iter()
        .all(|c| c.peers.len() == 2 && !c.peers.contains(&c.agent)));
}

#[test]
fn freemads_topologies_show_the_peers_freemad_shows_in_its_order() {
    let mut s = spec(5, 1);
    for (agent, id) in s.agents.iter_mut().zip(["a", "b", "c", "d", "e"]) {
        agent.id = id.into();
    }
    s.seed = 12345;
    let t = round0(&s, &["1", "2", "3", "4", "5"]);
    let ring = ProtocolOptions {
        topology: Some(TopologyName::NextOnRing),
        ..ProtocolOptions::default()
    };
    let (_, calls) = step(&*protocol("free-mad-n", ring), &s, &t);
    let peers: Vec<Vec<usize>> = (0..5).map(|a| call(&calls, a).peers.clone()).collect();
    assert_eq!(peers, vec![vec![1], vec![2], vec![3], vec![4], vec![0]]);
    // freemad 2.0.0, k = 2, seed 12345: a:[b,c] b:[c,d] c:[e,d] d:[c,b] e:[a,b], in that order.
    let k = ProtocolOptions {
        topology: Some(TopologyName::FreemadKReviewers),
        k: Some(2),
        ..ProtocolOptions::default()
    };
    let (_, calls) = step(&*protocol("free-mad-n", k.clone()), &s, &t);
    let peers: Vec<Vec<usize>> = (0..5).map(|a| call(&calls, a).peers.clone()).collect();
    assert_eq!(
        peers,
        vec![vec![1, 2], vec![2, 3], vec![4, 3], vec![2, 1], vec![0, 1]]
    );
    let prompt = last_user(call(&calls, 2));
    let (fifth, fourth) = (
        prompt.find("[Agent 5's solution]").expect("agent 5 shown"),
        prompt.find("[Agent 4's solution]").expect("agent 4 shown"),
    );
    assert!(fifth < fourth, "drawn order, not agent order:\n{prompt}");
    // An ordering policy other than `fixed` still orders the peers its own way.
    let random = ProtocolOptions {
        ordering: Some(Ordering::Random),
        ..k
    };
    let (_, calls) = step(&*protocol("free-mad-n", random), &s, &t);
    for c in &calls {
        let mut sorted = c.peers.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, {
            let mut p = peers[c.agent].clone();
            p.sort_unstable();
            p
        });
    }
}

#[test]
fn group_debate_shows_full_solutions_inside_and_answers_across() {
    let s = spec(4, 1);
    let t = round0(&s, &["1", "2", "3", "4"]);
    let p = protocol("group-debate", ProtocolOptions::default());
    let (_, calls) = step(&*p, &s, &t);
    for c in &calls {
        assert_eq!(c.peers.len(), 3);
        assert_eq!(
            c.notes.answers_only.len(),
            2,
            "two agents in the other group"
        );
        let inside: Vec<usize> = c
            .peers
            .iter()
            .copied()
            .filter(|p| !c.notes.answers_only.contains(p))
            .collect();
        assert_eq!(inside.len(), 1);
        let text = last_user(c);
        assert!(text.contains(&format!(
            "[Agent {}'s solution]\nI computed it.",
            inside[0] + 1
        )));
        for &across in &c.notes.answers_only {
            assert!(text.contains(&format!(
                "[Agent {}'s final answer, from another group]\nFinal answer: {}",
                across + 1,
                across + 1
            )));
        }
    }
}

#[test]
fn s2_mad_prunes_agreeing_peers_and_skips_settled_agents() {
    let s = spec(3, 2);
    let mut t = round0(&s, &["408", "408", "400"]);
    let p = protocol("s2-mad", ProtocolOptions::default());
    let (_, calls) = step(&*p, &s, &t);
    assert_eq!(call(&calls, 0).peers, vec![2]);
    assert_eq!(call(&calls, 0).notes.pruned, vec![1]);
    assert_eq!(call(&calls, 2).peers, vec![0, 1]);
    assert!(calls.iter().all(|c| c.skipped().is_none()));
    for a in 0..3 {
        say(&s, &mut t, CallKey::answer(1, a), "Final answer: 408", None);
    }
    let (round, calls) = step(&*p, &s, &t);
    assert_eq!(round, 2);
    assert!(calls
        .iter()
        .all(|c| c.skipped().is_some_and(|r| r.contains("s2-mad"))));
    // A skipped round keeps the answer for the rules.
    for c in &calls {
        t.set_call(
            c.key(),
            Outcome::Skipped {
                reason: "agreed".into(),
            },
        );
    }
    assert_eq!(
        t.effective(2, 0)
            .and_then(Outcome::answer)
            .unwrap()
            .canonical(),
        "408"
    );
    assert_eq!(p.next(&s, &t), Step::Done);
}

#[test]
fn madc_orders_peers_by_path_consistency_each_round() {
    let s = spec(4, 1);
    let t = round0(&s, &["1", "2", "2", "3"]);
    let p = protocol("madc", ProtocolOptions::default());
    let (_, calls) = step(&*p, &s, &t);
    // Speaking order: 0 (c=0), 3 (c=0), 2 (c=1), 1 (c=1, the first argmax) last.
    assert_eq!(call(&calls, 0).peers, vec![3, 2, 1]);
    assert_eq!(call(&calls, 1).peers, vec![0, 3, 2]);
    let note = call(&calls, 0)
        .notes
        .ordering
        .as_ref()
        .expect("ordering recorded");
    assert_eq!(note.order, vec![0, 3, 2, 1]);
    assert_eq!(note.consistency, Some(vec![0, 1, 1, 0]));
    let text = last_user(call(&calls, 0));
    let pos = |n: usize| text.find(&format!("[Agent {n}'s solution]")).unwrap();
    assert!(pos(4) < pos(3) && pos(3) < pos(2), "most consistent last");
}

#[test]
fn truth_orderings_need_the_gold_answer() {
    let s = spec(3, 1);
    let no_gold = ProtocolOptions {
        ordering: Some(Ordering::TruthLast),
        ..ProtocolOptions::default()
    };
    let err = protocol("madc", no_gold)
        .validate(&s)
        .unwrap_err()
        .to_string();
    assert!(err.contains("gold"), "{err}");
    let gold = ProtocolOptions {
        ordering: Some(Ordering::TruthLast),
        gold: Some("408".into()),
        ..ProtocolOptions::default()
    };
    let p = protocol("madc", gold);
    p.validate(&s).unwrap();
    let t = round0(&s, &["408", "400", "401"]);
    let (_, calls) = step(&*p, &s, &t);
    assert_eq!(
        call(&calls, 1).peers,
        vec![2, 0],
        "the right agent speaks last"
    );
}

#[test]
fn options_a_protocol_does_not_read_are_refused() {
    let e = build_protocol(
        "som",
        &ProtocolOptions {
            masking: Some(Masking::Objective),
            ..ProtocolOptions::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("masking") && e.contains("mad-m2"), "{e}");
    assert!(build_protocol("nope", &ProtocolOptions::default()).is_err());
}

#[test]
fn mad_m2_subjective_judges_each_memory_once_then_masks() {
    let s = spec(3, 1);
    let mut t = round0(&s, &["408", "400", "401"]);
    let strict = protocol("mad-m2", ProtocolOptions::default());
    let (round, judges) = step(&*strict, &s, &t);
    assert_eq!(round, 1);
    let keys: Vec<CallKey> = judges.iter().map(PlannedCall::key).collect();
    assert_eq!(
        keys,
        vec![
            CallKey {
                round: 0,
                agent: 0,
                slot: Slot::Judge(2)
            },
            CallKey {
                round: 0,
                agent: 1,
                slot: Slot::Judge(0)
            },
            CallKey {
                round: 0,
                agent: 2,
                slot: Slot::Judge(1)
            },
        ],
        "one judgement per memory, never by its author"
    );
    assert!(judges
        .iter()
        .all(|j| j.template == "judge" && j.notes.ncomm == 1));
    assert!(last_user(&judges[1]).contains("Final answer: 408"));
    say(&s, &mut t, keys[1], "Checked.\n<label>YES</label>", None);
    say(
        &s,
        &mut t,
        keys[2],
        "Wrong product.\n<label>NO</label>",
        None,
    );
    say(&s, &mut t, keys[0], "Hmm.\n<label>NOT SURE</label>", None);
    let (_, calls) = step(&*strict, &s, &t);
    let c0 = call(&calls, 0);
    assert_eq!(c0.template, "memories");
    assert_eq!(c0.messages.len(), 2, "one prompt, no history");
    let kept: Vec<usize> = c0
        .notes
        .masks
        .iter()
        .filter(|m| m.kept)
        .map(|m| m.author)
        .collect();
    assert_eq!(kept, vec![0], "strict: NO and NOT SURE masked");
    assert!(last_user(c0).contains("[Agent 1's solution]"));
    assert!(!last_user(c0).contains("Agent 2's solution"));
    assert_eq!(c0.notes.ncomm, 0, "its own memory is no transfer");
    // Agent 1 sees only agent 0's memory; its own was judged NO.
    assert_eq!(call(&calls, 1).peers, vec![0]);
    let loose = protocol(
        "mad-m2",
        ProtocolOptions {
            masking: Some(Masking::SubjectiveLoose),
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*loose, &s, &t);
    let kept: Vec<usize> = call(&calls, 0)
        .notes
        .masks
        .iter()
        .filter(|m| m.kept)
        .map(|m| m.author)
        .collect();
    assert_eq!(kept, vec![0, 2], "loose keeps NOT SURE");
}

#[test]
fn mad_m2_per_agent_judging_asks_every_reader() {
    let s = spec(3, 1);
    let t = round0(&s, &["408", "400", "401"]);
    let p = protocol(
        "mad-m2",
        ProtocolOptions {
            judging: Some(moot_core::protocol::Judging::PerAgent),
            ..ProtocolOptions::default()
        },
    );
    let (_, judges) = step(&*p, &s, &t);
    assert_eq!(
        judges.len(),
        9,
        "each of 3 agents judges 3 memories, its own included"
    );
    for reader in 0..3 {
        let mut authors: Vec<usize> = judges
            .iter()
            .filter(|j| j.agent == reader)
            .map(|j| match j.slot {
                Slot::Judge(a) => a,
                other => panic!("{other:?}"),
            })
            .collect();
        authors.sort();
        assert_eq!(authors, vec![0, 1, 2]);
    }
    let own = judges
        .iter()
        .filter(|j| j.slot == Slot::Judge(j.agent))
        .count();
    assert_eq!(own, 3);
    assert!(judges
        .iter()
        .all(|j| j.notes.ncomm == usize::from(j.slot != Slot::Judge(j.agent))));
}

#[test]
fn delayed_messages_arrive_a_round_late() {
    let s = spec(3, 2);
    let mut t = round0(&s, &["1", "2", "3"]);
    let p = protocol(
        "som",
        ProtocolOptions {
            faults: Faults {
                delay: 1.0,
                ..Faults::default()
            },
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*p, &s, &t);
    // Round 1: nothing older than round 0 exists, so every delayed message is lost.
    assert!(calls.iter().all(|c| c.peers.is_empty()));
    for a in 0..3 {
        say(
            &s,
            &mut t,
            CallKey::answer(1, a),
            &format!("Round one.\nFinal answer: {}", a + 10),
            None,
        );
    }
    let (_, calls) = step(&*p, &s, &t);
    let c = call(&calls, 0);
    assert_eq!(c.peers, vec![1, 2]);
    assert!(c
        .notes
        .faults
        .iter()
        .all(|f| f.delivery == Delivery::Delayed { from_round: 0 }));
    assert!(last_user(c).contains("[Agent 2's solution]\nI computed it.\nFinal answer: 2"));
    assert!(!last_user(c).contains("Final answer: 11"));
}

#[test]
fn madc_records_the_order_even_when_fixed() {
    let s = spec(3, 1);
    let t = round0(&s, &["1", "2", "2"]);
    let fixed = protocol(
        "madc",
        ProtocolOptions {
            ordering: Some(Ordering::Fixed),
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*fixed, &s, &t);
    assert!(calls.iter().all(|c| c
        .notes
        .ordering
        .as_ref()
        .is_some_and(|o| o.order == vec![0, 1, 2])));
    let (_, calls) = step(&*protocol("som", ProtocolOptions::default()), &s, &t);
    assert!(calls.iter().all(|c| c.notes.ordering.is_none()));
}

#[test]
fn mad_m2_everything_masked_answers_as_in_round_zero() {
    let s = spec(2, 1);
    let mut t = round0(&s, &["1", "2"]);
    let p = protocol("mad-m2", ProtocolOptions::default());
    let (_, judges) = step(&*p, &s, &t);
    for j in &judges {
        say(&s, &mut t, j.key(), "<label>NO</label>", None);
    }
    let (_, calls) = step(&*p, &s, &t);
    for c in &calls {
        assert_eq!(c.template, "initial");
        assert!(c.notes.masks.iter().all(|m| !m.kept));
        assert!(last_user(c).contains("Solve the problem step by step"));
    }
}

#[test]
fn mad_m2_objective_keeps_the_lowest_perplexity() {
    let s = spec(3, 1);
    let mut t = Transcript::new(3, 1);
    for (a, mean) in [-0.9, -0.2, -0.5].iter().enumerate() {
        say(
            &s,
            &mut t,
            CallKey::answer(0, a),
            &format!("Final answer: {a}"),
            Some(logprobs(-2.0, *mean)),
        );
    }
    let p = protocol(
        "mad-m2",
        ProtocolOptions {
            masking: Some(Masking::Objective),
            ..ProtocolOptions::default()
        },
    );
    assert!(p.needs_logprobs().is_some());
    let (_, calls) = step(&*p, &s, &t);
    assert!(
        calls.iter().all(|c| c.slot == Slot::Answer),
        "no judgement calls"
    );
    for c in &calls {
        let kept: Vec<usize> = c
            .notes
            .masks
            .iter()
            .filter(|m| m.kept)
            .map(|m| m.author)
            .collect();
        assert_eq!(kept, vec![1]);
    }
    let below = protocol(
        "mad-m2",
        ProtocolOptions {
            masking: Some(Masking::Objective),
            keep: Some(moot_core::protocol::ObjectiveKeep::BelowMedian),
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*below, &s, &t);
    let kept: Vec<usize> = call(&calls, 0)
        .notes
        .masks
        .iter()
        .filter(|m| m.kept)
        .map(|m| m.author)
        .collect();
    assert_eq!(kept, vec![1, 2]);
}

#[test]
fn sid_et_skips_the_debate_only_above_the_threshold() {
    let s = spec(3, 2);
    let p = protocol("sid-et", ProtocolOptions::default());
    assert!(p.needs_logprobs().is_some());
    let mut t = Transcript::new(3, 2);
    for (a, min) in [-3.0, -0.5, -2.0].iter().enumerate() {
        say(
            &s,
            &mut t,
            CallKey::answer(0, a),
            &format!("Final answer: {a}"),
            Some(logprobs(*min, -0.1)),
        );
    }
    let (round, calls) = step(&*p, &s, &t);
    assert_eq!(round, 1);
    assert!(calls
        .iter()
        .all(|c| c.skipped().is_some_and(|r| r.contains("agent 2"))));
    assert_eq!(p.evidence(&s, &t).early_stop, Some(1));
    let strict = protocol(
        "sid-et",
        ProtocolOptions {
            threshold: Some(-0.1),
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*strict, &s, &t);
    assert!(calls
        .iter()
        .all(|c| c.skipped().is_none() && c.peers.len() == 2));
    assert_eq!(strict.evidence(&s, &t).early_stop, None);
}

/// Round 0 of three agents: 400, 400 and 408, the lone 408 with the best min log-likelihood.
fn minority_with_the_best_prior(s: &DebateSpec) -> Transcript {
    let mut t = Transcript::new(3, 0);
    for (a, (x, min)) in [("400", -3.0), ("400", -2.5), ("408", -0.3)]
        .iter()
        .enumerate()
    {
        say(
            s,
            &mut t,
            CallKey::answer(0, a),
            &format!("Final answer: {x}"),
            Some(logprobs(*min, -0.2)),
        );
    }
    t
}

#[test]
fn svr_mad_challenges_the_likeliest_agent_and_accepts_a_survivor() {
    // Agent 2 holds 408 alone but has the best prior; agents 0, 1 hold 400.
    let s = spec(3, 0);
    let p = protocol("svr-mad", ProtocolOptions::default());
    assert_eq!(p.shape(3, 4), (3, 0));
    let mut t = minority_with_the_best_prior(&s);
    let (round, calls) = step(&*p, &s, &t);
    assert_eq!(round, 1, "iteration 1");
    let keys: Vec<CallKey> = calls.iter().map(PlannedCall::key).collect();
    assert_eq!(
        keys,
        vec![
            CallKey {
                round: 1,
                agent: 2,
                slot: Slot::Challenge(1)
            },
            CallKey {
                round: 1,
                agent: 2,
                slot: Slot::Challenge(0)
            },
        ],
        "receiver = best prior; challengers ranked by score"
    );
    let c = &calls[0];
    assert_eq!(c.peers, vec![1]);
    assert_eq!(c.notes.ncomm, 1);
    assert_eq!(
        c.messages.iter().map(|m| m.role).collect::<Vec<_>>(),
        vec![Role::System, Role::User, Role::Assistant, Role::User]
    );
    assert!(last_user(c).contains("[Agent 2's solution]"));
    let note = c.notes.challenge.as_ref().unwrap();
    assert_eq!(note.budget_left, 2 * (2 + 2), "B = S(k + m)");
    say(&s, &mut t, keys[0], "Still 408.\nFinal answer: 408", None);
    say(&s, &mut t, keys[1], "Still 408.\nFinal answer: 408", None);
    assert_eq!(
        p.next(&s, &t),
        Step::Done,
        "accepted after C = 2 survived challenges"
    );
    let e = p.evidence(&s, &t);
    assert_eq!(e.challenges.len(), 2);
    let rule = moot_core::build_rule("svr", &Default::default()).unwrap();
    let d = rule.decide_with(&t.trajectory().unwrap(), &e);
    assert_eq!(d.answer.unwrap().canonical(), "408");
    let majority = moot_core::build_rule("majority-last", &Default::default()).unwrap();
    assert_eq!(
        majority
            .decide(&t.trajectory().unwrap())
            .answer
            .unwrap()
            .canonical(),
        "400"
    );
}

#[test]
fn svr_mad_moves_on_when_the_receiver_yields_and_skips_unanimous_questions() {
    let s = spec(3, 0);
    let p = protocol("svr-mad", ProtocolOptions::default());
    let unanimous = round0(&s, &["408", "408", "408"]);
    assert_eq!(p.next(&s, &unanimous), Step::Done);
    let mut t = minority_with_the_best_prior(&s);
    let (_, calls) = step(&*p, &s, &t);
    say(
        &s,
        &mut t,
        calls[0].key(),
        "You are right.\nFinal answer: 400",
        None,
    );
    say(&s, &mut t, calls[1].key(), "Final answer: 408", None);
    // Agent 2's SVR is 0 now, below agent 1's prior exp(-2.5) ≈ 0.08: agent 1 receives next,
    // challenged by the only agent that disagrees with it.
    let (round, calls) = step(&*p, &s, &t);
    assert_eq!(round, 2);
    assert_eq!(
        calls.iter().map(PlannedCall::key).collect::<Vec<_>>(),
        vec![CallKey {
            round: 2,
            agent: 1,
            slot: Slot::Challenge(2)
        }]
    );
}

#[test]
fn svr_mad_confidence_prior_asks_for_confidence() {
    let s = spec(2, 0);
    let p = protocol(
        "svr-mad",
        ProtocolOptions {
            prior: Some(Prior::Confidence),
            ..ProtocolOptions::default()
        },
    );
    assert!(p.needs_logprobs().is_none());
    let (_, calls) = step(&*p, &s, &Transcript::new(2, 0));
    assert!(last_user(&calls[0]).contains("Confidence:"));
}

#[test]
fn cut_off_agents_read_nothing_but_are_read() {
    let s = spec(3, 1);
    let faults = Faults {
        cut_off: 0.34,
        ..Faults::default()
    };
    let cut = faults.cut_off_agents(3, s.seed)[0];
    let t = round0(&s, &["1", "2", "3"]);
    for name in ["som", "free-mad-n", "madc"] {
        let p = protocol(
            name,
            ProtocolOptions {
                faults: faults.clone(),
                ..ProtocolOptions::default()
            },
        );
        let (_, calls) = step(&*p, &s, &t);
        let c = call(&calls, cut);
        assert!(c.peers.is_empty(), "{name}");
        assert_eq!(c.notes.faults.len(), 2);
        assert!(c
            .notes
            .faults
            .iter()
            .all(|f| f.delivery == Delivery::CutOff));
        assert!(last_user(c).contains("no other agent's solution arrived"));
        for other in (0..3).filter(|&o| o != cut) {
            assert!(
                call(&calls, other).peers.contains(&cut),
                "{name}: its message still reaches the others"
            );
        }
    }
}

#[test]
fn malicious_agents_are_told_to_argue_for_the_wrong_answer() {
    let s = spec(3, 1);
    let faults = Faults {
        malicious: 0.34,
        malicious_answer: Some("999".into()),
        ..Faults::default()
    };
    let bad = faults.malicious_agents(3, s.seed)[0];
    let p = protocol(
        "free-mad-n",
        ProtocolOptions {
            faults,
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*p, &s, &Transcript::new(3, 1));
    for c in &calls {
        let system = &c.messages[0].content;
        assert_eq!(system.contains("the final answer is: 999"), c.agent == bad);
        assert_eq!(
            c.notes.malicious.as_deref(),
            (c.agent == bad).then_some("999")
        );
    }
}

#[test]
fn dropped_messages_are_recorded_and_not_shown() {
    let s = spec(4, 1);
    let t = round0(&s, &["1", "2", "3", "4"]);
    let p = protocol(
        "som",
        ProtocolOptions {
            faults: Faults {
                drop: 0.5,
                ..Faults::default()
            },
            ..ProtocolOptions::default()
        },
    );
    let (_, calls) = step(&*p, &s, &t);
    let dropped: usize = calls.iter().map(|c| c.notes.faults.len()).sum();
    assert!(dropped > 0 && dropped < 12, "{dropped} of 12 dropped");
    for c in &calls {
        assert_eq!(c.peers.len() + c.notes.faults.len(), 3);
        assert!(c.notes.faults.iter().all(|f| !c.peers.contains(&f.peer)));
        assert_eq!(c.notes.ncomm, c.peers.len());
    }
}

fn arbitrary_protocol() -> impl Strategy<Value = (&'static str, ProtocolOptions)> {
    let topology = prop_oneof![
        Just(None),
        Just(Some(TopologyName::Ring)),
        Just(Some(TopologyName::Star)),
        Just(Some(TopologyName::KReviewers)),
        Just(Some(TopologyName::Groups)),
        Just(Some(TopologyName::NextOnRing)),
        Just(Some(TopologyName::FreemadKReviewers)),
    ];
    (
        prop_oneof![
            Just("som"),
            Just("free-mad-n"),
            Just("madc"),
            Just("s2-mad"),
            Just("sparse")
        ],
        topology,
        0.0f64..0.6,
        0.0f64..0.6,
    )
        .prop_map(|(name, topology, drop, cut_off)| {
            (
                name,
                ProtocolOptions {
                    topology,
                    k: topology
                        .filter(|t| {
                            matches!(
                                t,
                                TopologyName::KReviewers | TopologyName::FreemadKReviewers
                            )
                        })
                        .map(|_| 2),
                    faults: Faults {
                        drop,
                        cut_off,
                        ..Faults::default()
                    },
                    ..ProtocolOptions::default()
                },
            )
        })
}

proptest! {
    #[test]
    fn no_agent_sees_itself_as_a_peer(
        (name, options) in arbitrary_protocol(),
        answers in proptest::collection::vec(0u8..3, 3..7),
        seed in any::<u64>(),
    ) {
        let mut s = spec(answers.len(), 1);
        s.seed = seed;
        let p = build_protocol(name, &options).unwrap();
        prop_assume!(p.validate(&s).is_ok());
        let labels: Vec<String> = answers.iter().map(|a| a.to_string()).collect();
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        let t = round0(&s, &refs);
        let (_, calls) = step(&*p, &s, &t);
        for c in &calls {
            prop_assert!(!c.peers.contains(&c.agent));
            if let Some(last) = c.messages.last() {
                let own = format!("[Agent {}'s solution]", c.agent + 1);
                prop_assert!(!last.content.contains(&own), "{} shows agent {} itself", name, c.agent);
            }
            prop_assert_eq!(c.notes.ncomm, c.peers.len());
        }
    }

    #[test]
    fn svr_mad_never_exceeds_its_budget(
        answers in proptest::collection::vec(0u8..4, 2..8),
        mins in proptest::collection::vec(-5.0f64..0.0, 8),
        keeps in proptest::collection::vec(any::<bool>(), 64),
        s_param in 1usize..4,
        c_param in 1usize..4,
    ) {
        let s = spec(answers.len(), 0);
        let p = build_protocol("svr-mad", &ProtocolOptions {
            challengers: Some(s_param),
            accept_after: Some(c_param),
            ..ProtocolOptions::default()
        }).unwrap();
        let mut t = Transcript::new(answers.len(), 0);
        for (a, x) in answers.iter().enumerate() {
            say(&s, &mut t, CallKey::answer(0, a), &format!("Final answer: {x}"), Some(logprobs(mins[a], -0.2)));
        }
        let mut distinct: Vec<u8> = answers.clone();
        distinct.sort();
        distinct.dedup();
        let largest = distinct.iter().map(|d| answers.iter().filter(|a| *a == d).count()).max().unwrap();
        let budget = if distinct.len() <= 1 { 0 } else { s_param * (distinct.len() + largest) };
        let mut made = 0;
        let mut flips = keeps.iter().cycle();
        loop {
            match p.next(&s, &t) {
                Step::Done => break,
                Step::Round { calls, .. } => {
                    prop_assert!(!calls.is_empty());
                    for c in calls {
                        prop_assert!(c.peers.len() <= 1);
                        made += c.notes.ncomm;
                        let before = answers[c.agent];
                        let after = if *flips.next().unwrap() { before } else { before + 10 };
                        say(&s, &mut t, c.key(), &format!("Final answer: {after}"), None);
                    }
                }
            }
            prop_assert!(made <= budget, "{} communications, budget {}", made, budget);
        }
    }
}

/// Forks (`moot fork`): each protocol's declaration in the registry, the round range and the
/// log-probability rule every protocol shares, each refusal with its reason.
#[test]
fn forks_are_refused_where_each_protocol_declares_and_with_their_reason() {
    use moot_core::fork::InterventionKind::{self, Model, Null, Say};
    use moot_core::protocol::check_fork;
    let check = |name: &str, options: ProtocolOptions, kind: InterventionKind, round, rounds| {
        check_fork(&*protocol(name, options), kind, round, rounds).map_err(|e| e.to_string())
    };
    let plain = ProtocolOptions::default;
    // A round-table protocol: anything at any of its rounds, nothing past them.
    for kind in [Null, Say, Model] {
        for round in 0..=2 {
            assert_eq!(check("som", plain(), kind, round, 2), Ok(()));
        }
    }
    let past = check("som", plain(), Null, 3, 2).unwrap_err();
    assert!(past.contains("rounds are 0 to 2"), "{past}");
    // cot and cot-sc have round 0 only: a fork there replaces or resamples a first answer.
    assert_eq!(check("cot-sc", plain(), Say, 0, 0), Ok(()));
    assert!(check("cot", plain(), Null, 1, 0)
        .unwrap_err()
        .contains("rounds are 0 to 0"));
    // SVR-MAD: round 0 only, with the reason.
    let svr = check("svr-mad", plain(), Null, 1, 1).unwrap_err();
    assert!(svr.contains("challenge steps"), "{svr}");
    let confidence = || ProtocolOptions {
        prior: Some(Prior::Confidence),
        ..ProtocolOptions::default()
    };
    assert_eq!(check("svr-mad", confidence(), Say, 0, 1), Ok(()));
    // Its logprob priors read what injected text lacks.
    let min_ll = ProtocolOptions {
        prior: Some(Prior::MinLl),
        ..ProtocolOptions::default()
    };
    let lp = check("svr-mad", min_ll, Say, 0, 1).unwrap_err();
    assert!(lp.contains("log-probabilities"), "{lp}");
    // SID-ET: no say anywhere; null and model forks are fine.
    let sid = check("sid-et", plain(), Say, 1, 2).unwrap_err();
    assert!(sid.contains("log-likelihoods"), "{sid}");
    assert_eq!(check("sid-et", plain(), Null, 1, 2), Ok(()));
    assert_eq!(check("sid-et", plain(), Model, 0, 2), Ok(()));
    // MAD-M²: say refused under objective masking only.
    let masked = |masking| ProtocolOptions {
        masking: Some(masking),
        ..ProtocolOptions::default()
    };
    let objective = check("mad-m2", masked(Masking::Objective), Say, 1, 2).unwrap_err();
    assert!(objective.contains("perplexity"), "{objective}");
    assert!(objective.starts_with("mad-m2 cannot be forked with say at round 1"));
    assert_eq!(
        check("mad-m2", masked(Masking::SubjectiveStrict), Say, 1, 2),
        Ok(())
    );
    assert_eq!(
        check("mad-m2", masked(Masking::Objective), Null, 1, 2),
        Ok(())
    );
}
