//! Times answer extraction on adversarial responses of growing size, to check that it stays
//! linear in the response length (speed is measured here, never in unit tests).
//!
//! For every pathological pattern it builds responses of 64 KiB, 256 KiB, 1 MiB and 4 MiB, runs
//! `Answer::extract` and `Answer::parse` under every answer kind (and `choice` with options taken
//! from the response, as the fuzz target does) plus `last_boxed`, and prints the time and the
//! time per byte relative to the 64 KiB size of the same run: linear extraction gives ratios
//! near 1, quadratic extraction ratios near 4, 16 and 64.
//!
//! ```sh
//! cargo run --release -p moot-core --example extract_scaling            # every pattern
//! cargo run --release -p moot-core --example extract_scaling -- long_line spaces   # these patterns
//! cargo run --release -p moot-core --example extract_scaling -- --max-kib 256 --cap-secs 20
//! cargo run --release -p moot-core --example extract_scaling -- --boxed-200k
//! ```
//!
//! `--cap-secs S` skips a pattern's larger sizes once one size took longer than S seconds;
//! `--boxed-200k` times `\boxed{` repeated 200,000 times under each entry point.

use std::hint::black_box;
use std::time::{Duration, Instant};

use moot_core::answer::{last_boxed, Answer, AnswerKind, ExtractContext};

const KIB: usize = 1024;
const SIZES: [usize; 4] = [64 * KIB, 256 * KIB, 1024 * KIB, 4096 * KIB];

/// A pathological response: `head`, then `unit` repeated to the size, then `tail`.
struct Pattern {
    name: &'static str,
    head: &'static str,
    unit: &'static str,
    tail: &'static str,
    /// Nesting patterns close what the repeated unit opened: `close` repeated as often as `unit`.
    close: &'static str,
}

const fn p(
    name: &'static str,
    head: &'static str,
    unit: &'static str,
    tail: &'static str,
) -> Pattern {
    Pattern {
        name,
        head,
        unit,
        tail,
        close: "",
    }
}

const fn nested(
    name: &'static str,
    head: &'static str,
    unit: &'static str,
    close: &'static str,
    tail: &'static str,
) -> Pattern {
    Pattern {
        name,
        head,
        unit,
        tail,
        close,
    }
}

const PATTERNS: &[Pattern] = &[
    p("boxed_unterminated", "", r"\boxed{", ""),
    p("boxed_closed", "", r"\boxed{1} ", ""),
    p("fbox_unterminated", "", r"\fbox{", ""),
    p("boxed_then_open_braces", r"\boxed{", "{", ""),
    p("boxed_no_brace", "", r"\boxed ", ""),
    nested("boxed_deep_nesting", r"\boxed{", "{", "}", ""),
    nested("boxed_deep_sqrt", r"\boxed{", r"\sqrt{", "}", "}"),
    nested("boxed_deep_parens", r"\boxed{", "(", ")", "}"),
    p("boxed_many_fracs", r"\boxed{", r"\frac{1}{2}+", "0}"),
    p("boxed_unterminated_fracs", r"\boxed{", r"\frac{", "}"),
    p("boxed_short_fracs", r"\boxed{", r"\frac12+", "0}"),
    p(
        "boxed_text_commands",
        r"\boxed{1",
        r"\text{ a}\textbf{b}",
        "}",
    ),
    p("boxed_open_text_commands", r"\boxed{1", r"\text{", "}"),
    p("boxed_whitespace_text_empty", r"\boxed{", r" \text{}", "}"),
    p("boxed_minus_chain", r"\boxed{", "-", "1}"),
    p("boxed_superscripts", r"\boxed{", "x^{2}", "}"),
    p(
        "boxed_degrees_units",
        r"\boxed{",
        r"90^\circ \left( \right) \dfrac ",
        "}",
    ),
    p("answer_is_one_line", "", "the answer is ", ""),
    p("answer_is_one_line_equals", "", "the answer is 1 = ", ""),
    p("answer_is_lines", "", "The answer is x.\n", ""),
    p("final_answer_colon", "", "Final answer: ", ""),
    p("final_answer_alone", "", "Final answer:\n\n", ""),
    p("answer_is_stars", "", "answer is ****** ", ""),
    p("correct_option_paren", "", "the correct option is (K) ", ""),
    p(
        "few_markers_then_long_line",
        "the answer is the answer is the answer is the answer is \
         the answer is the answer is the answer is the answer is ",
        "a ",
        "",
    ),
    p("hashes_lines", "", "#### \n", ""),
    p("hashes_one_line", "", "#### ", ""),
    p("answer_tags_open", "", "<answer>", ""),
    p("answer_tags_closed", "", "<answer>x</answer>", ""),
    p("solution_sections", "", "SOLUTION:\n", ""),
    p("choice_paren_letters", "", "(A) ", ""),
    p("choice_bold_letters", "", "**B** ", ""),
    p(
        "choice_option_words",
        "Paris\nLondon\n",
        "option Berlin ",
        "",
    ),
    p("yes_no_words", "", "yes no ", ""),
    p("plausible_verdicts", "", "is not plausible ", ""),
    p("many_numbers", "", "12 ", ""),
    p("long_number", "", "7", ""),
    p("thousands_groups", "1", ",000", ""),
    p("fractions_slashes", "", "1/2/", ""),
    p("calculator_notes", "", "<<1+1=2>>", ""),
    p("calculator_open", "", "<<", ""),
    p("dollar_math", "", "$x$ ", ""),
    p("dollar_open", "", "$", ""),
    p("display_math_open", "", r"\[", ""),
    p("parentheticals", "", " (", ""),
    p("text_quote_period", "Final answer: x", ".\"", ""),
    p("text_pipes", "Final answer: x", ".|", ""),
    p("long_line", "", "a", ""),
    p("blank_lines", "", "\n", ""),
    p("spaces", "", " ", ""),
    p("declines", "", "I cannot determine ", ""),
    p("unicode_words", "", "réponse é ", ""),
    p("escaped_braces", r"\boxed{", r"\{", "}"),
    p("backslashes", r"\boxed{", r"\\", "}"),
];

