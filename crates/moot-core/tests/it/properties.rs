//! Property tests: answer round-trips and invariants, decision-rule invariants, metric bounds.

use moot_core::answer::{latex, Answer, AnswerKind, ExtractContext};
use moot_core::decision::{build_rule, DecisionConfig, TieBreak, RULES};
use moot_core::metrics::{gold_log_likelihood, round_entropy};
use moot_core::trajectory::{Cell, Trajectory};
use proptest::prelude::*;

fn ctx() -> ExtractContext<'static> {
    ExtractContext::default()
}

const NUMERIC_TEMPLATES: &[&str] = &[
    "The answer is {}.",
    "So she makes {} in total.\n#### {}",
    "Work...\n\\boxed{{}}",
    "**Answer:** {}",
    "<answer>{}</answer>",
    "Final Answer: | {} |",
    "x = 3 + 4 = 7, so the final answer is {}",
];

fn render(template: &str, value: &str) -> String {
    template.replace("{}", value)
}

proptest! {
    #[test]
    fn integers_survive_every_style(n in -1_000_000_000i64..1_000_000_000, t in 0..NUMERIC_TEMPLATES.len()) {
        let text = render(NUMERIC_TEMPLATES[t], &n.to_string());
        let a = Answer::extract(AnswerKind::Numeric, &text, &ctx());
        prop_assert_eq!(a.map(|a| a.canonical().to_string()), Some(n.to_string()));
    }

    #[test]
    fn thousands_separators_and_dollars_are_dropped(n in 0u64..10_000_000_000, t in 0..NUMERIC_TEMPLATES.len()) {
        let text = render(NUMERIC_TEMPLATES[t], &format!("${}", moot_core::text::thousands(n)));
        let a = Answer::extract(AnswerKind::Numeric, &text, &ctx());
        prop_assert_eq!(a.map(|a| a.canonical().to_string()), Some(n.to_string()));
    }

    #[test]
    fn decimals_round_trip_through_canonical(v in -1e9f64..1e9) {
        let text = format!("The answer is {v}.");
        let a = Answer::extract(AnswerKind::Numeric, &text, &ctx()).expect("a number");
        let again = Answer::parse(AnswerKind::Numeric, a.canonical(), &ctx()).expect("canonical parses");
        prop_assert_eq!(again.canonical(), a.canonical());
        prop_assert!(a.equivalent(&again));
        let value = a.numeric_value().expect("numeric");
        prop_assert!((value - v).abs() <= 1e-9 * v.abs().max(1.0));
    }

    #[test]
    fn fractions_equal_their_decimals(n in 1u32..1000, d in 1u32..1000) {
        let frac = Answer::parse(AnswerKind::Numeric, &format!("{n}/{d}"), &ctx()).expect("fraction");
        let dec = Answer::parse(AnswerKind::Numeric, &format!("{}", n as f64 / d as f64), &ctx()).expect("decimal");
        prop_assert!(frac.equivalent(&dec));
        let latex = Answer::parse(AnswerKind::Math, &format!("\\dfrac{{{n}}}{{{d}}}"), &ctx()).expect("latex");
        let math_dec = Answer::parse(AnswerKind::Math, &format!("{}", n as f64 / d as f64), &ctx()).expect("decimal");
        prop_assert!(latex.equivalent(&math_dec));
    }

    #[test]
    fn equivalence_is_reflexive_and_symmetric(a in -1e6f64..1e6, b in -1e6f64..1e6) {
        let x = Answer::parse(AnswerKind::Numeric, &a.to_string(), &ctx()).expect("number");
        let y = Answer::parse(AnswerKind::Numeric, &b.to_string(), &ctx()).expect("number");
        prop_assert!(x.equivalent(&x));
        prop_assert_eq!(x.equivalent(&y), y.equivalent(&x));
    }

    #[test]
    fn choice_letters_in_every_style(i in 0u8..10, style in 0usize..8) {
        let l = char::from(b'A' + i);
        let text = match style {
            0 => format!("Reasoning...\nThe answer is ({l})."),
            1 => format!("Answer: {l}"),
            2 => format!("the correct option is {l}) because it fits"),
            3 => format!("A careful look shows it.\n\n**{l}**"),
            4 => format!("\\boxed{{{l}}}"),
            5 => format!("Final answer: {}", l.to_ascii_lowercase()),
            6 => format!("So I pick option {l}."),
            _ => format!("Thinking.\n({l})"),
        };
        let a = Answer::extract(AnswerKind::Choice, &text, &ctx());
        prop_assert_eq!(a.map(|a| a.canonical().to_string()), Some(l.to_string()));
    }

    #[test]
    fn canonical_forms_are_fixed_points(kind in 0usize..5, s in "[a-j0-9 ,./\\-]{1,12}") {
        let kind = AnswerKind::ALL[kind];
        if let Some(a) = Answer::parse(kind, &s, &ctx()) {
            let again = Answer::parse(kind, a.canonical(), &ctx());
            prop_assert!(again.is_some(), "canonical {:?} of {:?} does not parse", a.canonical(), s);
            let again = again.unwrap();
            prop_assert_eq!(again.canonical(), a.canonical());
            prop_assert!(again.equivalent(&a));
        }
    }

    #[test]
    fn latex_normalisation_is_idempotent(s in "[0-9x+\\-*/^(){} ]{0,16}|\\\\frac\\{[0-9]{1,3}\\}\\{[1-9]{1,3}\\}|\\\\sqrt\\{[0-9]{1,3}\\}") {
        let once = latex::normalize(&s);
        prop_assert_eq!(latex::normalize(&once), once);
    }

    #[test]
    fn extraction_never_panics(s in "\\PC{0,200}", kind in 0usize..5) {
        let _ = Answer::extract(AnswerKind::ALL[kind], &s, &ctx());
        let _ = Answer::parse(AnswerKind::ALL[kind], &s, &ctx());
    }
}

