//! Throughput of `moot work` with 1, 2, 4 and 8 workers sharing one PostgreSQL store, against a
//! model server that answers every request after a fixed latency (docs/scale-out.md).
//!
//! For each worker count W: a fresh database on a throwaway PostgreSQL (`moot-pgtest`), a fresh
//! fake OpenAI-compatible server (`tests/it/common/fake_openai.rs`), the same plan recorded with
//! `moot bench … --run tp --detach`, then W `moot work tp` processes started together. Wall time
//! runs from starting the workers to the last one's exit; calls are the requests the server saw
//! (checked against the sum of the workers' own counts). The ideal for W workers is W times the
//! rate of the first configuration (W = 1) of the same invocation.
//!
//! Every run is checked: all workers exit 0, `moot bench status tp --json` shows every debate
//! done, the server saw no request twice, and the workers' call counts add up to the server's.
//!
//! Settings (environment variables, defaults in brackets): `MOOT_BENCH_WORKERS` [1,2,4,8],
//! `MOOT_BENCH_ITEMS` [160], `MOOT_BENCH_LATENCY_MS` [500], `MOOT_BENCH_CONCURRENCY` [2],
//! `MOOT_BENCH_AGENTS` [3], `MOOT_BENCH_ROUNDS` [1], `MOOT_BENCH_POLL` [200ms].
//!
//! Run: `cargo bench -p moot --bench workers` (add `--profile dev` to skip the release build).

#[path = "../tests/it/common/fake_openai.rs"]
mod fake_openai;
#[path = "common/machine.rs"]
mod machine;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fake_openai::FakeOpenAi;
use machine::*;
use moot_pgtest::PgServer;
use serde_json::Value;

const MOOT: &str = env!("CARGO_BIN_EXE_moot");
const BENCH: &str = "tp";

struct Settings {
    workers: Vec<usize>,
    items: usize,
    latency: Duration,
    concurrency: usize,
    agents: usize,
    rounds: usize,
    poll: String,
}

impl Settings {
    fn from_env() -> Settings {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value")),
                Err(_) => default,
            }
        }
        let workers = std::env::var("MOOT_BENCH_WORKERS")
            .unwrap_or_else(|_| "1,2,4,8".into())
            .split(',')
            .map(|w| {
                w.trim()
                    .parse::<usize>()
                    .expect("MOOT_BENCH_WORKERS: numbers")
            })
            .collect::<Vec<_>>();
        assert!(
            !workers.is_empty() && workers.iter().all(|&w| w > 0),
            "MOOT_BENCH_WORKERS needs positive counts"
        );
        Settings {
            workers,
            items: var("MOOT_BENCH_ITEMS", 160),
            latency: Duration::from_millis(var("MOOT_BENCH_LATENCY_MS", 500)),
            concurrency: var("MOOT_BENCH_CONCURRENCY", 2),
            agents: var("MOOT_BENCH_AGENTS", 3),
            rounds: var("MOOT_BENCH_ROUNDS", 1),
            poll: std::env::var("MOOT_BENCH_POLL").unwrap_or_else(|_| "200ms".into()),
        }
    }

    /// Calls per second one worker could reach if the model server's latency were the only
    /// cost: `concurrency` debates, each with all its agents' calls of a round in flight.
    fn latency_bound_per_worker(&self) -> f64 {
        (self.concurrency * self.agents) as f64 / self.latency.as_secs_f64()
    }
}

/// One worker process while it runs: its stdout and stderr go to files.
struct Running {
    index: usize,
    id: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

/// One worker process as it ended.
struct WorkerEnd {
    /// Its place among the run's workers, and its `--worker-id` (`w0`, `w1`, …).
    index: usize,
    id: String,
    status: ExitStatus,
    /// Seconds from the start of the run to its exit (as seen by polling, within ~5 ms).
    exited_s: f64,
    summary: Option<Value>,
    stderr: String,
}

/// What one configuration measured.
struct Measured {
    workers: usize,
    debates: u64,
    calls: usize,
    wall_s: f64,
    first_call_s: f64,
    last_reply_s: f64,
    first_exit_s: f64,
    per_worker_debates: Vec<u64>,
    per_worker_calls_sum: u64,
    worker_cpu_s: f64,
    postgres_cpu_s: f64,
    bench_cpu_s: f64,
    machine_busy: f64,
    /// CPU seconds of everything else on the machine meanwhile (another build, say): what
    /// makes a run's numbers unrepresentative.
    other_cpu_s: f64,
    taken_over: u64,
    lost: u64,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.wall_s
    }
}

