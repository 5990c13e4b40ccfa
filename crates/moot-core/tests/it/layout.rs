//! `debate.layout`: the papers' layout stays exactly as it was, and under `shared-first` every
//! agent's prompt of a debate round starts with the same text: the question and every solution
//! shown so far, in one order whatever the agent.

use moot_core::answer::AnswerKind;
use moot_core::chat::ChatMessage;
use moot_core::contract::ReplyContract;
use moot_core::debate::{AgentRole, AgentSpec, CallKey, DebateSpec, Outcome, Transcript};
use moot_core::layout::{flatten, shared_prefix, Layout};
use moot_core::prompts::{peer_block, round_heading};
use moot_core::protocol::{
    build_protocol, PlannedCall, Protocol, ProtocolOptions, Step, TopologyName,
};
use proptest::prelude::*;
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
    let recorded: Value = serde_json::from_str(include_str!("../data/papers-layout.json")).unwrap();
    let now = papers_snapshot();
    for (protocol, calls) in recorded.as_object().unwrap() {
        assert_eq!(&now[protocol], calls, "{protocol}");
    }
    assert_eq!(now, recorded);
}

fn shared_first(s: DebateSpec) -> DebateSpec {
    DebateSpec {
        layout: Layout::SharedFirst,
        ..s
    }
}

fn prompts_of(calls: &[PlannedCall]) -> Vec<&[ChatMessage]> {
    calls
        .iter()
        .filter(|c| c.skipped().is_none())
        .map(|c| &c.messages[..])
        .collect()
}

/// Where `needle` is in `text` at or after `from`, and the end of it.
fn after(text: &str, from: usize, needle: &str) -> Option<usize> {
    text[from..].find(needle).map(|i| from + i + needle.len())
}

/// One response per agent and round, or none (the call timed out); every call an agent makes
/// in a round (a judgement, a challenge) gets that round's response.
type Script = Vec<Vec<Option<String>>>;

/// Plays `script` under `protocol` and hands every step's calls (round 0's too) to `check` with
/// the round and the transcript they were planned from.
fn play(
    protocol: &str,
    options: &ProtocolOptions,
    s: &DebateSpec,
    script: &Script,
    mut check: impl FnMut(usize, &[PlannedCall], &Transcript),
) {
    let p = build_protocol(protocol, options).unwrap();
    let mut t = Transcript::new(s.agents.len(), s.rounds);
    for _ in 0..100 {
        let (round, planned) = match p.next(s, &t) {
            Step::Round { round, calls } => (round, calls),
            Step::Done => return,
        };
        check(round, &planned, &t);
        for c in &planned {
            // Rounds past the script (svr-mad's challenge steps) answer as round 0 did.
            let scripted = script
                .get(round)
                .unwrap_or(&script[0])
                .get(c.agent)
                .cloned()
                .flatten();
            let outcome = match (c.skipped(), &scripted) {
                (Some(reason), _) => Outcome::Skipped {
                    reason: reason.into(),
                },
                (None, Some(text)) => Outcome::Responded {
                    text: text.clone(),
                    answer: s.extract(text),
                    logprobs: None,
                },
                (None, None) => Outcome::Missing {
                    reason: "timeout".into(),
                },
            };
            assert!(
                t.set_call(c.key(), outcome),
                "{:?} is in the debate",
                c.key()
            );
        }
    }
    panic!("{protocol} did not finish in 100 steps");
}

fn script(agents: usize, rounds: usize) -> impl Strategy<Value = Script> {
    let response = prop::option::weighted(0.85, "[a-z ]{0,30}\n?Final answer: [0-9]{1,3}");
    prop::collection::vec(prop::collection::vec(response, agents), rounds + 1)
}

fn debate() -> impl Strategy<Value = (&'static str, usize, usize, Script)> {
    (
        prop::sample::select(vec!["som", "free-mad-n", "free-mad-c", "free-mad-neutral"]),
        2usize..6,
        1usize..4,
    )
        .prop_flat_map(|(protocol, agents, rounds)| {
            (
                Just(protocol),
                Just(agents),
                Just(rounds),
                script(agents, rounds),
            )
        })
}

