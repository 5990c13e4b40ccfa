//! `moot extract`: the answer in one response, read from stdin.

use moot_core::answer::{is_correct, Answer, AnswerKind, ExtractContext};
use serde_json::json;

use crate::input::{bad_input, read_stdin};

/// The longest response read: 8 MiB, the most moot reads of a model's answer.
const MAX_RESPONSE_BYTES: moot_files::Limit =
    moot_files::Limit::new(8 << 20, "moot extract reads from a response");

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How to read the answer: numeric, choice, yes-no, math or text.
    #[arg(long, value_parser = crate::input::parse_kind)]
    kind: AnswerKind,
    /// Option texts in order A, B, C, … (choice only), comma-separated or repeated
    /// (`--options` is the same).
    #[arg(long, visible_alias = "options", value_delimiter = ',', num_args = 1..)]
    choices: Vec<String>,
    /// The gold answer; adds `"correct": true|false` to the output.
    // A value, whatever it starts with: `--gold -7`.
    #[arg(long, allow_hyphen_values = true)]
    gold: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.choices.is_empty() && args.kind != AnswerKind::Choice {
        return bad_input(format!(
            "--choices applies only to --kind choice, not {}",
            args.kind
        ));
    }
    let ctx = ExtractContext {
        choices: &args.choices,
    };
    let gold = match &args.gold {
        Some(g) => match Answer::parse(args.kind, g, &ctx) {
            Some(a) => Some(a),
            None => return bad_input(format!("--gold {g:?} is not a {} answer", args.kind)),
        },
        None => None,
    };
    let response = read_stdin("the response", MAX_RESPONSE_BYTES)?;
    let answer = Answer::extract(args.kind, &response, &ctx);
    let mut out = json!({ "answer": answer.as_ref().map(|a| a.canonical()) });
    if let Some(gold) = &gold {
        out["correct"] = json!(is_correct(answer.as_ref(), gold));
    }
    outln!("{out}");
    Ok(())
}
