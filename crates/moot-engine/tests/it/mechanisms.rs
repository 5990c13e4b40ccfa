//! Each protocol's mechanism, shown working in the direction its paper claims, on a simulated
//! population ([`moot_backends::sim`]) built to exercise it, through the real engine pipeline.
//!
//! Every test is deterministic: debates are seeded (seed `s` gives agent `i` the model seed
//! `100·s + i` and the debate seed `s`), so the numbers in the comments were measured with these
//! exact seeds and populations, and each assertion keeps a clear margin below them. Comparisons
//! run both protocols on the same agents and seeds, so they start from the same round-0 answers
//! (unless a fault changes an agent's prompt).

use std::sync::Arc;
use std::time::Duration;

use moot_backends::scripted::{Scripted, ScriptedModel};
use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::LanguageModel;
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::DebateSpec;
use moot_core::decision::{Action, DecisionConfig};
use moot_core::faults::Faults;
use moot_core::protocol::{build_protocol, Masking, Ordering, ProtocolOptions};
use moot_core::topology::group_of;
use moot_engine::{DebateResult, DebateSetup, EngineAgent, EngineConfig, NoObserver};
use moot_store::{CallRecord, MemoryStore};

const GOLD: &str = "408";

fn spec(agents: usize, rounds: usize, seed: u64) -> DebateSpec {
    DebateSpec::with_agents(
        "What is 17 * 24?",
        AnswerKind::Numeric,
        agents,
        rounds,
        seed,
    )
}

/// Sim answers at once: the deadlines never matter, and every agent is waited for.
fn config(agents: usize) -> EngineConfig {
    EngineConfig {
        soft_timeout: Duration::from_secs(60),
        hard_timeout: Duration::from_secs(120),
        min_agents: agents,
        max_concurrent_calls: 8,
        cache: false,
        cache_max_entries: None,
        budget: Default::default(),
        reask: true,
    }
}

/// Runs one debate of `protocol` among `population` (one sim model per agent, its own seed and
/// session) for `rounds` requested debate rounds, decided under the protocol's default rule.
async fn debate(
    protocol: &str,
    options: &ProtocolOptions,
    population: &[SimAgent],
    rounds: usize,
    seed: u64,
) -> DebateResult {
    let store = MemoryStore::default();
    let protocol = build_protocol(protocol, options).unwrap();
    // The whole population, fitted to the protocol's shape by the constructor.
    let n = population.len();
    let agents = population
        .iter()
        .enumerate()
        .map(|(i, a)| EngineAgent {
            model: Arc::new(SimModel::new(
                a.clone(),
                GOLD,
                AnswerKind::Numeric,
                seed * 100 + i as u64,
            )) as Arc<dyn LanguageModel>,
            params: SamplingParams::default(),
        })
        .collect();
    let mut d = DebateSetup {
        run_id: format!("s{seed}"),
        spec: spec(n, rounds, seed),
        protocol,
        agents,
        config: config(n),
        rule: None,
        store: &store,
    }
    .build()
    .unwrap();
    d.create(serde_json::json!({})).await.unwrap();
    d.run(&DecisionConfig::default(), &NoObserver)
        .await
        .unwrap()
}

/// Agent `agent`'s answer in `round` as the decision rules see it.
fn answer(r: &DebateResult, agent: usize, round: usize) -> Option<String> {
    let t = r.transcript.trajectory().unwrap();
    t.cell(agent, round)
        .answer()
        .map(|a| a.canonical().to_string())
}

/// Share of `agents` holding gold in the last round.
fn gold_share(r: &DebateResult, agents: &[usize]) -> f64 {
    let last = r.transcript.trajectory().unwrap().last_round();
    let right = agents
        .iter()
        .filter(|&&a| answer(r, a, last).as_deref() == Some(GOLD))
        .count();
    right as f64 / agents.len() as f64
}

fn decided(r: &DebateResult, rule: &str) -> Option<String> {
    r.decisions
        .iter()
        .find(|d| d.rule == rule)
        .and_then(|d| d.answer.as_ref())
        .map(|a| a.canonical().to_string())
}

