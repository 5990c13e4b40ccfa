//! Extraction from adversarial responses of about 256 KiB: what each answer kind reads from
//! long runs of `\boxed{`, markers, braces, nesting, numbers and wrappers (the size keeps the
//! quick test loop quick in a debug build; the benchmark example goes to 4 MiB). These inputs took
//! quadratic time (or overflowed the stack) before extraction was made linear; that it stays
//! linear is checked by the fuzz target's time limit (`scripts/fuzz`) and measured by
//! `examples/extract_scaling.rs`, never timed here.

use super::*;

const SIZE: usize = 1 << 18;

/// How often `unit` fits in about [`SIZE`] bytes.
fn times(unit: &str) -> usize {
    SIZE / unit.len()
}

/// `unit` repeated to about [`SIZE`] bytes.
fn fill(unit: &str) -> String {
    unit.repeat(times(unit))
}

fn extract(kind: AnswerKind, text: &str) -> Option<String> {
    Answer::extract(kind, text, &ExtractContext::default()).map(|a| a.canonical)
}

/// What `text` extracts as, under numeric, choice, yes-no, math and text, in that order. A text
/// with a `\boxed` or `####` is parsed too, and must parse as it extracts.
#[track_caller]
fn assert_kinds(text: &str, expected: [Option<&str>; 5]) {
    let ctx = ExtractContext::default();
    for (kind, want) in AnswerKind::ALL.into_iter().zip(expected) {
        let got = extract(kind, text);
        assert!(
            got.as_deref() == want,
            "{kind}: got {}, want {}",
            show(got.as_deref()),
            show(want)
        );
        if text.contains("\\boxed") || text.contains("####") {
            let parsed = Answer::parse(kind, text, &ctx).map(|a| a.canonical);
            assert!(
                parsed == got,
                "{kind}: parse gives {}, extract {}",
                show(parsed.as_deref()),
                show(got.as_deref())
            );
        }
    }
}

/// A long answer shown by its length and ends.
fn show(s: Option<&str>) -> String {
    match s {
        Some(s) if s.len() > 80 => {
            let head: String = s.chars().take(30).collect();
            let tail_start = s.char_indices().rev().nth(29).map_or(0, |(i, _)| i);
            let tail = &s[tail_start..];
            format!("Some({head:?}…{tail:?}, {} bytes)", s.len())
        }
        other => format!("{other:?}"),
    }
}

// --- \boxed{…} -------------------------------------------------------------------------------

#[test]
fn many_unterminated_boxes_then_a_closed_one() {
    let text = fill(r"\boxed{") + r"\boxed{42}";
    assert_eq!(last_boxed(&text), Some("42"));
    assert_kinds(&text, [Some("42"), None, None, Some("42"), Some("42")]);
}

#[test]
fn only_unterminated_boxes() {
    let text = fill(r"\boxed{");
    assert_eq!(last_boxed(&text), None);
    // Nothing to read but the text itself, which the text kind keeps.
    assert_kinds(&text, [None, None, None, None, Some(&text)]);
}

#[test]
fn many_closed_boxes_without_fbox() {
    let text = fill(r"\boxed{1} ") + r"\boxed{42}";
    assert_eq!(last_boxed(&text), Some("42"));
    assert_eq!(span::boxed_groups(&text).len(), times(r"\boxed{1} ") + 1);
    assert_kinds(&text, [Some("42"), None, None, Some("42"), Some("42")]);
}

#[test]
fn many_unterminated_fboxes_then_a_closed_one() {
    let text = fill(r"\fbox{") + r"\fbox{7}";
    assert_eq!(last_boxed(&text), Some("7"));
    assert_kinds(&text, [Some("7"), None, None, Some("7"), Some("7")]);
}

#[test]
fn box_commands_without_braces() {
    let text = fill(r"\boxed ") + r"\boxed{5}";
    assert_eq!(last_boxed(&text), Some("5"));
    assert_kinds(&text, [Some("5"), None, None, Some("5"), Some("5")]);
}

