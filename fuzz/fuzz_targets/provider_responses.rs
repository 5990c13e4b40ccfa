//! What providers send back: OpenAI-compatible and Anthropic response bodies and stream events,
//! as arbitrary bytes: an answer or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_backends::{anthropic, openai};

fuzz_target!(|text: &str| {
    let _ = openai::parse_response(text);
    let _ = anthropic::parse_response(text);
    let mut o = openai::StreamAccumulator::default();
    let mut a = anthropic::StreamAccumulator::default();
    for line in text.lines() {
        let _ = o.push(line);
        let _ = a.push(line);
    }
    let _ = o.finish();
    let _ = a.finish();
});