/// Calls made to a model (skipped calls excluded).
fn calls_made(r: &DebateResult) -> usize {
    r.records.iter().filter(|c| !c.skipped).count()
}

/// Debate-round answer calls (not judgements or challenges).
fn debate_calls(r: &DebateResult) -> impl Iterator<Item = &CallRecord> {
    r.records
        .iter()
        .filter(|c| c.round >= 1 && c.slot == "answer")
}

/// Means over seeds of one protocol on one population.
#[derive(Debug, Default)]
struct Stats {
    /// Share of agents holding gold in the last round.
    gold_last: f64,
    /// Share of debates whose chosen decision is gold.
    right: f64,
    ncomm: f64,
    calls: f64,
}

async fn measure(
    protocol: &str,
    options: &ProtocolOptions,
    population: &[SimAgent],
    rounds: usize,
    seeds: std::ops::Range<u64>,
) -> Stats {
    let count = (seeds.end - seeds.start) as f64;
    let all: Vec<usize> = (0..population.len()).collect();
    let mut s = Stats::default();
    for seed in seeds {
        let r = debate(protocol, options, population, rounds, seed).await;
        s.gold_last += gold_share(&r, &all);
        s.right += f64::from(u8::from(decided(&r, r.chosen).as_deref() == Some(GOLD)));
        s.ncomm += r.ncomm() as f64;
        s.calls += calls_made(&r) as f64;
    }
    Stats {
        gold_last: s.gold_last / count,
        right: s.right / count,
        ncomm: s.ncomm / count,
        calls: s.calls / count,
    }
}

/// Agents that follow their peers (β = 3) and re-derive rather than trust their last answer
/// (α = 1), torn between gold and one distractor.
fn conformist(accuracy: f64) -> SimAgent {
    SimAgent {
        accuracy,
        distractors: vec!["418".into()],
        beta: 3.0,
        beta_conform: 3.0,
        beta_anti: 3.0,
        alpha: 1.0,
        calibrated: true,
        judge_accuracy: 0.9,
        ..SimAgent::default()
    }
}

fn with_masking(masking: Masking) -> ProtocolOptions {
    ProtocolOptions {
        masking: Some(masking),
        ..ProtocolOptions::default()
    }
}

fn with_faults(faults: Faults) -> ProtocolOptions {
    ProtocolOptions {
        faults,
        ..ProtocolOptions::default()
    }
}

/// MAD-M²: masking the memories a judge finds wrong keeps wrong answers from spreading, where
/// `som` lets a conformist population follow whatever its peers said.
#[tokio::test]
async fn mad_m2_subjective_masking_stops_erroneous_memories_from_misleading() {
    let population = vec![conformist(0.45); 3];
    let som = measure("som", &ProtocolOptions::default(), &population, 2, 0..150).await;
    let m2 = measure(
        "mad-m2",
        &ProtocolOptions::default(),
        &population,
        2,
        0..150,
    )
    .await;
    println!("mad-m2 strict {m2:?}\nsom {som:?}");
    // Measured: gold share in the last round 0.742 (mad-m2) vs 0.418 (som); majority-last right
    // 0.760 vs 0.400.
    assert!(m2.gold_last > som.gold_last + 0.2, "{m2:?} vs {som:?}");
    assert!(m2.right > som.right + 0.2, "{m2:?} vs {som:?}");

    // Judgements are real calls: recorded in the memory's round, counted in tokens and NComm.
    let r = debate("mad-m2", &ProtocolOptions::default(), &population, 2, 3).await;
    let judgements: Vec<&CallRecord> = r
        .records
        .iter()
        .filter(|c| c.slot.starts_with("judge:"))
        .collect();
    // Shared judging: each of the 3 memories of rounds 0 and 1 is judged once.
    assert_eq!(judgements.len(), 6);
    for j in &judgements {
        assert!(j.round <= 1, "{}", j.slot);
        assert!(j.output_tokens > 0 && j.input_tokens > 0);
        assert_eq!(j.ncomm, 1, "a judgement of another agent's memory");
        let label = j.response_text.as_deref().unwrap();
        assert!(label.contains("<label>"), "{label}");
    }
    let answers_out: u64 = r
        .records
        .iter()
        .filter(|c| c.slot == "answer")
        .map(|c| c.output_tokens)
        .sum();
    let judge_out: u64 = judgements.iter().map(|j| j.output_tokens).sum();
    assert_eq!(r.usage().output_tokens, answers_out + judge_out);
    // Every debate call records a mask decision for each of its candidate memories.
    for c in debate_calls(&r) {
        assert_eq!(c.notes["masks"].as_array().unwrap().len(), 3, "{}", c.notes);
    }
}