proptest! {
    /// Under shared-first, every agent's prompt of a debate round starts with the same text,
    /// and that text holds the question and every solution of every earlier round, each
    /// round's under its heading, in agent order, whoever reads it; each agent's own part
    /// follows it.
    #[test]
    fn every_agent_of_a_round_shares_the_question_and_every_solution_first(
        (protocol, agents, rounds, script) in debate()
    ) {
        let s = shared_first(DebateSpec::with_agents(
            "Tom has 3 apples and buys 4 more. How many?",
            AnswerKind::Numeric,
            agents,
            rounds,
            3,
        ));
        play(protocol, &ProtocolOptions::default(), &s, &script, |round, calls, t| {
            if round == 0 {
                return;
            }
            let prompts = prompts_of(calls);
            let shared = shared_prefix(prompts.iter().copied());
            let first = flatten(prompts[0]);
            let common = &first[..shared.common];
            let mut at = after(common, 0, &s.question).expect("the question is shared");
            for k in 0..round {
                let blocks: Vec<String> = (0..agents)
                    .filter_map(|a| t.effective(k, a).and_then(Outcome::text).map(|x| peer_block(a, x)))
                    .collect();
                if blocks.is_empty() {
                    continue;
                }
                at = after(common, at, &format!("{}\n\n", round_heading(k)))
                    .unwrap_or_else(|| panic!("round {k}'s heading is shared in order"));
                for block in blocks {
                    at = after(common, at, &block)
                        .unwrap_or_else(|| panic!("{block} is shared, in agent order"));
                }
            }
            assert!(
                shared.common >= first.find("\n\nYou are Agent ").unwrap(),
                "only the agent's own part differs"
            );
            for c in calls {
                assert!(c.messages.len() == 2 && c.template.ends_with("/shared-first"));
                let own = format!("You are Agent {}; ", c.agent + 1);
                assert!(c.messages[1].content.contains(&own));
            }
        });
    }

    /// What each agent reads is the papers' layout's, only placed elsewhere: every solution
    /// an agent's papers' conversation holds (its own answers, its peers' solutions) is in its
    /// shared-first prompt.
    #[test]
    fn shared_first_shows_every_solution_the_papers_layout_shows(
        (protocol, agents, rounds, script) in debate()
    ) {
        let papers = DebateSpec::with_agents("What is 6 * 7?", AnswerKind::Numeric, agents, rounds, 5);
        let shared = shared_first(papers.clone());
        let options = ProtocolOptions::default();
        let p = build_protocol(protocol, &options).unwrap();
        play(protocol, &options, &papers, &script, |round, calls, t| {
            if round == 0 {
                return;
            }
            let Step::Round { calls: reordered, .. } = p.next(&shared, t) else {
                panic!("shared-first plans the same rounds")
            };
            assert_eq!(calls.len(), reordered.len());
            for (c, r) in calls.iter().zip(&reordered) {
                assert_eq!((c.agent, &c.peers, c.notes.ncomm), (r.agent, &r.peers, r.notes.ncomm));
                let prompt = &r.messages[1].content;
                for m in &c.messages[1..] {
                    if m.role == moot_core::chat::Role::Assistant {
                        assert!(prompt.contains(&peer_block(c.agent, &m.content)));
                        continue;
                    }
                    for (i, _) in m.content.match_indices("[Agent ") {
                        let rest = &m.content[i..];
                        let end = rest.find("[End of Agent ").unwrap();
                        let close = end + rest[end..].find("solution]").unwrap() + "solution]".len();
                        assert!(prompt.contains(&rest[..close]), "{}", &rest[..close]);
                    }
                }
            }
        });
    }
}

/// A sparse topology still decides who reads whom: the layout moves solutions, it never shows
/// an agent one it would not have read.
#[test]
fn shared_first_keeps_the_topology() {
    let s = shared_first(DebateSpec::with_agents(
        "What is 6 * 7?",
        AnswerKind::Numeric,
        5,
        1,
        5,
    ));
    let options = ProtocolOptions {
        topology: Some(TopologyName::Ring),
        ..ProtocolOptions::default()
    };
    let script: Script = vec![
        (0..5)
            .map(|a| Some(format!("Final answer: {}", 40 + a)))
            .collect(),
        vec![None; 5],
    ];
    let mut checked = false;
    play("som", &options, &s, &script, |round, calls, _| {
        if round == 0 {
            return;
        }
        let prompt = &calls[0].messages[1].content;
        for (a, shown) in [(0, true), (1, true), (4, true), (2, false), (3, false)] {
            let block = peer_block(a, &format!("Final answer: {}", 40 + a));
            assert_eq!(prompt.contains(&block), shown, "agent {}", a + 1);
        }
        assert_eq!(calls[0].peers, vec![1, 4]);
        checked = true;
    });
    assert!(checked);
}

