//! Writing to standard output and standard error, through one redactor.
//!
//! Every text moot prints (`outln!`/`out!` on stdout, `errln!`, errors and progress lines on
//! stderr) passes [`redact`] first: the process's one [`Redactor`], made at start from the
//! configuration the command was given (its `api_key_env` keys and `security.redact`
//! patterns) and the environment's secret-named variables, so an upstream that echoes a key, in
//! full, cut short or URL-encoded, never has it printed.
//!
//! When stdout's reader goes away (`moot show RUN | head -c1`), a write fails with EPIPE: Rust
//! ignores SIGPIPE, and moot keeps it ignored, since a cli agent that closes its stdin must not
//! kill moot. moot then ends quietly with status 0, as a Unix tool ends when nobody reads it any
//! more, instead of panicking as `println!` does.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use moot_core::redact::Redactor;

static REDACTOR: OnceLock<Redactor> = OnceLock::new();

/// Makes the process's redactor from the configuration at `config` (the command's `--config`),
/// or from the defaults. A configuration that cannot be read gives the defaults here: the
/// command reports the error itself when it loads the file.
pub fn init_redactor(config: Option<&Path>) {
    let redactor = config
        .and_then(|path| moot_config::dialect::read(path).ok())
        .and_then(|(config, _)| config.redactor().ok())
        .unwrap_or_else(default_redactor);
    let _ = REDACTOR.set(redactor);
}

/// The redactor of the default configuration: the built-in patterns and the environment's
/// secret-named variables.
fn default_redactor() -> Redactor {
    moot_config::Config::default()
        .redactor()
        .unwrap_or_default()
}

/// `text` with every secret the process knows of removed.
pub fn redact(text: &str) -> Cow<'_, str> {
    REDACTOR.get_or_init(default_redactor).redact(text)
}

/// Writes `args` (and a newline, with `newline`) to standard output, redacted; a reader that is
/// gone ends moot quietly, any other failure ends it with a message.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let text = args.to_string();
    let text = redact(&text);
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        drop(out);
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("moot: error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// `println!`, ending moot quietly when standard output's reader is gone.
macro_rules! outln {
    () => {
        $crate::output::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), true)
    };
}

/// `print!`, ending moot quietly when standard output's reader is gone.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), false)
    };
}

/// `eprintln!`, redacted.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err(format_args!($($arg)*))
    };
}

/// Writes a line to standard error, redacted (a failed write to stderr has nowhere to go).
pub fn write_err(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut line = redact(&text).into_owned();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