/// MAD-M² objective masking keeps the lowest-perplexity memory: when logprobs are calibrated
/// (right answers are more likely), that memory is mostly a right one.
#[tokio::test]
async fn mad_m2_objective_masking_works_with_calibrated_logprobs_and_needs_them() {
    let population = vec![conformist(0.45); 3];
    let som = measure("som", &ProtocolOptions::default(), &population, 2, 0..150).await;
    let objective = with_masking(Masking::Objective);
    let m2 = measure("mad-m2", &objective, &population, 2, 0..150).await;
    println!("mad-m2 objective {m2:?}\nsom {som:?}");
    // Measured: gold share in the last round 0.824 (objective) vs 0.418 (som); right 0.867 vs
    // 0.400.
    assert!(m2.gold_last > som.gold_last + 0.25, "{m2:?} vs {som:?}");
    assert!(m2.right > som.right + 0.25, "{m2:?} vs {som:?}");
    // No judgement calls under objective masking; one memory kept per debate call.
    let r = debate("mad-m2", &objective, &population, 2, 5).await;
    assert!(r.records.iter().all(|c| c.slot == "answer"));
    for c in debate_calls(&r) {
        let kept = c.notes["masks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kept"] == true)
            .count();
        assert_eq!(kept, 1, "{}", c.notes);
    }

    // A backend without logprobs is refused before the debate starts.
    let store = MemoryStore::default();
    let scripted: Vec<EngineAgent> = (0..3)
        .map(|_| {
            let model = ScriptedModel::new("scripted", [Scripted::reply("Final answer: 408")]);
            assert!(!model.capabilities().logprobs);
            EngineAgent {
                model: Arc::new(model),
                params: SamplingParams::default(),
            }
        })
        .collect();
    let refused = DebateSetup {
        run_id: "no-logprobs".into(),
        spec: spec(3, 2, 1),
        protocol: build_protocol("mad-m2", &objective).unwrap(),
        agents: scripted,
        config: config(3),
        rule: None,
        store: &store,
    }
    .build();
    let Err(e) = refused else {
        panic!("a backend without logprobs was accepted for objective masking")
    };
    assert!(e.to_string().contains("logprobs"), "{e}");
}

/// MADC: when later speakers carry more influence, putting the most agreed-with answers last
/// steers the debate to the majority, which here is mostly right.
#[tokio::test]
async fn madc_consistency_last_beats_random_order_under_recency_bias() {
    let population = vec![
        SimAgent {
            accuracy: 0.65,
            distractors: vec!["418".into(), "398".into()],
            beta: 4.0,
            beta_conform: 4.0,
            beta_anti: 4.0,
            alpha: 1.0,
            recency: 6.0,
            ..SimAgent::default()
        };
        5
    ];
    let random = ProtocolOptions {
        ordering: Some(Ordering::Random),
        ..ProtocolOptions::default()
    };
    let last = measure("madc", &ProtocolOptions::default(), &population, 1, 0..150).await;
    let shuffled = measure("madc", &random, &population, 1, 0..150).await;
    println!("madc consistency-last {last:?}\nmadc random {shuffled:?}");
    // Measured: gold share in the last round 0.843 (consistency-last) vs 0.728 (random); right
    // 0.853 vs 0.713.
    assert!(
        last.gold_last > shuffled.gold_last + 0.06,
        "{last:?} vs {shuffled:?}"
    );
    assert!(
        last.right > shuffled.right + 0.06,
        "{last:?} vs {shuffled:?}"
    );

    // The speaking order is recorded with every debate call, most consistent agent last.
    let r = debate("madc", &ProtocolOptions::default(), &population, 1, 2).await;
    for c in debate_calls(&r) {
        let note = &c.notes["ordering"];
        assert_eq!(note["policy"], "consistency-last", "{}", c.notes);
        let order: Vec<usize> = serde_json::from_value(note["order"].clone()).unwrap();
        let consistency: Vec<usize> = serde_json::from_value(note["consistency"].clone()).unwrap();
        assert_eq!(order.len(), 5);
        let max = consistency.iter().max().unwrap();
        assert_eq!(consistency[*order.last().unwrap()], *max);
        // The peers appear in that order.
        let expected: Vec<u32> = order
            .iter()
            .filter(|&&a| a != c.agent as usize)
            .map(|&a| a as u32)
            .collect();
        assert_eq!(c.peers, expected);
    }
    let r = debate("madc", &random, &population, 1, 2).await;
    assert!(debate_calls(&r).all(|c| c.notes["ordering"]["policy"] == "random"));
}

