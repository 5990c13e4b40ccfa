//! Answers: extraction from response text, canonical forms and equivalence (see
//! docs/architecture.md, Answers).
//!
//! An [`Answer`] is the comparable value extracted from a response. "No answer" is not an
//! `Answer`: extraction returns `Option<Answer>`, and `None` is never equivalent to a gold answer.

mod choice;
mod code;
mod fallback;
pub mod latex;
pub mod number;
pub(crate) mod python_tokens;
mod span;
mod text;
mod value;
mod yes_no;

pub use choice::{option_letter, MAX_OPTIONS};
use number::Number;
use span::{candidate_spans, solution_section, Span, SpanSource};
pub use value::{is_correct, Answer, AnswerKind, UnknownAnswerKind};

/// The contents of the last `\boxed{…}` / `\fbox{…}` with balanced braces (escaped braces do not
/// count; an unterminated group is skipped), as answer extraction reads it.
pub fn last_boxed(text: &str) -> Option<&str> {
    span::boxed_groups(text).last().copied()
}

/// What extraction may know about the question besides the response text.
#[derive(Debug, Clone, Default)]
pub struct ExtractContext<'a> {
    /// Option texts, in order A, B, C, … (choice kind).
    pub choices: &'a [String],
}

impl Answer {
    /// Extracts the final answer of `kind` from a model's response, or `None` when the response
    /// states none that can be read.
    pub fn extract(kind: AnswerKind, response: &str, ctx: &ExtractContext<'_>) -> Option<Answer> {
        if kind == AnswerKind::Code {
            return code::extract(response, solution_section(response));
        }
        // Only the choice kind reads the options; fold them once for every span.
        let options = choice::Options::new(if kind == AnswerKind::Choice {
            ctx.choices
        } else {
            &[]
        });
        // A freemad-style SOLUTION section is the answer's home; search it first.
        if let Some(section) = solution_section(response) {
            if let Some(a) = extract_from(kind, section, &options) {
                return Some(a);
            }
        }
        extract_from(kind, response, &options)
    }

    /// Reads a string that is meant to be an answer already (a gold answer, a stored answer, a
    /// trajectory cell): taken whole when it is a bare answer (`"025"`, `"(B)"`, `"True"`,
    /// `"\frac{1}{2}"`), otherwise extracted as from a response (`"#### 18"`).
    pub fn parse(kind: AnswerKind, s: &str, ctx: &ExtractContext<'_>) -> Option<Answer> {
        let whole = match kind {
            AnswerKind::Numeric => number_from_span(s, false),
            AnswerKind::Choice => choice::parse_exact(s, ctx.choices),
            AnswerKind::YesNo => yes_no::parse_exact(s),
            AnswerKind::Math => math_from_span(s),
            AnswerKind::Text => text::from_span(s),
            // A stored program has no fences; a response does.
            AnswerKind::Code if !s.contains("```") && !s.contains("~~~") => {
                return code::from_program(s)
            }
            AnswerKind::Code => return Answer::extract(kind, s, ctx),
        };
        let whole = whole.filter(|_| !s.contains("\\boxed") && !s.contains("####"));
        whole.or_else(|| Answer::extract(kind, s, ctx))
    }
}

fn extract_from(kind: AnswerKind, text: &str, options: &choice::Options<'_>) -> Option<Answer> {
    let cleaned;
    let text = if kind == AnswerKind::Numeric {
        cleaned = fallback::strip_calculator_notes(text);
        cleaned.as_str()
    } else {
        text
    };
    let spans = candidate_spans(text);
    let mut seen_marker = false;
    for span in &spans {
        if let Some(a) = from_span(kind, span, options) {
            return Some(a);
        }
        // The model's last "the answer is …" left the answer blank: it stated no answer, and an
        // incidental number elsewhere is not one.
        if span.source == SpanSource::Marker && !seen_marker && fallback::is_blank(span.text) {
            return None;
        }
        seen_marker |= span.source == SpanSource::Marker;
    }
    if fallback::declines_or_is_cut_off(text) {
        return None;
    }
    whole_text_fallback(kind, text, options)
}

fn from_span(kind: AnswerKind, span: &Span<'_>, options: &choice::Options<'_>) -> Option<Answer> {
    let explicit = span.source != SpanSource::Marker;
    match kind {
        AnswerKind::Numeric => number_from_span(span.text, !explicit),
        AnswerKind::Choice => choice::from_span_in(span.text, options),
        AnswerKind::YesNo => yes_no::from_span(span.text),
        AnswerKind::Math => {
            if explicit {
                math_from_span(span.text)
            } else {
                math_from_marker(span.text)
            }
        }
        AnswerKind::Text => text::from_span(span.text),
        AnswerKind::Code => code::from_program(span.text),
    }
}

