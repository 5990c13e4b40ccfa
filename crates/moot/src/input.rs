//! Error reporting shared by the subcommands: one line on stderr, exit code 2 for bad input.

use std::process::ExitCode;

use moot_app::error::ErrorKind;

/// An error in what the user gave us (arguments, files, stdin): exits with code 2.
pub use moot_app::{bad_input, InputError};

/// Prints `moot: error: …` on one line. What the user can fix exits 2: an input error, a
/// configuration that cannot be used, a store that cannot be used as it is (missing, damaged,
/// not moot's, from a newer moot) wherever in the command it was found; anything else exits 1.
/// The kind is `moot_app::error::kind_of`'s, the one classifier every front end uses.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let line = format!("{e:#}");
    // An error may quote a server's reply, a request or a dataset file (a CSV header, a
    // record's keys); keys in it must not reach the terminal or a log collecting it, and
    // neither may control characters that would drive the terminal: it is one escaped line.
    let line = moot_core::escape::one_line(&line.replace('\n', " ")).into_owned();
    let line = crate::output::redact(&line).into_owned();
    errln!("moot: error: {line}");
    match moot_app::error::kind_of(e) {
        ErrorKind::Input | ErrorKind::UnusableStore => ExitCode::from(2),
        ErrorKind::Store | ErrorKind::Other => ExitCode::FAILURE,
    }
}

/// Help and version go to stdout as usual; argument errors are cut to one line that names what
/// is wrong (the missing arguments, the bad value and what would do, clap's suggestion) and exit 2.
pub fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            errln!("moot: error: {} (see --help)", clap_message(&e));
            ExitCode::from(2)
        }
    }
}

/// One line for a clap error: `missing required argument <QUESTION>`, `invalid value '0' for
/// '--rounds <ROUNDS>': …`, `unexpected argument '--formt' found (tip: a similar argument
/// exists: '--format')`. Clap's usage and "for more information" lines are left out.
pub fn clap_message(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::MissingRequiredArgument {
        if let Some(ContextValue::Strings(args)) = e.get(ContextKind::InvalidArg) {
            if !args.is_empty() {
                return format!(
                    "missing required {} {}",
                    moot_core::text::noun_for(args.len(), "argument"),
                    args.join(", ")
                );
            }
        }
    }
    let rendered = e.render().to_string();
    let mut lines = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let details: Vec<&str> = lines
        .map(|l| {
            l.strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .unwrap_or(l)
        })
        .collect();
    if details.is_empty() {
        first.to_string()
    } else if first.ends_with(':') {
        format!("{first} {}", details.join(", "))
    } else {
        format!("{first} ({})", details.join("; "))
    }
}

/// A count given on the command line that must be at least 1 (`--agents`, `--limit`, …).
pub fn positive_count(s: &str) -> Result<usize, String> {
    match count(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// A count given on the command line, 0 or more (`--rounds`).
pub fn count(s: &str) -> Result<usize, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<usize>() {
        return Ok(n);
    }
    if s.parse::<i128>().is_ok_and(|n| n < 0) {
        return Err("must not be negative".into());
    }
    if s.parse::<u128>().is_ok() {
        return Err("is too large".into());
    }
    Err("expected a whole number".into())
}

/// An answer kind given on the command line (`--kind`): numeric, choice, yes-no, math, text or
/// code.
pub fn parse_kind(s: &str) -> Result<moot_core::answer::AnswerKind, String> {
    s.parse()
        .map_err(|e: moot_core::answer::UnknownAnswerKind| e.to_string())
}

/// `bytes` as text; invalid UTF-8 is an error naming `what` (the file) and where the first
/// invalid byte is (see [`moot_config::dialect::utf8_text`]).
pub fn utf8_text(what: &str, bytes: Vec<u8>) -> Result<String, InputError> {
    moot_config::dialect::utf8_text(what, bytes).map_err(InputError)
}

/// Reads all of stdin as UTF-8, at most `limit` of it (stdin may be `/dev/zero`).
pub fn read_stdin(what: &str, limit: moot_files::Limit) -> anyhow::Result<String> {
    let bytes = moot_files::read_limited(std::io::stdin().lock(), limit)
        .map_err(|e| InputError(format!("cannot read {what} from stdin: {e}")))?;
    Ok(utf8_text(&format!("{what} on stdin"), bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_located() {
        let e = utf8_text("f.toml", b"a = 1\nb = \"x\xffy\"\n".to_vec()).unwrap_err();
        assert_eq!(
            e.0,
            "f.toml is not valid UTF-8: byte 0xFF at byte offset 12 (line 2, column 7)"
        );
        let e = utf8_text("f", vec![0xc3]).unwrap_err();
        assert!(
            e.0.contains("byte 0xC3 at byte offset 0 (line 1, column 1)"),
            "{e}"
        );
        assert_eq!(utf8_text("f", "é\n".as_bytes().to_vec()).unwrap(), "é\n");
        let mut bytes = "éé".as_bytes().to_vec();
        bytes.push(0x80);
        let e = utf8_text("f", bytes).unwrap_err();
        assert!(e.0.contains("offset 4 (line 1, column 3)"), "{e}");
    }

    #[test]
    fn counts() {
        assert_eq!(count("0"), Ok(0));
        assert_eq!(positive_count("3"), Ok(3));
        assert_eq!(positive_count("0"), Err("must be at least 1".into()));
        assert_eq!(count("-1"), Err("must not be negative".into()));
        assert_eq!(count("two"), Err("expected a whole number".into()));
        assert_eq!(count("99999999999999999999999"), Err("is too large".into()));
    }
}