/// SVR-MAD: the likeliest-correct agent is challenged by the disagreeing ones; a correct
/// minority that survives every challenge is accepted, over a wrong majority, with a handful of
/// messages instead of all-to-all rounds.
#[tokio::test]
async fn svr_mad_accepts_a_correct_minority_that_survives_challenges() {
    // Experts never change their (always right) answer; followers are mostly wrong and would
    // yield to the right answer. Calibrated: right answers carry the higher min-ll prior.
    let expert = SimAgent {
        accuracy: 1.0,
        alpha: 0.0,
        calibrated: true,
        ..SimAgent::default()
    };
    let follower = SimAgent {
        accuracy: 0.1,
        distractors: vec!["418".into()],
        alpha: 1.0,
        beta: 5.0,
        beta_conform: 5.0,
        beta_anti: 5.0,
        calibrated: true,
        ..SimAgent::default()
    };
    // The experts sit last: being chosen as receiver is about the prior, not the agent number.
    let population = vec![
        follower.clone(),
        follower.clone(),
        follower,
        expert.clone(),
        expert,
    ];
    let mut wrong_majorities = 0;
    for seed in 0..40 {
        let svr = debate("svr-mad", &ProtocolOptions::default(), &population, 0, seed).await;
        let pre: Vec<Option<String>> = (0..5).map(|a| answer(&svr, a, 0)).collect();
        let count = |x: &str| pre.iter().filter(|a| a.as_deref() == Some(x)).count();
        if count(GOLD) >= count("418") {
            continue;
        }
        wrong_majorities += 1;
        let sc = debate("cot-sc", &ProtocolOptions::default(), &population, 0, seed).await;
        assert_eq!(decided(&sc, "majority-last").as_deref(), Some("418"));
        let d = svr.decision().unwrap();
        assert_eq!(d.rule, "svr");
        assert_eq!(d.answer.as_ref().unwrap().canonical(), GOLD, "seed {seed}");
        assert_eq!(d.events.last().unwrap().action, Action::Accept);
        // One iteration: an expert receives the two (default S) top disagreeing challengers.
        let challenges: Vec<&CallRecord> = svr
            .records
            .iter()
            .filter(|c| c.slot.starts_with("challenge:"))
            .collect();
        assert_eq!(challenges.len(), 2, "seed {seed}");
        assert!(challenges.iter().all(|c| c.agent >= 3));
        assert_eq!(svr.ncomm(), 2);
        // All-to-all: 5 agents read 4 peers each per round.
        let som = debate("som", &ProtocolOptions::default(), &population, 1, seed).await;
        assert_eq!(som.ncomm(), 20);
    }
    println!("{wrong_majorities} of 40 seeds start from a wrong majority");
    // Measured: 27 of 40 seeds start from a wrong majority (all three followers wrong).
    assert!(wrong_majorities >= 20, "{wrong_majorities}");
}