/// Trajectories over a small alphabet, with responses without answers ("?") and missing
/// responses ("-").
fn trajectory_strategy() -> impl Strategy<Value = Vec<Vec<&'static str>>> {
    (1usize..6, 1usize..5).prop_flat_map(|(agents, rounds)| {
        prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "?", "-"]), rounds),
            agents,
        )
    })
}

fn build(rows: &[Vec<&str>]) -> Trajectory {
    Trajectory::new(
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|&s| match s {
                        "-" => Cell::Missing,
                        "?" => Cell::Answered(None),
                        s => Cell::Answered(Some(Answer::verbatim(s))),
                    })
                    .collect()
            })
            .collect(),
    )
    .expect("rectangular")
}

fn configs() -> Vec<DecisionConfig> {
    vec![
        DecisionConfig::default(),
        DecisionConfig {
            tie_break: TieBreak::Random { seed: 3 },
            ..DecisionConfig::default()
        },
        DecisionConfig {
            normalize: true,
            ..DecisionConfig::default()
        },
    ]
}

proptest! {
    #[test]
    fn winners_have_the_top_score_and_none_never_wins(rows in trajectory_strategy()) {
        let t = build(&rows);
        for config in configs() {
            for entry in RULES {
                let d = build_rule(entry.name, &config).expect("registered").decide(&t);
                let best = d.scores.iter().filter(|(k, _)| k.is_some()).map(|&(_, s)| s).fold(f64::NEG_INFINITY, f64::max);
                match &d.answer {
                    Some(a) => {
                        let score = d.scores.iter().find(|(k, _)| k.as_ref() == Some(a)).map(|&(_, s)| s);
                        prop_assert!(score.is_some_and(|s| (best - s).abs() <= 1e-9 * best.abs().max(1.0)), "{}: winner not top", entry.name);
                        if let Some(tie) = &d.tie {
                            prop_assert!(tie.candidates.contains(&a.canonical().to_string()));
                        }
                    }
                    None => prop_assert!(d.scores.iter().all(|(k, _)| k.is_none()), "{}: no answer despite candidates", entry.name),
                }
            }
        }
    }

    #[test]
    fn free_mad_scores_are_the_sum_of_their_explanation(rows in trajectory_strategy()) {
        let t = build(&rows);
        let d = build_rule("free-mad", &DecisionConfig::default()).expect("registered").decide(&t);
        for (key, score) in &d.scores {
            let key = key.as_ref().map(|a| a.canonical().to_string());
            let sum: f64 = d.events.iter().filter(|e| e.answer == key).map(|e| e.delta).sum();
            prop_assert!((sum - score).abs() < 1e-9);
        }
    }

    #[test]
    fn free_mad_is_invariant_under_agent_order(rows in trajectory_strategy(), seed in any::<u64>()) {
        let mut shuffled = rows.clone();
        // A seeded rotation is enough to move every agent.
        let k = (seed as usize) % rows.len();
        shuffled.rotate_left(k);
        let rule = build_rule("free-mad", &DecisionConfig::default()).expect("registered");
        let mut a: Vec<(Option<String>, i64)> = rule.decide(&build(&rows)).scores.iter().map(|(k, s)| (k.as_ref().map(|a| a.canonical().to_string()), (s * 1e6).round() as i64)).collect();
        let mut b: Vec<(Option<String>, i64)> = rule.decide(&build(&shuffled)).scores.iter().map(|(k, s)| (k.as_ref().map(|a| a.canonical().to_string()), (s * 1e6).round() as i64)).collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn unanimous_steady_answer_wins_every_rule(agents in 1usize..6, rounds in 1usize..5) {
        let rows = vec![vec!["b"; rounds]; agents];
        let t = build(&rows);
        for entry in RULES {
            let d = build_rule(entry.name, &DecisionConfig::default()).expect("registered").decide(&t);
            prop_assert_eq!(d.answer.map(|a| a.canonical().to_string()), Some("b".to_string()));
        }
    }

    #[test]
    fn random_tie_break_is_reproducible(rows in trajectory_strategy(), seed in any::<u64>()) {
        let t = build(&rows);
        let config = DecisionConfig { tie_break: TieBreak::Random { seed }, ..DecisionConfig::default() };
        for entry in RULES {
            let rule = build_rule(entry.name, &config).expect("registered");
            prop_assert_eq!(rule.decide(&t), rule.decide(&t));
        }
    }

    #[test]
    fn metric_bounds(rows in trajectory_strategy()) {
        let t = build(&rows);
        let gold = Answer::verbatim("a");
        for r in 0..t.rounds() {
            let h = round_entropy(&t, r);
            prop_assert!((0.0..=(t.agents() as f64).log2() + 1e-12).contains(&h));
            if let Some(ll) = gold_log_likelihood(&t, r, &gold) {
                prop_assert!(ll <= 0.0);
            }
        }
    }
}

/// Formattings of one program (the first three) and of another (the last two): the same
/// answer each, whatever the comments and blank lines.
const HALVE: &[&str] = &[
    "def f(x):\n    return (x\n            // 2)",
    "def f(x):\n    # halve\n    return (x\n            // 2)",
    "def f(x):\n\n    return (x  # floor\n            // 2)",
];
const THIRD: &[&str] = &[
    "def f(x):\n    return (x\n            // 3)",
    "def f(x):\n    return (x  # a third\n            // 3)",
];

/// Agents' programs, more of them the `HALVE` program than the `THIRD` one, and an order.
fn team_strategy() -> impl Strategy<Value = (Vec<&'static str>, Vec<usize>)> {
    (1usize..6)
        .prop_flat_map(|w| {
            (
                prop::collection::vec(prop::sample::select(HALVE), w),
                prop::collection::vec(prop::sample::select(THIRD), 0..w),
            )
        })
        .prop_flat_map(|(halve, third)| {
            let team: Vec<&str> = halve.into_iter().chain(third).collect();
            let order: Vec<usize> = (0..team.len()).collect();
            (Just(team), Just(order).prop_shuffle())
        })
}

fn code_team(team: &[&str], rounds: usize) -> Trajectory {
    let cell = |s: &str| Cell::Answered(Answer::parse(AnswerKind::Code, s, &ctx()));
    Trajectory::new(
        team.iter()
            .map(|&s| (0..rounds).map(|_| cell(s)).collect())
            .collect(),
    )
    .expect("rectangular")
}

proptest! {
    #[test]
    fn the_chosen_program_text_does_not_depend_on_agent_order(
        (team, order) in team_strategy(),
        rounds in 1usize..4,
    ) {
        let permuted: Vec<&str> = order.iter().map(|&i| team[i]).collect();
        // The text given most often, then the shortest, then the smallest.
        let given = |s: &str| team.iter().filter(|&&t| t == s).count();
        let expected = HALVE
            .iter()
            .filter(|&&s| given(s) > 0)
            .min_by(|a, b| given(b).cmp(&given(a)).then(a.len().cmp(&b.len())).then(a.cmp(b)))
            .copied();
        let configs = [
            DecisionConfig::default(),
            DecisionConfig { tie_break: TieBreak::Random { seed: 7 }, ..DecisionConfig::default() },
        ];
        for config in configs {
            for entry in RULES {
                let rule = build_rule(entry.name, &config).expect("registered");
                for t in [code_team(&team, rounds), code_team(&permuted, rounds)] {
                    let d = rule.decide(&t);
                    prop_assert_eq!(d.answer.as_ref().map(|a| a.canonical()), expected, "{}", entry.name);
                    // The explanation names the answers as the scores do.
                    let keys: Vec<&str> = d.scores.iter().filter_map(|(k, _)| k.as_ref().map(|a| a.canonical())).collect();
                    for e in &d.events {
                        if let Some(text) = &e.answer {
                            prop_assert!(keys.contains(&text.as_str()), "{}: {text:?} not in {keys:?}", entry.name);
                        }
                    }
                }
            }
        }
    }
}