/// The layout changes only the prompts of protocols that carry an agent's conversation, and
/// `assigned`'s: `moa`'s and `mad-m2`'s memories are in one order already, agents on freemad's contract keep
/// freemad's layout, a `council` member ranks only the others' answers, a consultant debates
/// alone, and an `svr-mad` challenge shows one challenger.
#[test]
fn shared_first_leaves_every_other_prompt_as_it_was() {
    let mut freemad = DebateSpec::with_agents("What is 6 * 7?", AnswerKind::Numeric, 3, 2, 5);
    for a in &mut freemad.agents {
        a.contract = ReplyContract::Freemad;
    }
    // Debaters and rounds as the protocol's shape fits them.
    let with = |role, debaters, rounds| {
        let mut s =
            DebateSpec::with_agents("What is 6 * 7?", AnswerKind::Numeric, debaters, rounds, 5);
        s.agents.push(AgentSpec {
            role,
            ..AgentSpec::named("decider")
        });
        s
    };
    let cases = [
        ("free-mad-n", freemad.clone()),
        ("som", freemad),
        ("moa", with(AgentRole::Aggregator, 3, 2)),
        ("council", with(AgentRole::Chairman, 3, 1)),
        ("consultancy", with(AgentRole::Judge, 1, 2)),
        (
            "mad-m2",
            DebateSpec::with_agents("What is 6 * 7?", AnswerKind::Numeric, 3, 2, 5),
        ),
        (
            "svr-mad",
            DebateSpec::with_agents("What is 6 * 7?", AnswerKind::Numeric, 3, 0, 5),
        ),
    ];
    for (protocol, papers) in cases {
        let n = papers.agents.len();
        let script: Script = (0..3)
            .map(|r| {
                (0..n)
                    .map(|a| {
                        Some(format!(
                            "SOLUTION: {}\n\nFinal answer: {}",
                            40 + a + r,
                            40 + a + r
                        ))
                    })
                    .collect()
            })
            .collect();
        let shared = shared_first(papers.clone());
        let p = build_protocol(protocol, &ProtocolOptions::default()).unwrap();
        let mut steps = 0;
        play(
            protocol,
            &ProtocolOptions::default(),
            &papers,
            &script,
            |_, calls, t| {
                let Step::Round { calls: other, .. } = p.next(&shared, t) else {
                    panic!("{protocol}: shared-first plans the same steps")
                };
                assert_eq!(calls, &other[..], "{protocol}");
                steps += 1;
            },
        );
        assert!(steps >= 2, "{protocol} asked no peer-reading call");
    }
}

/// `assigned`: every debater's argument prompt starts with the question and the previous
/// round's arguments, and only its own part (who it is, its position) differs.
#[test]
fn assigned_debaters_share_the_previous_arguments_first() {
    let mut s = shared_first(DebateSpec::with_agents(
        "What is 6 * 7?",
        AnswerKind::Numeric,
        3,
        2,
        5,
    ));
    s.agents.push(AgentSpec {
        role: AgentRole::Judge,
        ..AgentSpec::named("judge")
    });
    let script: Script = (0..3)
        .map(|r| {
            (0..4)
                .map(|a| {
                    Some(format!(
                        "Argument {r} of {a}.\nFinal answer: {}",
                        41 + a % 2
                    ))
                })
                .collect()
        })
        .collect();
    let mut checked = 0;
    play(
        "assigned",
        &ProtocolOptions::default(),
        &s,
        &script,
        |round, calls, t| {
            if round == 0 {
                return;
            }
            let debaters: Vec<&PlannedCall> = calls.iter().filter(|c| c.agent < 3).collect();
            if debaters.is_empty() {
                return; // the judge's call, after the debaters'
            }
            let prompts: Vec<&[ChatMessage]> = debaters.iter().map(|c| &c.messages[..]).collect();
            let shared = shared_prefix(prompts.iter().copied());
            let first = flatten(prompts[0]);
            let own = first.find("You are Agent 1; ").unwrap();
            assert!(shared.common >= own, "round {round}");
            if round == 2 {
                for a in 0..3 {
                    let block = peer_block(a, t.get(1, a).and_then(Outcome::text).unwrap());
                    assert!(first[..own].contains(&block), "{block}");
                }
                checked += 1;
            }
            for c in &debaters {
                assert_eq!(c.template, "assigned-argue/shared-first");
            }
        },
    );
    assert_eq!(checked, 1);
}

/// A GSM8K answer of about the embedded model's mean length (its round-0 answers on
/// results/gsm8k-30 average 295 tokens, about 1,200 bytes), told apart by `variant`.
fn long_answer(variant: usize, answer: u32) -> String {
    let mut text = String::new();
    let mut step = 1;
    while text.len() < 1150 {
        text.push_str(&format!(
            "Step {step}: Janet's ducks lay 16 eggs per day; she eats {} for breakfast and bakes \
             muffins with {}, so we subtract those from the total before selling the rest.\n",
            3 + variant,
            4 + step % 3
        ));
        step += 1;
    }
    text.push_str(&format!("Final answer: {answer}"));
    text
}