/// SID-ET: a confident (high min-ll) agent answers alone and the debate is skipped; when no
/// agent is confident, the agents debate.
#[tokio::test]
async fn sid_et_skips_the_debate_when_one_agent_is_confident() {
    let sure = SimAgent {
        accuracy: 1.0,
        calibrated: true,
        ..SimAgent::default()
    };
    let wrong = SimAgent {
        accuracy: 0.0,
        distractors: vec!["418".into()],
        beta: 3.0,
        beta_conform: 3.0,
        beta_anti: 3.0,
        calibrated: true,
        ..SimAgent::default()
    };
    // Right and calibrated: min logprob −0.5, above the default threshold −1.0.
    let one_right = vec![wrong.clone(), sure, wrong.clone()];
    for seed in 0..10 {
        let sid = debate("sid-et", &ProtocolOptions::default(), &one_right, 2, seed).await;
        assert_eq!(sid.calls_per_round(), vec![(0, 3)]);
        let later: Vec<&CallRecord> = sid.records.iter().filter(|c| c.round >= 1).collect();
        assert_eq!(later.len(), 6);
        assert!(later.iter().all(|c| c.skipped && c.error.is_some()));
        let d = sid.decision().unwrap();
        assert_eq!(d.rule, "sid-et");
        assert_eq!(d.answer.as_ref().unwrap().canonical(), GOLD);
        assert_eq!(d.events[0].action, Action::Accept);
        assert_eq!(d.events[0].agent, Some(1));
        let som = debate("som", &ProtocolOptions::default(), &one_right, 2, seed).await;
        assert_eq!(calls_made(&som), 9);
        assert_eq!(som.ncomm(), 12);
        assert_eq!(sid.ncomm(), 0);
    }
    // All wrong: min logprob −2.5 everywhere, so the debate runs like som.
    let all_wrong = vec![wrong; 3];
    for seed in 0..10 {
        let sid = debate("sid-et", &ProtocolOptions::default(), &all_wrong, 2, seed).await;
        assert!(sid.records.iter().all(|c| !c.skipped));
        assert_eq!(sid.calls_per_round(), vec![(0, 3), (1, 3), (2, 3)]);
        let som = debate("som", &ProtocolOptions::default(), &all_wrong, 2, seed).await;
        assert_eq!(calls_made(&sid), calls_made(&som));
        assert_eq!(sid.ncomm(), som.ncomm());
        let d = sid.decision().unwrap();
        assert!(d.events.iter().all(|e| e.action != Action::Accept));
    }
}

/// S2-MAD: no messages between agents that already agree, and agreed agents skip their turn:
/// far fewer communications and calls on a population that mostly agrees, at no loss of accuracy.
#[tokio::test]
async fn s2_mad_saves_communication_on_an_agreeing_population() {
    // Mild conformity. Under stronger conformity S2-MAD loses accuracy here: pruning the peers
    // that agree hides the agent's support, so an agent holding gold among agreeing peers reads
    // only the dissenters. Measured with β = 1 (the sim's default): majority-last right 0.920
    // (s2-mad) vs 0.973 (som); with β = 2: 0.867 vs 0.980 (cot-sc: 0.967).
    let population = vec![
        SimAgent {
            accuracy: 0.8,
            distractors: vec!["418".into(), "398".into()],
            beta: 0.5,
            beta_conform: 0.5,
            beta_anti: 0.5,
            alpha: 0.5,
            ..SimAgent::default()
        };
        5
    ];
    let som = measure("som", &ProtocolOptions::default(), &population, 2, 0..150).await;
    let s2 = measure(
        "s2-mad",
        &ProtocolOptions::default(),
        &population,
        2,
        0..150,
    )
    .await;
    println!("s2-mad {s2:?}\nsom {som:?}");
    // Measured: NComm 12.53 vs 40 per debate, calls 11.40 vs 15; majority-last right 0.967 vs
    // 0.967, gold share in the last round 0.845 vs 0.823.
    assert_eq!(som.ncomm, 40.0);
    assert_eq!(som.calls, 15.0);
    assert!(s2.ncomm < som.ncomm * 0.5, "{s2:?}");
    assert!(s2.calls < som.calls - 2.0, "{s2:?}");
    assert!(s2.right >= som.right - 0.03, "{s2:?} vs {som:?}");
    assert!(s2.gold_last >= som.gold_last - 0.03, "{s2:?} vs {som:?}");
    // The pruned peers and skips are recorded.
    let r = debate("s2-mad", &ProtocolOptions::default(), &population, 2, 0).await;
    for c in debate_calls(&r) {
        if c.skipped {
            assert!(c.error.as_deref().unwrap().contains("s2-mad"));
            assert_eq!(c.ncomm, 0);
        } else {
            let pruned = c
                .notes
                .get("pruned")
                .and_then(|p| p.as_array())
                .map_or(0, Vec::len);
            assert_eq!(c.ncomm as usize + pruned, 4, "{}", c.notes);
        }
    }
}

