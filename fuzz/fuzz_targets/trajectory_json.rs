//! The trajectory document `moot decide` reads, then every decision rule on what parses: never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_core::trajectory_json::parse_trajectory;
use moot_core::answer::AnswerKind;
use moot_core::decision::{build_rule, DecisionConfig, Evidence, RULES};

fuzz_target!(|text: &str| {
    for kind in [None, Some(AnswerKind::Numeric), Some(AnswerKind::Choice)] {
        if let Ok(t) = parse_trajectory(text, kind) {
            for r in RULES {
                if let Ok(rule) = build_rule(r.name, &DecisionConfig::default()) {
                    let _ = rule.decide_with(&t, &Evidence::default());
                }
            }
        }
    }
});