fn whole_text_fallback(
    kind: AnswerKind,
    text: &str,
    options: &choice::Options<'_>,
) -> Option<Answer> {
    match kind {
        AnswerKind::Numeric => fallback::closing_number(text).map(Answer::number),
        AnswerKind::Choice => choice::from_whole_text_in(text, options),
        AnswerKind::YesNo => yes_no::from_whole_text(text),
        AnswerKind::Math => fallback::closing_math(text),
        AnswerKind::Text => fallback::closing_text(text).and_then(|t| text::from_span(&t)),
        // Code is read from fences only (see `Answer::extract`).
        AnswerKind::Code => None,
    }
}

/// A number from an answer span. A LaTeX value (`\frac{1}{2}`, `2\sqrt{2}`) counts; otherwise
/// the text after the last `=` of the first sentence, first number there. For marker spans
/// (`sentence_only`), only the first sentence is read, so "42. (Check: 6*7.)" gives 42.
fn number_from_span(span_text: &str, sentence_only: bool) -> Option<Answer> {
    let text = if sentence_only {
        span::first_sentence(span_text)
    } else {
        span_text
    };
    let normalized = latex::normalize(text);
    if let Some(v) = latex::evaluate(&normalized) {
        // Integer-looking literals keep their exact digits; computed values use their value.
        let n = Number::parse_exact(&normalized).or_else(|| Number::from_f64(v))?;
        return Some(Answer::number(n));
    }
    let text = text.replace("{,}", ",").replace("\\!", "");
    let tail = text.rsplit('=').next().unwrap_or(&text);
    let tail_frac = latex_fraction_value(tail);
    if let Some(n) = tail_frac {
        return Some(Answer::number(n));
    }
    number::scan_numbers(tail)
        .into_iter()
        .next()
        .map(|f| Answer::number(f.number))
}

/// The value of the first `\frac{…}{…}` in a span, for numeric answers written in LaTeX inside
/// prose ("so $x = \frac{3}{4}$ of the cake").
fn latex_fraction_value(text: &str) -> Option<Number> {
    let pos = text.find("\\frac").or_else(|| text.find("\\dfrac"))?;
    let first_number = number::scan_numbers(text).into_iter().next();
    if first_number.is_some_and(|f| f.start < pos) {
        return None;
    }
    let rest = &text[pos..];
    let end = rest.find(['$', '\n', ',', ' ']).unwrap_or(rest.len());
    let sign = text[..pos].trim_end().ends_with('-');
    let v = latex::evaluate(&latex::normalize(&rest[..end]))?;
    Number::from_f64(if sign { -v } else { v })
}

fn math_from_span(span_text: &str) -> Option<Answer> {
    let normalized = latex::normalize(span_text);
    (!normalized.is_empty()).then(|| Answer::math(normalized))
}

/// A math answer after a marker: the first inline-math group (`$…$`, `\(…\)`) if there is one,
/// else the first sentence.
fn math_from_marker(span_text: &str) -> Option<Answer> {
    let inline = inline_math(span_text);
    let text = inline.unwrap_or_else(|| span::first_sentence(span_text));
    let text = text.trim().trim_matches('*').trim();
    math_from_span(text)
}

fn inline_math(text: &str) -> Option<&str> {
    fallback::inline_math_groups(text).into_iter().next()
}