/// GroupDebate: full solutions inside a group, final answers only across groups.
#[tokio::test]
async fn group_debate_shows_only_answers_across_groups() {
    let population = vec![conformist(0.6); 6];
    for seed in 0..5 {
        let r = debate(
            "group-debate",
            &ProtocolOptions::default(),
            &population,
            2,
            seed,
        )
        .await;
        let groups = group_of(6, 2, seed);
        for round in 1..=2 {
            let ncomm: u32 = debate_calls(&r)
                .filter(|c| c.round == round)
                .map(|c| c.ncomm)
                .sum();
            assert_eq!(ncomm, 30, "every agent reads its 5 peers");
        }
        for c in debate_calls(&r) {
            let me = c.agent as usize;
            let mut across: Vec<usize> =
                serde_json::from_value(c.notes["answers_only"].clone()).unwrap();
            across.sort_unstable();
            let expected: Vec<usize> = (0..6).filter(|&p| groups[p] != groups[me]).collect();
            assert_eq!(across, expected, "seed {seed}: {}", c.notes);
            let prompt = c.messages.as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string();
            assert_eq!(prompt.matches("from another group]").count(), 3);
            assert_eq!(prompt.matches("'s solution]\nI worked through").count(), 2);
        }
        assert!(r.decision().and_then(|d| d.answer.as_ref()).is_some());
    }
    // NComm counts an answers-only message like a full one; the saving is in the prompt tokens.
    for seed in 0..5 {
        let group = debate(
            "group-debate",
            &ProtocolOptions::default(),
            &population,
            2,
            seed,
        )
        .await;
        let som = debate("som", &ProtocolOptions::default(), &population, 2, seed).await;
        assert_eq!(group.ncomm(), som.ncomm());
        assert!(
            group.usage().input_tokens < som.usage().input_tokens,
            "{:?} vs {:?}",
            group.usage(),
            som.usage()
        );
    }
    let group = measure(
        "group-debate",
        &ProtocolOptions::default(),
        &population,
        2,
        0..100,
    )
    .await;
    let sc = measure(
        "cot-sc",
        &ProtocolOptions::default(),
        &population,
        0,
        0..100,
    )
    .await;
    println!("group-debate {group:?}\ncot-sc {sc:?}");
    // Measured: right 0.840 (group-debate) vs 0.760 (cot-sc).
    assert!(group.right >= sc.right - 0.05, "{group:?} vs {sc:?}");
}

/// Faults (FREE-MAD appendix A): a cut-off agent reads nothing but is still read.
#[tokio::test]
async fn cut_off_agents_read_nothing_but_are_still_read() {
    let faults = Faults {
        cut_off: 0.34,
        ..Faults::default()
    };
    let options = with_faults(faults.clone());
    let population = vec![conformist(0.6); 3];
    for seed in 0..5 {
        let r = debate("free-mad-n", &options, &population, 2, seed).await;
        let cut = faults.cut_off_agents(3, seed);
        assert_eq!(cut.len(), 1);
        let cut = cut[0] as u32;
        for c in debate_calls(&r) {
            if c.agent == cut {
                assert_eq!(c.ncomm, 0);
                assert!(c.peers.is_empty());
                let notes = c.notes["faults"].as_array().unwrap();
                assert_eq!(notes.len(), 2);
                assert!(notes.iter().all(|n| n["fate"] == "cut-off"), "{}", c.notes);
                assert!(c.response_text.is_some(), "it still answers");
            } else {
                assert_eq!(c.ncomm, 2);
                assert!(c.peers.contains(&cut));
                assert!(c.notes.get("faults").is_none(), "{}", c.notes);
            }
        }
    }
}