#[test]
fn one_box_left_open_by_a_megabyte_of_braces() {
    let text = String::from(r"\boxed{") + &fill("{") + " The answer is 5.";
    assert_eq!(last_boxed(&text), None);
    assert_kinds(&text, [Some("5"), None, None, Some("5"), Some("5")]);
}

#[test]
fn deeply_nested_braces_in_a_box() {
    let n = times("{}");
    let inner = "{".repeat(n) + "3" + &"}".repeat(n);
    let text = format!(r"\boxed{{{inner}}}");
    assert_eq!(last_boxed(&text), Some(inner.as_str()));
    // Too deep to evaluate (and no stack overflow): the number in it is the answer.
    assert_kinds(&text, [Some("3"), None, None, Some(&inner), Some(&inner)]);
}

#[test]
fn deeply_nested_square_roots_in_a_box() {
    let n = times(r"\sqrt{}");
    let inner = r"\sqrt{".repeat(n) + "4" + &"}".repeat(n);
    let text = format!(r"\boxed{{{inner}}}");
    assert_eq!(last_boxed(&text), Some(inner.as_str()));
    assert_kinds(&text, [Some("4"), None, None, Some(&inner), Some(&inner)]);
    // The same nesting a few levels deep still evaluates.
    let shallow = r"\sqrt{".repeat(3) + "256" + &"}".repeat(3);
    assert_eq!(
        extract(AnswerKind::Numeric, &format!(r"\boxed{{{shallow}}}")),
        Some("2".into())
    );
}

#[test]
fn deeply_nested_parentheses_in_a_box() {
    let n = times("()");
    let inner = "(".repeat(n) + "1" + &")".repeat(n);
    let text = format!(r"\boxed{{{inner}}}");
    assert_kinds(&text, [Some("1"), None, None, Some(&inner), Some(&inner)]);
    assert_eq!(latex::evaluate(&inner), None, "too deep to evaluate");
    assert_eq!(latex::evaluate("((((1+2))))*3"), Some(9.0));
}

#[test]
fn long_minus_chain_in_a_box() {
    let inner = fill("-") + "1";
    let text = format!(r"\boxed{{{inner}}}");
    assert_kinds(&text, [Some("-1"), None, None, Some(&inner), Some(&inner)]);
}

#[test]
fn many_fractions_in_a_box() {
    let n = times(r"\frac{1}{2}+");
    let inner = r"\frac{1}{2}+".repeat(n) + "0";
    let text = format!(r"\boxed{{{inner}}}");
    let half_n = format!("{}", n as f64 / 2.0);
    assert_kinds(
        &text,
        [Some(&half_n), None, None, Some(&inner), Some(&inner)],
    );
}

#[test]
fn many_unbraced_fractions_in_a_box() {
    let n = times(r"\frac12+");
    let inner = r"\frac12+".repeat(n) + "0";
    let text = format!(r"\boxed{{{inner}}}");
    let braced = r"\frac{1}{2}+".repeat(n) + "0";
    let half_n = format!("{}", n as f64 / 2.0);
    assert_kinds(
        &text,
        [
            Some(&half_n),
            None,
            None,
            Some(&braced),
            Some(&inner.to_lowercase()),
        ],
    );
}

#[test]
fn many_unterminated_fractions() {
    let text = fill(r"\frac{");
    let ctx = ExtractContext::default();
    let parse = |kind| Answer::parse(kind, &text, &ctx).map(|a| a.canonical);
    assert!(parse(AnswerKind::Math).as_deref() == Some(text.as_str()));
    assert_eq!(parse(AnswerKind::Numeric), None);
    assert!(latex::normalize(&text) == text);
}

#[test]
fn many_units_in_a_box() {
    let text = String::from(r"\boxed{1") + &fill(r"\text{ a}\textbf{b}") + "}";
    let inner = &text[r"\boxed{".len()..text.len() - 1];
    assert_kinds(&text, [Some("1"), None, None, Some("1"), Some(inner)]);
}

#[test]
fn many_unterminated_text_commands() {
    let text = String::from("1") + &fill(r"\text{");
    assert!(latex::normalize(&text) == text);
    let parsed = Answer::parse(AnswerKind::Math, &text, &ExtractContext::default());
    assert!(parsed.map(|a| a.canonical) == Some(text));
}