fn main() {
    let settings = Settings::from_env();
    let clk_tck = clock_ticks();
    let pg = PgServer::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dataset = arith_dataset(dir.path(), settings.items);

    let mut problems: Vec<String> = Vec::new();
    let mut results: Vec<Measured> = Vec::new();
    for &w in &settings.workers {
        eprintln!("workers: {w} …");
        let m = run_configuration(
            &settings,
            &pg,
            dir.path(),
            &dataset,
            w,
            clk_tck,
            &mut problems,
        );
        eprintln!(
            "workers: {w}: {} calls in {:.2} s = {:.1} calls/s",
            m.calls,
            m.wall_s,
            m.rate()
        );
        results.push(m);
    }

    print_report(&settings, &results);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("PROBLEM: {p}");
        }
        panic!("{} problem(s) in the runs above", problems.len());
    }
}

fn run_configuration(
    s: &Settings,
    pg: &PgServer,
    dir: &Path,
    dataset: &str,
    workers: usize,
    clk_tck: f64,
    problems: &mut Vec<String>,
) -> Measured {
    let store = pg.fresh_database();
    let fake = FakeOpenAi::start(s.latency);
    let config = dir.join(format!("team-{workers}.toml"));
    fs::write(&config, fake.team(s.agents, s.rounds)).expect("write the team");

    let plan = moot(&store)
        .args(["bench", "--config"])
        .arg(&config)
        .args(["--dataset", dataset, "--protocol", "som", "--run", BENCH])
        .args(["--detach", "--no-cache", "--json"])
        .output()
        .expect("run moot bench --detach");
    assert!(
        plan.status.success(),
        "moot bench --detach failed: {}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let planned: Value = serde_json::from_slice(&plan.stdout).expect("the plan's JSON");
    assert_eq!(planned["planned"], s.items as u64, "planned: {planned}");

    let logs = dir.join(format!("logs-{workers}"));
    fs::create_dir_all(&logs).expect("the logs folder");
    let postmaster = postmaster_pid();
    let cpu_before = (
        children_cpu(clk_tck),
        postgres_cpu(postmaster.as_deref(), clk_tck),
        self_cpu(clk_tck),
        machine_ticks(),
    );
    let started = Instant::now();
    let mut running: Vec<Running> = (0..workers)
        .map(|index| {
            let id = format!("w{index}");
            let out = logs.join(format!("{id}.out"));
            let err = logs.join(format!("{id}.err"));
            let child = moot(&store)
                .args(["work", BENCH, "--concurrency", &s.concurrency.to_string()])
                // The team configuration: a stored plan grants no agent its endpoint.
                .arg("--config")
                .arg(&config)
                .args([
                    "--poll",
                    &s.poll,
                    "--no-cache",
                    "--json",
                    "--worker-id",
                    &id,
                ])
                .stdin(Stdio::null())
                .stdout(fs::File::create(&out).expect("a log file"))
                .stderr(fs::File::create(&err).expect("a log file"))
                .spawn()
                .expect("start moot work");
            Running {
                index,
                id,
                child,
                out,
                err,
            }
        })
        .collect();
    let mut ended: Vec<WorkerEnd> = Vec::new();
    while !running.is_empty() {
        let mut i = 0;
        while i < running.len() {
            match running[i].child.try_wait().expect("wait for a worker") {
                Some(status) => {
                    let exited_s = started.elapsed().as_secs_f64();
                    let Running {
                        index,
                        id,
                        out,
                        err,
                        ..
                    } = running.swap_remove(i);
                    let stdout = fs::read_to_string(out).unwrap_or_default();
                    ended.push(WorkerEnd {
                        index,
                        id,
                        status,
                        exited_s,
                        summary: serde_json::from_str(stdout.trim()).ok(),
                        stderr: fs::read_to_string(err).unwrap_or_default(),
                    });
                }
                None => i += 1,
            }
        }
        if started.elapsed() > Duration::from_secs(1800) {
            for r in &mut running {
                let _ = r.child.kill();
                let _ = r.child.wait();
            }
            panic!("{workers} workers: not done after 30 minutes");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall_s = ended.iter().map(|e| e.exited_s).fold(0.0, f64::max);
    let first_exit_s = ended.iter().map(|e| e.exited_s).fold(f64::MAX, f64::min);
    // The database's backends end as their clients go; let the postmaster reap them.
    std::thread::sleep(Duration::from_millis(300));
    let (worker_cpu, pg_cpu, bench_cpu, machine) = (
        children_cpu(clk_tck) - cpu_before.0,
        postgres_cpu(postmaster.as_deref(), clk_tck) - cpu_before.1,
        self_cpu(clk_tck) - cpu_before.2,
        machine_ticks(),
    );
    let busy = (machine.0 - cpu_before.3 .0) as f64;
    let total = (machine.1 - cpu_before.3 .1) as f64;
    let machine_busy = if total > 0.0 { busy / total } else { 0.0 };
    let other_cpu_s = (busy / clk_tck - worker_cpu - pg_cpu - bench_cpu).max(0.0);

    // Correctness.
    let seen = fake.seen();
    let calls = seen.len();
    let first_call_s = seen
        .iter()
        .map(|c| c.at.saturating_duration_since(started).as_secs_f64())
        .fold(f64::MAX, f64::min);
    let last_reply_s = seen
        .iter()
        .map(|c| {
            (c.at + s.latency)
                .saturating_duration_since(started)
                .as_secs_f64()
        })
        .fold(0.0, f64::max);
    let repeats = fake.repeats();
    if repeats != 0 {
        problems.push(format!(
            "{workers} workers: the server saw {repeats} repeated requests"
        ));
    }
    let mut per_worker_debates = Vec::new();
    let (mut calls_sum, mut debates, mut taken_over, mut lost) = (0, 0, 0, 0);
    ended.sort_by_key(|e| e.index);
    for e in &ended {
        if !e.status.success() {
            problems.push(format!(
                "{workers} workers: worker {} exited with {}: {}",
                e.id,
                e.status,
                e.stderr.trim()
            ));
        }
        match &e.summary {
            Some(v) => {
                let n = |k: &str| v[k].as_u64().unwrap_or(0);
                per_worker_debates.push(n("debates"));
                debates += n("debates");
                calls_sum += n("calls");
                taken_over += n("taken_over");
                lost += n("lost");
                if n("failed") != 0 {
                    problems.push(format!(
                        "{workers} workers: worker {} failed {} debates",
                        e.id,
                        n("failed")
                    ));
                }
            }
            None => problems.push(format!(
                "{workers} workers: worker {} printed no JSON summary (stderr: {})",
                e.id,
                e.stderr.trim()
            )),
        }
    }
    if calls_sum != calls as u64 {
        problems.push(format!(
            "{workers} workers: the workers counted {calls_sum} calls, the server saw {calls}"
        ));
    }
    if debates != s.items as u64 {
        problems.push(format!(
            "{workers} workers: the workers finished {debates} debates of {}",
            s.items
        ));
    }
    let status = moot(&store)
        .args(["bench", "status", BENCH, "--json"])
        .output()
        .expect("run moot bench status");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap_or_else(|e| {
        panic!(
            "moot bench status --json: {e}: {}",
            String::from_utf8_lossy(&status.stderr)
        )
    });
    let counts = &status["counts"];
    if counts["done"] != s.items as u64 || status["total"] != s.items as u64 {
        problems.push(format!("{workers} workers: status after the run: {counts}"));
    }

    Measured {
        workers,
        debates,
        calls,
        wall_s,
        first_call_s,
        last_reply_s,
        first_exit_s,
        per_worker_debates,
        per_worker_calls_sum: calls_sum,
        worker_cpu_s: worker_cpu,
        postgres_cpu_s: pg_cpu,
        bench_cpu_s: bench_cpu,
        machine_busy,
        other_cpu_s,
        taken_over,
        lost,
    }
}

/// `moot` on `store`, with nothing from the caller's environment that would change it.
fn moot(store: &str) -> Command {
    let mut c = Command::new(MOOT);
    c.env("MOOT_STORE", store)
        .env_remove("MOOT_MODEL_DIR")
        .env_remove("RUST_LOG");
    c
}

/// `n` arithmetic questions ("What is N * 7?"), as `common::arith_dataset` writes them; returns
/// the dataset name that reads them.
fn arith_dataset(dir: &Path, n: usize) -> String {
    let lines: String = (1..=n)
        .map(|i| {
            format!(
                "{{\"id\": \"q{i}\", \"q\": \"What is {i} * 7?\", \"a\": {}}}\n",
                i * 7
            )
        })
        .collect();
    let path = dir.join("arith.jsonl");
    fs::write(&path, lines).expect("write the dataset");
    format!(
        "jsonl:{}?kind=numeric&question=q&answer=a&id=id",
        path.display()
    )
}

fn print_report(s: &Settings, results: &[Measured]) {
    let Some(base) = results.first() else { return };
    let per_worker = base.rate() / base.workers as f64;
    let calls_per_debate = base.calls as f64 / base.debates.max(1) as f64;
    println!();
    println!("## moot work throughput");
    println!();
    println!(
        "- settings: {} debates (som, {} agents, {} round(s) after round 0: {:.0} calls each), \
         model latency {} ms, `--concurrency {}`, `--poll {}`, `--no-cache`",
        s.items,
        s.agents,
        s.rounds,
        calls_per_debate,
        s.latency.as_millis(),
        s.concurrency,
        s.poll
    );
    print_provenance("workers");
    println!("- PostgreSQL: {}", pg_version());
    println!();
    println!("| workers | debates | calls | wall s | calls/s | ideal calls/s | ratio |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for m in results {
        let ideal = per_worker * m.workers as f64;
        println!(
            "| {} | {} | {} | {:.2} | {:.1} | {:.1} | {:.2} |",
            m.workers,
            m.debates,
            m.calls,
            m.wall_s,
            m.rate(),
            ideal,
            m.rate() / ideal
        );
    }
    println!();
    println!(
        "Ideal: W × the W = {} rate. Latency bound (no cost but the server's latency): {:.1} calls/s \
         per worker; W = {} reached {:.0}% of it.",
        base.workers,
        s.latency_bound_per_worker(),
        base.workers,
        100.0 * base.rate() / (s.latency_bound_per_worker() * base.workers as f64)
    );
    println!();
    println!(
        "| workers | first call s | last reply s | first / last exit s | debates per worker | \
         worker CPU s | PostgreSQL CPU s | server+bench CPU s | machine busy | other processes CPU s |"
    );
    println!("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |");
    for m in results {
        let min = m.per_worker_debates.iter().min().copied().unwrap_or(0);
        let max = m.per_worker_debates.iter().max().copied().unwrap_or(0);
        println!(
            "| {} | {:.2} | {:.2} | {:.2} / {:.2} | {min}–{max} | {:.1} | {:.1} | {:.1} | {:.0}% | {:.1} |",
            m.workers,
            m.first_call_s,
            m.last_reply_s,
            m.first_exit_s,
            m.wall_s,
            m.worker_cpu_s,
            m.postgres_cpu_s,
            m.bench_cpu_s,
            100.0 * m.machine_busy,
            m.other_cpu_s
        );
    }
    let odd: Vec<String> = results
        .iter()
        .filter(|m| m.taken_over + m.lost > 0)
        .map(|m| {
            format!(
                "{} workers: {} taken over, {} lost",
                m.workers, m.taken_over, m.lost
            )
        })
        .collect();
    println!();
    if odd.is_empty() {
        println!("No debate was taken over or lost (no lease ran out).");
    } else {
        println!("Leases ran out: {}", odd.join("; "));
    }
    println!(
        "Workers' own call counts add up to the server's in every run: {}.",
        if results
            .iter()
            .all(|m| m.per_worker_calls_sum == m.calls as u64)
        {
            "yes"
        } else {
            "NO"
        }
    );
}

fn pg_version() -> String {
    command_line("psql", &["--version"])
}

/// The pid of this process's PostgreSQL postmaster.
fn postmaster_pid() -> Option<String> {
    let me = std::process::id().to_string();
    processes()
        .into_iter()
        .find(|(pid, f)| f[0] == "postgres" && field(f, 4).to_string() == me && pid != &me)
        .map(|(pid, _)| pid)
}

/// CPU seconds of the postmaster, its live children and its reaped children.
fn postgres_cpu(postmaster: Option<&str>, clk_tck: f64) -> f64 {
    let Some(pm) = postmaster else { return 0.0 };
    let ticks: u64 = processes()
        .iter()
        .map(|(pid, f)| {
            if pid == pm {
                field(f, 14) + field(f, 15) + field(f, 16) + field(f, 17)
            } else if field(f, 4).to_string() == pm {
                field(f, 14) + field(f, 15)
            } else {
                0
            }
        })
        .sum();
    ticks as f64 / clk_tck
}
