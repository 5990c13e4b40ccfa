//! `moot list`: what the store holds, most recent first — each run asked on its own and each
//! benchmark (with its accuracy per protocol) as one line, or one benchmark's debates
//! (`--bench NAME`); read by `moot_app::listing`.

use anyhow::Result;
use moot_app::listing::{Entry, ListRequest, Listing, Status};
use moot_store::Store;

/// Entries shown without `--limit` or `--all`.
const DEFAULT_LIMIT: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusArg {
    Done,
    Running,
    Interrupted,
    Failed,
    Planned,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only runs asked on their own (asks, forks, imports), no benchmarks.
    #[arg(long, conflicts_with = "benchmarks")]
    runs: bool,
    /// Only benchmarks.
    #[arg(long)]
    benchmarks: bool,
    /// The debates of benchmark NAME instead, one line each.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["runs", "benchmarks"])]
    bench: Option<String>,
    /// Only runs of this protocol, and benchmarks that ran it.
    #[arg(long, value_parser = protocol)]
    protocol: Option<String>,
    /// Only entries with this status (a benchmark is failed when a debate of it failed,
    /// running while one runs, planned when it waits for `moot work` and none has started,
    /// interrupted when some are not done and none runs).
    #[arg(long, value_enum)]
    status: Option<StatusArg>,
    /// Only entries created since a date (2026-11-23, 2026-11-23T10:00, UTC) or for a time
    /// (3d, 12h, 2w).
    #[arg(long, value_name = "WHEN", value_parser = since)]
    since: Option<String>,
    /// The most entries shown (default 20); a last line says how many more there are.
    #[arg(long, value_name = "N", value_parser = crate::input::positive_count, conflicts_with = "all")]
    limit: Option<usize>,
    /// Every entry.
    #[arg(long)]
    all: bool,
    // --json: one JSON array of the entries (`kind`: `run` or `benchmark`); how many more
    // there are goes to stderr.
    #[command(flatten)]
    output: crate::flags::Json,
    #[command(flatten)]
    store: crate::flags::Store,
}

fn protocol(given: &str) -> Result<String, String> {
    let known: Vec<&str> = moot_core::protocol::PROTOCOLS
        .iter()
        .map(|p| p.name)
        .collect();
    if known.contains(&given) {
        Ok(given.to_string())
    } else {
        Err(format!(
            "no protocol named {given:?} (known: {})",
            known.join(", ")
        ))
    }
}

fn since(given: &str) -> Result<String, String> {
    moot_app::listing::since(given, std::time::SystemTime::now()).ok_or_else(|| {
        format!(
            "{given:?} is neither a date (2026-11-23, 2026-11-23T10:00) nor a time ago (3d, 12h)"
        )
    })
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let request = ListRequest {
        runs: !args.benchmarks,
        benches: !args.runs,
        bench: args.bench.clone(),
        protocol: args.protocol,
        status: args.status.map(|s| match s {
            StatusArg::Done => Status::Done,
            StatusArg::Running => Status::Running,
            StatusArg::Interrupted => Status::Interrupted,
            StatusArg::Failed => Status::Failed,
            StatusArg::Planned => Status::Planned,
        }),
        since: args.since,
        limit: (!args.all).then_some(args.limit.unwrap_or(DEFAULT_LIMIT)),
    };
    let Listing { entries, more } = rt.block_on(moot_app::listing::list(store, &request))?;
    let more_line = (more > 0)
        .then(|| format!("{more} more not shown (--limit N shows more, --all every one)"));
    if args.output.json {
        outln!(
            "{}",
            moot_core::escape::json(&serde_json::to_string(&entries)?)
        );
        if let Some(line) = more_line {
            errln!("moot list: {line}");
        }
        return Ok(());
    }
    if entries.is_empty() {
        outln!(
            "{}",
            match &args.bench {
                Some(name) => format!("benchmark {name} has no debates that match"),
                None => "nothing stored matches".to_string(),
            }
        );
        return Ok(());
    }
    let rows: Vec<[String; 6]> = entries.iter().map(row).collect();
    let header = [
        "ID / NAME",
        "KIND",
        "PROTOCOL",
        "STATUS",
        "ANSWER / ACCURACY",
        "CREATED (UTC)",
    ]
    .map(str::to_string);
    let mut widths = [0usize; 6];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        // Answers and names are stored text: shown, never obeyed by the terminal.
        outln!("{}", moot_core::escape::terminal(line.trim_end()));
    }
    if let Some(line) = more_line {
        outln!("{line}");
    }
    Ok(())
}

/// One entry as the table's cells.
fn row(entry: &Entry) -> [String; 6] {
    match entry {
        Entry::Run {
            id,
            protocol,
            status,
            answer,
            created_at,
            ..
        } => [
            id.clone(),
            "run".into(),
            protocol.clone(),
            status.as_str().into(),
            answer
                .as_deref()
                .map_or("—".into(), |a| moot_app::view::shorten(a, 40)),
            date(created_at),
        ],
        Entry::Benchmark {
            name,
            protocols,
            status,
            done,
            planned,
            accuracy,
            created_at,
            ..
        } => {
            let mut scores: Vec<String> = accuracy
                .iter()
                .map(|a| format!("{} {}/{}", a.protocol, a.correct, a.total))
                .collect();
            if *status != Status::Done {
                scores.push(format!("({done}/{planned} debates done)"));
            }
            [
                name.clone(),
                "benchmark".into(),
                protocols.join(","),
                status.as_str().into(),
                scores.join(" · "),
                date(created_at),
            ]
        }
    }
}

/// `2026-11-23T10:04:05.123Z` as `2026-11-23 10:04`.
fn date(at: &str) -> String {
    let shown: String = at.chars().take(16).collect();
    shown.replacen('T', " ", 1)
}