#[test]
fn many_empty_text_commands_after_whitespace() {
    let n = times(r" \text{}");
    let inner = r" \text{}".repeat(n);
    let text = format!(r"\boxed{{{inner}}}");
    // Normalised to nothing, so neither a number nor a formula; the text kind unwraps the
    // leading `\text{` and the trailing `}`.
    let folded = format!(r"}}{} \text{{", r" \text{}".repeat(n - 2));
    assert_kinds(&text, [None, None, None, None, Some(&folded)]);
}

#[test]
fn many_braced_superscripts_in_a_box() {
    let n = times("x^{2}");
    let text = format!(r"\boxed{{{}}}", "x^{2}".repeat(n));
    let normalized = "x^2".repeat(n);
    assert_kinds(
        &text,
        [
            Some("2"),
            None,
            None,
            Some(&normalized),
            Some(&"x^{2}".repeat(n)),
        ],
    );
}

#[test]
fn escaped_braces_and_backslashes_in_a_box() {
    let escaped = fill(r"\{");
    let text = format!(r"\boxed{{{escaped}}}");
    assert_eq!(last_boxed(&text), Some(escaped.as_str()));
    let backslashes = fill(r"\\");
    let text = format!(r"\boxed{{{backslashes}}}");
    assert_eq!(last_boxed(&text), Some(backslashes.as_str()));
    // A backslash before the closing brace escapes it: the box stays open.
    let text = format!(r"\boxed{{{backslashes}\}}");
    assert_eq!(last_boxed(&text), None);
}

// --- markers ---------------------------------------------------------------------------------

#[test]
fn a_megabyte_of_markers_on_one_line() {
    let text = fill("the answer is ") + "42.";
    assert_kinds(&text, [Some("42"), None, None, Some("42"), Some("42")]);
}

#[test]
fn only_the_last_markers_of_a_line_are_read() {
    // Every marker's span runs to the end of its line: of a megabyte of them on one line, the
    // last few are candidates.
    let text = fill("the answer is ") + "x";
    let spans = span::candidate_spans(&text);
    assert_eq!(spans.len(), span::MARKERS_PER_LINE);
    assert_eq!(spans[0].text, "x");
    // One marker on each of many lines: every one is a candidate.
    let n = times("the answer is x\n");
    let text = "the answer is x\n".repeat(n);
    assert_eq!(span::candidate_spans(&text).len(), n);
    // A handful of markers on a line are all read: the first one's (B) is the answer.
    let few = String::from("The answer is (B) ") + &"the answer is ".repeat(5) + "unclear";
    assert_eq!(extract(AnswerKind::Choice, &few), Some("B".into()));
}

#[test]
fn a_megabyte_of_markers_and_equals_signs() {
    let text = fill("the answer is 1 = ");
    // Each span ends at "=" with nothing after it, and the response ends mid-expression.
    assert_kinds(&text, [None, None, None, Some("1="), Some("1 =")]);
}

#[test]
fn a_marker_on_every_line() {
    let text = fill("The answer is x.\n") + "The answer is 7.";
    assert_kinds(&text, [Some("7"), None, None, Some("7"), Some("7")]);
}

#[test]
fn a_megabyte_of_final_answer_labels() {
    let text = fill("Final answer: ") + "(C)";
    assert_kinds(&text, [None, Some("C"), None, Some("(C)"), Some("(c)")]);
}

#[test]
fn labels_alone_on_their_lines() {
    let text = fill("Final answer:\n\n") + "B";
    assert_kinds(&text, [None, Some("B"), None, Some("B"), Some("b")]);
}

#[test]
fn markers_followed_by_emphasis() {
    let text = fill("answer is ****** ") + "yes";
    assert_kinds(&text, [None, None, Some("yes"), Some("yes"), Some("yes")]);
}

#[test]
fn a_megabyte_of_option_markers() {
    let text = fill("the correct option is (K) ");
    assert_kinds(&text, [None, None, None, Some("(K)"), Some("(k)")]);
    let eighteen: Vec<String> = (0..18).map(|i| format!("colour {i}")).collect();
    let ctx = ExtractContext { choices: &eighteen };
    let got = Answer::extract(AnswerKind::Choice, &text, &ctx).map(|a| a.canonical);
    assert_eq!(got.as_deref(), Some("K"));
}