fn build(pattern: &Pattern, size: usize) -> String {
    let fixed = pattern.head.len() + pattern.tail.len();
    let per = pattern.unit.len() + pattern.close.len();
    let n = size.saturating_sub(fixed) / per;
    let mut s = String::with_capacity(size);
    s.push_str(pattern.head);
    s.push_str(&pattern.unit.repeat(n));
    s.push_str(&pattern.close.repeat(n));
    s.push_str(pattern.tail);
    s
}

/// Every entry point, on one response.
fn work(text: &str) {
    let none = ExtractContext::default();
    let lines: Vec<String> = text.lines().take(12).map(str::to_string).collect();
    let with_options = ExtractContext { choices: &lines };
    for kind in AnswerKind::ALL {
        black_box(Answer::extract(kind, text, &none));
        black_box(Answer::parse(kind, text, &none));
    }
    black_box(Answer::extract(AnswerKind::Choice, text, &with_options));
    black_box(Answer::parse(AnswerKind::Choice, text, &with_options));
    black_box(last_boxed(text));
}

/// Mean time of `work` on `text`, repeated until at least 0.2 s have passed (once for slow sizes).
fn time(text: &str) -> Duration {
    let start = Instant::now();
    let mut runs = 0u32;
    loop {
        work(text);
        runs += 1;
        if start.elapsed() >= Duration::from_millis(200) {
            return start.elapsed() / runs;
        }
    }
}

fn boxed_200k() {
    let text = r"\boxed{".repeat(200_000);
    println!("\\boxed{{ x 200,000 ({} bytes)", text.len());
    let none = ExtractContext::default();
    let t = Instant::now();
    black_box(last_boxed(&text));
    println!("  last_boxed            {:>10.3} ms", ms(t.elapsed()));
    for kind in AnswerKind::ALL {
        let t = Instant::now();
        black_box(Answer::extract(kind, &text, &none));
        let extract = t.elapsed();
        let t = Instant::now();
        black_box(Answer::parse(kind, &text, &none));
        let parse = t.elapsed();
        println!(
            "  {:<8} extract {:>10.3} ms   parse {:>10.3} ms",
            kind.name(),
            ms(extract),
            ms(parse)
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut filters = Vec::new();
    let mut max_bytes = usize::MAX;
    let mut cap = Duration::from_secs(60);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--boxed-200k" => return boxed_200k(),
            "--max-kib" => {
                let kib: usize = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--max-kib N");
                max_bytes = kib * KIB;
            }
            "--cap-secs" => {
                let s: u64 = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--cap-secs S");
                cap = Duration::from_secs(s);
            }
            _ => filters.push(a),
        }
    }
    println!(
        "{:<30} {:>12} {:>12} {:>12} {:>12}   time per byte / 64 KiB's",
        "pattern", "64 KiB", "256 KiB", "1 MiB", "4 MiB"
    );
    let mut worst: f64 = 0.0;
    for pattern in PATTERNS {
        if !filters.is_empty() && !filters.iter().any(|f| f == pattern.name) {
            continue;
        }
        let mut times = Vec::new();
        for &size in SIZES.iter().filter(|&&s| s <= max_bytes) {
            let text = build(pattern, size);
            let t = time(&text);
            times.push((text.len(), t));
            if t > cap {
                break;
            }
        }
        let cells: Vec<String> = (0..SIZES.len())
            .map(|i| {
                times
                    .get(i)
                    .map_or("-".to_string(), |&(_, t)| format!("{:.2} ms", ms(t)))
            })
            .collect();
        let (base_len, base) = times[0];
        let base_per_byte = base.as_secs_f64() / base_len as f64;
        let ratios: Vec<String> = times
            .iter()
            .skip(1)
            .map(|&(len, t)| {
                let r = t.as_secs_f64() / len as f64 / base_per_byte;
                worst = worst.max(r);
                format!("{r:.2}")
            })
            .collect();
        println!(
            "{:<30} {:>12} {:>12} {:>12} {:>12}   {}",
            pattern.name,
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            ratios.join(" ")
        );
    }
    println!("worst ratio: {worst:.2}");
}
