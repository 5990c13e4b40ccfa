//! `moot show RUN`: a stored debate as JSON or Markdown (written by `moot_app::view::markdown`).

use anyhow::Result;
use moot_app::run_records::RunRecords;
use moot_store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Markdown,
    /// freemad's transcript JSON.
    Freemad,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id.
    run: String,
    #[arg(long, value_enum, default_value = "markdown")]
    format: Format,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let records = rt.block_on(RunRecords::load(store, &args.run))?;
    match args.format {
        // JSON escapes C0 controls itself; C1 and bidirectional controls are escaped here.
        Format::Json => outln!("{}", moot_core::escape::json(&records.json().to_string())),
        // Everything from the store is escaped where it is placed; the whole page once more
        // for the terminal, in case a piece was missed.
        Format::Markdown => out!(
            "{}",
            moot_core::escape::terminal(&moot_app::view::markdown::markdown(&records))
        ),
        Format::Freemad => outln!(
            "{}",
            moot_core::escape::json(&serde_json::to_string_pretty(&records.freemad()?)?)
        ),
    }
    Ok(())
}
