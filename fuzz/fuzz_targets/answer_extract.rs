//! Answer extraction from arbitrary model output, under every answer kind: never a panic; and
//! for the kinds with a closed form (numbers, letters, yes/no) an extracted answer is stable: its
//! canonical form parses back to an equivalent answer. (Text and LaTeX answers are kept as
//! written, so a text that itself looks like a marker, such as `####…`, need not round-trip.)
//! And every entry point takes time linear in the input: `scripts/fuzz` gives this target a time
//! limit per input, so an input that takes quadratic time is a found timeout.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_core::answer::{last_boxed, Answer, AnswerKind, ExtractContext};

const KINDS: [AnswerKind; 5] = [
    AnswerKind::Numeric,
    AnswerKind::Choice,
    AnswerKind::YesNo,
    AnswerKind::Math,
    AnswerKind::Text,
];

fuzz_target!(|text: &str| {
    let choices: Vec<String> = text.lines().take(12).map(str::to_string).collect();
    for ctx in [ExtractContext::default(), ExtractContext { choices: &choices }] {
        for kind in KINDS {
            let closed = matches!(
                kind,
                AnswerKind::Numeric | AnswerKind::Choice | AnswerKind::YesNo
            );
            if let Some(a) = Answer::extract(kind, text, &ctx).filter(|_| closed) {
                let again = Answer::parse(kind, a.canonical(), &ctx);
                assert!(
                    again.is_some_and(|b| b.equivalent(&a)),
                    "{kind:?}: {:?} does not parse back",
                    a.canonical()
                );
            }
            let _ = Answer::parse(kind, text, &ctx);
        }
    }
    let _ = last_boxed(text);
});