/// Round 1 of the quick-start debate under one layout: what its prompts share, and the prompt
/// bytes a KV cache leaves to process in it, round 0 having run.
#[derive(Debug)]
struct RoundOne {
    shared: moot_core::layout::SharedPrefix,
    /// No cache: every byte.
    uncached: usize,
    /// A cache per agent (the embedded model's today: each agent's sequence keeps its own
    /// round-0 conversation, its answer included).
    per_agent: usize,
    /// One cache over every sequence (each prompt reuses the longest prefix it shares with
    /// any round-0 conversation or any prompt of the round before it).
    across_agents: usize,
}

/// The round-1 prompts of the quick-start debate (three agents, `free-mad-n`, on a GSM8K item
/// with answers of the embedded model's length) under `layout`, measured.
fn quick_start_round_one(layout: Layout) -> RoundOne {
    let s = DebateSpec {
        layout,
        ..DebateSpec::with_agents(
            "Janet’s ducks lay 16 eggs per day. She eats three for breakfast every morning and \
             bakes muffins for her friends every day with four. She sells the remainder at the \
             farmers' market daily for $2 per fresh duck egg. How much in dollars does she make \
             every day at the farmers' market?",
            AnswerKind::Numeric,
            3,
            1,
            41,
        )
    };
    let script: Script = vec![
        vec![
            Some(long_answer(0, 18)),
            Some(long_answer(1, 16)),
            Some(long_answer(2, 18)),
        ],
        vec![None; 3],
    ];
    let mut conversations: Vec<String> = Vec::new();
    let mut measured = None;
    play(
        "free-mad-n",
        &ProtocolOptions::default(),
        &s,
        &script,
        |round, calls, _| {
            if round == 0 {
                // What each agent's sequence holds after round 0: its prompt and its answer.
                for c in calls {
                    let mut held = c.messages.clone();
                    held.push(ChatMessage::assistant(script[0][c.agent].clone().unwrap()));
                    conversations.push(flatten(&held));
                }
                return;
            }
            let texts: Vec<String> = prompts_of(calls).into_iter().map(flatten).collect();
            let common = |a: &str, b: &str| moot_core::layout::common_prefix_len(&[a, b]);
            let mut per_agent = 0;
            let mut across_agents = 0;
            for (i, text) in texts.iter().enumerate() {
                per_agent += text.len() - common(text, &conversations[i]);
                let reused = conversations
                    .iter()
                    .chain(&texts[..i])
                    .map(|held| common(text, held))
                    .max()
                    .unwrap_or(0);
                across_agents += text.len() - reused;
            }
            measured = Some(RoundOne {
                shared: shared_prefix(prompts_of(calls)),
                uncached: texts.iter().map(String::len).sum(),
                per_agent,
                across_agents,
            });
        },
    );
    measured.unwrap()
}

/// The measurement README's "Prompt layout" quotes (run with `--nocapture` to see it). In round
/// 1 of the quick-start debate the papers' prompts share the system message and the question
/// alone, under a tenth of each prompt, and shared-first ones everything but the agent's own
/// part, over three quarters. What a cache leaves to process: under the papers' layout a cache
/// per agent already reuses each agent's conversation, and one across agents adds little;
/// shared-first needs the cache across agents, and then processes the least of all (with a
/// cache per agent alone it processes more than the papers' layout).
#[test]
fn in_round_one_of_the_quick_start_shared_first_shares_most_of_each_prompt() {
    let papers = quick_start_round_one(Layout::Papers);
    let shared = quick_start_round_one(Layout::SharedFirst);
    for (name, r) in [("papers", &papers), ("shared-first", &shared)] {
        let p = r.shared;
        println!(
            "{name}: {} of {} bytes per prompt shared ({:.0}%); bytes processed in round 1: {} \
             without a cache, {} with a cache per agent, {} with one across agents",
            p.common,
            p.total / p.prompts,
            100.0 * p.share(),
            r.uncached,
            r.per_agent,
            r.across_agents
        );
    }
    assert!(papers.shared.share() < 0.1, "{papers:?}");
    assert!(shared.shared.share() > 0.75, "{shared:?}");
    assert!(
        shared.across_agents < papers.across_agents,
        "{shared:?} {papers:?}"
    );
    assert!(papers.across_agents <= papers.per_agent, "{papers:?}");
    assert!(shared.per_agent > papers.per_agent, "{shared:?} {papers:?}");
}