#[cfg(test)]
mod adversarial_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(kind: AnswerKind, text: &str) -> Option<String> {
        Answer::extract(kind, text, &ExtractContext::default()).map(|a| a.canonical)
    }

    #[test]
    fn kind_names_round_trip() {
        for k in AnswerKind::ALL {
            assert_eq!(k.name().parse::<AnswerKind>(), Ok(k));
        }
        assert!("number".parse::<AnswerKind>().is_err());
    }

    #[test]
    fn guesses_kinds() {
        let g = |q| AnswerKind::guess(q, &[]);
        assert_eq!(
            g("What is 17 * 24? Answer with a number."),
            AnswerKind::Numeric
        );
        assert_eq!(g("How many legs does a spider have?"), AnswerKind::Numeric);
        assert_eq!(
            g("Is Paris in France? Answer yes or no."),
            AnswerKind::YesNo
        );
        assert_eq!(g("Simplify $\\frac{4}{6}$."), AnswerKind::Math);
        assert_eq!(g("Who wrote Hamlet?"), AnswerKind::Text);
        assert_eq!(
            g("Write a function that returns Fibonacci(n)"),
            AnswerKind::Code
        );
        assert_eq!(
            AnswerKind::guess("Pick one", &["a".into()]),
            AnswerKind::Choice
        );
    }

    #[test]
    fn numeric_extraction_styles() {
        use AnswerKind::Numeric as N;
        assert_eq!(ex(N, r"So \boxed{18}."), Some("18".into()));
        assert_eq!(ex(N, "16-3-4 = 9\n#### 18"), Some("18".into()));
        assert_eq!(ex(N, "The answer is 18."), Some("18".into()));
        assert_eq!(ex(N, "**Answer:** $1,250.50"), Some("1250.5".into()));
        assert_eq!(ex(N, "<answer>7</answer> and 9"), Some("7".into()));
        assert_eq!(ex(N, "Final Answer: | 94858 |"), Some("94858".into()));
        assert_eq!(ex(N, "The answer is -42."), Some("-42".into()));
        assert_eq!(ex(N, r"\boxed{\frac{1}{2}}"), Some("0.5".into()));
        assert_eq!(ex(N, r"\boxed{10 \text{ dollars}}"), Some("10".into()));
        assert_eq!(ex(N, r"so $x = 5$"), Some("5".into()));
        assert_eq!(
            ex(N, "The answer is 42. (I double-checked with 6*7.)"),
            Some("42".into())
        );
        assert_eq!(
            ex(N, "The answer is 16 - 3 - 4 = 9 eggs."),
            Some("9".into())
        );
        assert_eq!(
            ex(N, "She has 3 apples, then 5, so 8 in total"),
            Some("8".into())
        );
        assert_eq!(ex(N, "I cannot tell."), None);
        assert_eq!(ex(N, r"\boxed{025}"), Some("25".into()));
    }

    #[test]
    fn numbers_in_scientific_notation_are_read_whole_in_every_kind_that_reads_numbers() {
        use AnswerKind::{Math as M, Numeric as N};
        let ctx = ExtractContext::default();
        let parsed =
            |kind, s: &str| Answer::parse(kind, s, &ctx).map(|a| a.canonical().to_string());
        // The issue's finding: `2000` against gold `2e3` was wrong and `2` right.
        let gold = Answer::parse(N, "2e3", &ctx).unwrap();
        let right = Answer::extract(N, "Final answer: 2000", &ctx).unwrap();
        let wrong = Answer::extract(N, "Final answer: 2", &ctx).unwrap();
        assert!(
            crate::answer::is_correct(Some(&right), &gold),
            "{gold:?} {right:?}"
        );
        assert!(
            !crate::answer::is_correct(Some(&wrong), &gold),
            "{gold:?} {wrong:?}"
        );
        assert_eq!(
            parsed(N, "6.02e23"),
            Some("602000000000000000000000".into())
        );
        assert_eq!(ex(N, "The answer is 5e-1."), Some("0.5".into()));
        assert_eq!(ex(N, r"\boxed{1E+3}"), Some("1000".into()));
        // Out of range: no number, not its mantissa.
        assert_eq!(parsed(N, "1e400"), None);
        assert_eq!(ex(N, "The answer is 1e400."), None);
        assert_eq!(ex(N, "Final answer: 1e-400"), None);
        assert_eq!(ex(N, r"\boxed{1e-99999}"), None);
        let math = Answer::parse(M, "6.02e23", &ctx).unwrap();
        let math_right = Answer::extract(M, r"\boxed{602000000000000000000000}", &ctx).unwrap();
        assert!(
            crate::answer::is_correct(Some(&math_right), &math),
            "{math:?} {math_right:?}"
        );
    }

    #[test]
    fn parse_reads_bare_answers_whole() {
        let ctx = ExtractContext::default();
        let p = |k, s| Answer::parse(k, s, &ctx).map(|a| a.canonical);
        assert_eq!(p(AnswerKind::Numeric, "025"), Some("25".into()));
        assert_eq!(p(AnswerKind::Numeric, "#### 72"), Some("72".into()));
        assert_eq!(p(AnswerKind::Choice, "(B)"), Some("B".into()));
        assert_eq!(p(AnswerKind::YesNo, "True"), Some("yes".into()));
        assert_eq!(
            p(AnswerKind::Math, r"\dfrac{14}{3}"),
            Some(r"\frac{14}{3}".into())
        );
        assert_eq!(p(AnswerKind::Text, "  Valid. "), Some("valid".into()));
        assert_eq!(
            p(AnswerKind::Code, "def f():\n    return 1"),
            Some("def f():\n    return 1".into())
        );
        assert_eq!(
            p(AnswerKind::Code, "```python\nx = 1\n```"),
            Some("x = 1".into())
        );
    }

    #[test]
    fn none_is_never_correct() {
        let gold = Answer::parse(AnswerKind::Numeric, "18", &ExtractContext::default()).unwrap();
        assert!(!is_correct(None, &gold));
        assert!(is_correct(Some(&gold), &gold));
    }

    #[test]
    fn kinds_never_cross_compare() {
        let ctx = ExtractContext::default();
        let n = Answer::parse(AnswerKind::Numeric, "1", &ctx).unwrap();
        let m = Answer::parse(AnswerKind::Math, "1", &ctx).unwrap();
        assert!(!n.equivalent(&m));
    }
}
