//! `moot import DIR`: freemad transcript files into the store as runs (`moot_app::import`),
//! one line per file.

use std::path::PathBuf;

use anyhow::Result;
use moot_app::import::{import, shown, FileOutcome, DEFAULT_MAX_FILE_BYTES};
use moot_store::Store;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A folder of freemad transcripts (`transcript-*.json` or `.md`), or one file.
    path: PathBuf,
    /// The largest transcript file read, in bytes (default 64 MiB); a larger one is reported
    /// and left out.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_BYTES)]
    max_file_bytes: u64,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let mut meter =
        crate::progress::meter::Meter::new("import", &[("files".to_string(), None)], false);
    let done = rt.block_on(import(
        &args.path,
        args.max_file_bytes,
        moot_config::Via::Cli,
        store,
        &mut |file, outcome| {
            if let Some(bar) = meter.bar(0) {
                bar.inc(1);
            }
            meter.suspend(|| said(file, outcome));
        },
    ));
    meter.finish();
    done
}

/// One line per file: imported (or already), or why not.
fn said(file: &std::path::Path, outcome: &FileOutcome) {
    match outcome {
        FileOutcome::Imported(id) => outln!("{}: imported as {id}", shown(file)),
        FileOutcome::ImportedBefore(id) => {
            outln!("{}: already imported as {id}", shown(file))
        }
        FileOutcome::Failed(why) => {
            // As moot's own error line is: one line, and no key that a file or a store
            // error quotes reaches the terminal.
            let line = format!("{}: not imported: {why}", shown(file)).replace('\n', " ");
            let line = crate::output::redact(&line);
            errln!("moot: error: {line}");
        }
    }
}
