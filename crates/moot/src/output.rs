//! Writing to standard output. When the reader goes away (`moot show RUN | head -c1`), a write
//! fails with EPIPE: Rust ignores SIGPIPE, and moot keeps it ignored, since a cli agent that
//! closes its stdin must not kill moot. moot then ends quietly with status 0, as a Unix tool
//! ends when nobody reads it any more, instead of panicking as `println!` does.

use std::io::Write;

/// Writes `args` (and a newline, with `newline`) to standard output; a reader that is gone ends
/// moot quietly, any other failure ends it with a message.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| {
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
