//! The agent CLI's `SOLUTION:` / `REASONING:` parser on arbitrary stdout: never a panic, and a
//! section is always a part of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_backends::cli::parse_sections;

fuzz_target!(|text: &str| {
    let sections = parse_sections(text);
    for part in [sections.solution, sections.reasoning].into_iter().flatten() {
        for line in part.lines() {
            assert!(text.contains(line.trim()), "{line:?} is not from the input");
        }
    }
});