#[test]
fn a_few_markers_then_a_megabyte_line() {
    let tail = fill("a ");
    let text = "the answer is ".repeat(span::MARKERS_PER_LINE) + &tail;
    let folded = tail.trim_end();
    let math = tail.replace(' ', "");
    assert_kinds(&text, [None, None, None, Some(&math), Some(folded)]);
}

// --- ####, <answer>, SOLUTION --------------------------------------------------------------

#[test]
fn a_megabyte_of_hash_lines() {
    let text = fill("#### \n") + "#### 18";
    assert_kinds(&text, [Some("18"), None, None, Some("18"), Some("18")]);
}

#[test]
fn a_megabyte_of_hashes_on_one_line() {
    let text = fill("#### ") + "42";
    // One `####` line whose text is everything after the first `####`.
    let span = &text["#### ".len()..];
    let math = span.replace(' ', "");
    assert_kinds(&text, [Some("42"), None, None, Some(&math), Some(span)]);
}

#[test]
fn a_megabyte_of_open_answer_tags() {
    let text = fill("<answer>") + "9</answer>";
    let span = &text["<answer>".len()..text.len() - "</answer>".len()];
    assert_kinds(&text, [Some("9"), None, None, Some(span), Some(span)]);
}

#[test]
fn a_megabyte_of_answer_tags() {
    let text = fill("<answer>x</answer>") + "<answer>9</answer>";
    assert_kinds(&text, [Some("9"), None, None, Some("9"), Some("9")]);
}

#[test]
fn a_megabyte_of_solution_headers() {
    let n = times("SOLUTION:\n");
    let text = "SOLUTION:\n".repeat(n) + "6";
    // The section after the first header: a list under a `Label:` line, for the text kind.
    let items = "solution: ".repeat(n - 2) + "6";
    assert_kinds(&text, [Some("6"), None, None, Some("6"), Some(&items)]);
}

// --- choice and yes-no ---------------------------------------------------------------------

#[test]
fn a_megabyte_of_option_letters() {
    let letters = fill("(A) ");
    assert_eq!(extract(AnswerKind::Choice, &letters), Some("A".into()));
    let text = letters + "\nSo the answer is (D).";
    assert_eq!(extract(AnswerKind::Choice, &text), Some("D".into()));
}

#[test]
fn a_megabyte_of_bold_letters() {
    let text = fill("**B** ");
    let folded = "b ".repeat(times("**B** ")).trim_end().to_string();
    assert_kinds(&text, [None, Some("B"), None, None, Some(&folded)]);
}

#[test]
fn long_options_against_many_answer_spans() {
    let options = vec!["lorem ipsum ".repeat(SIZE / 24), "Berlin".to_string()];
    let ctx = ExtractContext { choices: &options };
    let text = "The answer is maybe.\n".repeat(SIZE / 42) + "So I pick Berlin.";
    let got = Answer::extract(AnswerKind::Choice, &text, &ctx).map(|a| a.canonical);
    assert_eq!(got.as_deref(), Some("B"));
    let text = "The answer is maybe.\n".repeat(SIZE / 42) + "So I pick " + &options[0];
    let got = Answer::extract(AnswerKind::Choice, &text, &ctx).map(|a| a.canonical);
    assert_eq!(got.as_deref(), Some("A"));
}

#[test]
fn a_megabyte_of_yes_and_no() {
    let text = fill("yes no ");
    assert_eq!(extract(AnswerKind::YesNo, &text), Some("yes".into()));
    let text = fill("is not plausible ");
    assert_eq!(extract(AnswerKind::YesNo, &text), Some("no".into()));
}

// --- numbers -------------------------------------------------------------------------------

#[test]
fn a_megabyte_of_numbers() {
    let text = fill("12 ");
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("12".into()));
    let text = fill("12 ") + "= 13";
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("13".into()));
    // Fractions: the last number is the 3 after the last "1/2".
    let text = fill("1/2/") + "3";
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("3".into()));
    let text = fill("1/2 ");
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("0.5".into()));
    // Ending on an operator is a response cut off mid-expression.
    let text = fill("1/2/");
    assert_eq!(extract(AnswerKind::Numeric, &text), None);
}

