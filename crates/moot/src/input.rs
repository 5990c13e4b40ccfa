//! Error reporting shared by the subcommands: one line on stderr, exit code 2 for bad input.

use std::fmt;
use std::io::Read;
use std::process::ExitCode;

/// An error in what the user gave us (arguments, files, stdin). Exits with code 2.
#[derive(Debug)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Shorthand for returning an [`InputError`].
pub fn bad_input<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(InputError(message.into()).into())
}

/// Prints `moot: error: …` on one line; input errors exit 2, anything else 1.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let line = format!("{e:#}").replace('\n', " ");
    // An error may quote a server's reply or a request; keys in it must not reach the terminal
    // or a log collecting it.
    let line = moot_core::redact::Redactor::default()
        .redact(&line)
        .into_owned();
    eprintln!("moot: error: {line}");
    if e.downcast_ref::<InputError>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// Help and version go to stdout as usual; argument errors are cut to their first line (the
/// one that names what is wrong) and exit 2.
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
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("moot: error: {first} (see --help)");
            ExitCode::from(2)
        }
    }
}

/// Reads all of stdin as UTF-8.
pub fn read_stdin(what: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| InputError(format!("cannot read {what} from stdin: {e}")))?;
    String::from_utf8(bytes).or_else(|e| {
        bad_input(format!(
            "{what} on stdin is not UTF-8 (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
