//! Every prompt moot sends, in one place, written in this project's own words following the
//! structure each paper describes. Each template has a name and a hash recorded in transcripts, so
//! results stay tied to the exact wording that produced them.

use sha2::{Digest, Sha256};

use crate::answer::AnswerKind;

pub const SYSTEM_DEFAULT: &str =
    "You are a careful, honest problem solver. Reason step by step and state one final answer.";

/// Round 0: answer independently.
pub const INITIAL: &str = "{question}{options}\n\nSolve the problem step by step. {format}";

/// Conformity debate round (Society of Mind, Du et al.; FREE-MAD-C).
pub const CONFORMITY: &str =
    "Here are the latest solutions from the other agents:\n\n{peers}\n\nUse these \
solutions as additional information together with your own reasoning, and give an updated answer \
to the original question:\n{question}{options}\n\n{format}";

/// Anti-conformity critique round (FREE-MAD-N): the five-step structure of the paper.
pub const ANTI_CONFORMITY: &str =
    "Here are the latest solutions from the other agents:\n\n{peers}\n\nDo not look for \
agreement; look for mistakes. Work through these five steps:\n\
1. Restate your own reasoning for the original question briefly.\n\
2. Examine each other agent's solution in turn and name any concrete error in it (a wrong \
calculation, a misread condition, an unjustified step). Say so if you find none.\n\
3. Compare their reasoning with yours.\n\
4. Decide explicitly whether to revise your answer: change it only if you found a concrete error \
in your own reasoning or a sound argument you had missed.\n\
5. Remember that how many agents hold an answer is not evidence that it is right.\n\n\
Original question:\n{question}{options}\n\n{format}";

/// How each answer kind asks for its final line.
pub fn format_instruction(kind: AnswerKind) -> &'static str {
    match kind {
        AnswerKind::Numeric => "End with a line of the form \"Final answer: <number>\".",
        AnswerKind::Choice => "End with a line of the form \"Final answer: <letter>\".",
        AnswerKind::YesNo => {
            "End with a line of the form \"Final answer: yes\" or \"Final answer: no\"."
        }
        AnswerKind::Math => "Put your final answer in \\boxed{} at the end.",
        AnswerKind::Text => "End with a line of the form \"Final answer: <answer>\".",
    }
}

/// Fills `{name}` placeholders.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// Short, stable hash of a template's text (first 16 hex digits of its sha256).
pub fn template_hash(template: &str) -> String {
    let digest = Sha256::digest(template.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The options block of a choice question: "\n\n(A) …\n(B) …".
pub fn options_block(options: &[String]) -> String {
    if options.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n");
    for (i, o) in options.iter().enumerate() {
        let letter = char::from(b'A' + (i as u8).min(25));
        s.push_str(&format!("\n({letter}) {o}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_and_hash() {
        assert_eq!(render("{a}+{b}={a}", &[("a", "1"), ("b", "2")]), "1+2=1");
        assert_eq!(template_hash(INITIAL).len(), 16);
        assert_ne!(template_hash(CONFORMITY), template_hash(ANTI_CONFORMITY));
        assert_eq!(options_block(&["x".into(), "y".into()]), "\n\n(A) x\n(B) y");
    }

    #[test]
    fn anti_conformity_has_the_five_steps() {
        for step in ["1. ", "2. ", "3. ", "4. ", "5. "] {
            assert!(ANTI_CONFORMITY.contains(step));
        }
        assert!(ANTI_CONFORMITY.contains("not evidence"));
    }
}