#[test]
fn a_megabyte_long_number() {
    let digits = fill("7");
    let got = extract(AnswerKind::Numeric, &digits);
    assert!(got.as_deref() == Some(&digits), "{}", show(got.as_deref()));
    // Thousands groups all belong to the one number.
    let grouped = String::from("1") + &fill(",000");
    let got = extract(AnswerKind::Numeric, &grouped);
    let want = String::from("1") + &"000".repeat(times(",000"));
    assert!(got.as_deref() == Some(&want), "{}", show(got.as_deref()));
}

#[test]
fn a_megabyte_of_calculator_notes() {
    let text = fill("<<1+1=2>>") + " 5";
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("5".into()));
    let text = fill("<<") + " 5";
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("5".into()));
}

#[test]
fn a_megabyte_of_open_parentheses() {
    let text = fill(" (") + "7";
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("7".into()));
}

// --- text, math, whitespace ----------------------------------------------------------------

#[test]
fn a_megabyte_of_wrappers_around_a_text_answer() {
    for wrapper in [".\"", ".|", "'!"] {
        let text = String::from("Final answer: x") + &fill(wrapper);
        assert_eq!(
            extract(AnswerKind::Text, &text),
            Some("x".into()),
            "{wrapper}"
        );
    }
}

#[test]
fn a_megabyte_long_word() {
    let text = fill("a");
    assert_kinds(&text, [None, None, None, None, Some(&text)]);
}

#[test]
fn a_megabyte_of_blank_lines_and_spaces() {
    let text = fill("\n") + "42";
    assert_kinds(&text, [Some("42"), None, None, Some("42"), Some("42")]);
    let text = fill(" ") + "42" + &fill(" ");
    assert_kinds(&text, [Some("42"), None, None, Some("42"), Some("42")]);
}

#[test]
fn a_megabyte_of_declining() {
    let text = fill("I cannot determine ");
    assert_kinds(&text, [None, None, None, None, None]);
}

#[test]
fn a_megabyte_of_non_ascii_words() {
    let text = fill("réponse é ") + "The answer is 3.";
    assert_kinds(&text, [Some("3"), None, None, Some("3"), Some("3")]);
}

#[test]
fn a_megabyte_of_inline_math() {
    let text = fill("$x$ ") + "$5$";
    assert_eq!(extract(AnswerKind::Math, &text), Some("5".into()));
    assert_eq!(extract(AnswerKind::Numeric, &text), Some("5".into()));
}

// --- parse -----------------------------------------------------------------------------------

/// What `text` parses as, under numeric, choice, yes-no, math and text, in that order.
#[track_caller]
fn assert_parses(text: &str, expected: [Option<&str>; 5]) {
    let ctx = ExtractContext::default();
    for (kind, want) in AnswerKind::ALL.into_iter().zip(expected) {
        let got = Answer::parse(kind, text, &ctx).map(|a| a.canonical);
        assert!(
            got.as_deref() == want,
            "{kind}: got {}, want {}",
            show(got.as_deref()),
            show(want)
        );
    }
}

#[test]
fn parse_reads_megabyte_strings() {
    let digits = fill("7");
    assert_parses(
        &digits,
        [Some(&digits), None, None, Some(&digits), Some(&digits)],
    );
    let letters = fill("(B)");
    assert_parses(
        &letters,
        [
            None,
            Some("B"),
            None,
            Some(&letters),
            Some(&letters.to_lowercase()),
        ],
    );
    let words = fill("yes ");
    let folded = words.trim_end();
    assert_parses(
        &words,
        [
            None,
            None,
            Some("yes"),
            Some(&folded.replace(' ', "")),
            Some(folded),
        ],
    );
    let fractions = fill(r"\frac12");
    let braced = r"\frac{1}{2}".repeat(times(r"\frac12"));
    // A product of 149,796 halves: it underflows to 0.
    assert_parses(
        &fractions,
        [Some("0"), None, None, Some(&braced), Some(&fractions)],
    );
}