/// Honest agents' share of gold in the last round, with and without one saboteur arguing for
/// `target` (the same agents, seeds and saboteur position).
async fn honest_gold_share(population: &[SimAgent], target: &str) -> (f64, f64) {
    let faults = Faults {
        malicious: 0.34,
        malicious_answer: Some(target.into()),
        ..Faults::default()
    };
    let attacked = with_faults(faults.clone());
    let (mut under_attack, mut clean) = (0.0, 0.0);
    let seeds = 0..150u64;
    let count = seeds.clone().count() as f64;
    for seed in seeds {
        let bad = faults.malicious_agents(3, seed);
        assert_eq!(bad.len(), 1);
        let honest: Vec<usize> = (0..3).filter(|a| !bad.contains(a)).collect();
        let r = debate("som", &attacked, population, 2, seed).await;
        for round in 0..=2 {
            assert_eq!(answer(&r, bad[0], round).as_deref(), Some(target));
        }
        assert!(r
            .records
            .iter()
            .filter(|c| c.agent as usize == bad[0])
            .all(|c| c.notes["malicious"] == target));
        assert!(r
            .records
            .iter()
            .filter(|c| c.agent as usize != bad[0])
            .all(|c| c.notes.get("malicious").is_none()));
        under_attack += gold_share(&r, &honest);
        let r = debate("som", &ProtocolOptions::default(), population, 2, seed).await;
        clean += gold_share(&r, &honest);
    }
    (under_attack / count, clean / count)
}

/// A saboteur argues for its wrong answer every round and drags a conformist population away
/// from gold: by diluting the support for gold when its answer is implausible, and far more when
/// it argues for the answer honest agents already fall for.
#[tokio::test]
async fn a_malicious_agent_drags_honest_conformists_away_from_gold() {
    let population = vec![conformist(0.6); 3];
    let (attacked, clean) = honest_gold_share(&population, "999").await;
    println!("saboteur for 999: honest gold share {attacked:.3} attacked, {clean:.3} clean");
    // Measured: 0.587 under attack vs 0.697 without.
    assert!(attacked < clean - 0.05, "{attacked} vs {clean}");
    let (attacked, clean) = honest_gold_share(&population, "418").await;
    println!("saboteur for 418: honest gold share {attacked:.3} attacked, {clean:.3} clean");
    // Measured: 0.257 under attack vs 0.697 without.
    assert!(attacked < clean - 0.3, "{attacked} vs {clean}");
}

/// Dropped messages: fewer communications, and each loss is recorded where it happened.
#[tokio::test]
async fn dropped_messages_cut_communication_and_are_recorded() {
    let options = with_faults(Faults {
        drop: 0.5,
        ..Faults::default()
    });
    let population = vec![conformist(0.6); 4];
    let (mut total, mut dropped_total) = (0, 0);
    let seeds = 0..20u64;
    let debates = seeds.clone().count();
    for seed in seeds {
        let r = debate("som", &options, &population, 2, seed).await;
        for c in debate_calls(&r) {
            let dropped = c
                .notes
                .get("faults")
                .and_then(|f| f.as_array())
                .map_or(0, |f| {
                    assert!(f.iter().all(|n| n["fate"] == "dropped"), "{}", c.notes);
                    f.len()
                });
            assert_eq!(c.ncomm as usize + dropped, 3, "{}", c.notes);
            assert_eq!(c.peers.len(), c.ncomm as usize);
            dropped_total += dropped;
        }
        total += r.ncomm();
    }
    let fault_free = 24 * debates as u64;
    println!("ncomm {total} of {fault_free}, {dropped_total} dropped");
    // Measured: 245 of the 480 fault-free messages delivered, 235 dropped.
    assert_eq!(total + dropped_total as u64, fault_free);
    assert!(total < fault_free * 2 / 3, "{total} of {fault_free}");
}
