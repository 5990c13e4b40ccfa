//! How close one debate's wall time comes to its critical path (issue 19, part 4; goal ≤ 1.05).
//!
//! The critical path of a debate is the sum over its rounds of the slowest call of the round:
//! the engine must wait for a round's answers before the next round's prompts exist, so no
//! scheduler can do better. Everything above it is the engine's own cost (planning, prompts,
//! store writes, HTTP or process spawns, decisions).
//!
//! For each team size N (`MOOT_BENCH_AGENTS`), one `moot ask` under `som` (all-to-all) with
//! `MOOT_BENCH_ROUNDS` debate rounds, on a fresh SQLite store, against agents with known,
//! distinct latencies: agent i (from 0) answers after `base + (i * 37 mod spread)` ms.
//! - `openai` agents: the deterministic fake server of `tests/it/common/fake_openai.rs`, one model
//!   name per agent (`lat-07`), each model with its own latency.
//! - `cli` agents (`MOOT_BENCH_CLI_AGENTS`): a `#!/bin/sh` script in the temporary folder that
//!   reads its prompt, sleeps its agent's time and answers in freemad's contract
//!   (`SOLUTION:` / `REASONING:`, or `DECISION: KEEP` when asked to critique).
//!
//! Nothing is allowed to serialise or cut the calls: `max_concurrent_calls` and `min_agents`
//! are N, both deadlines 10 minutes, retries off, and a token budget large enough for N > 16.
//!
//! Wall time is measured two ways:
//! 1. the debate's own time as the store records it: the run's `created_at` to `finished_at`;
//! 2. the `moot ask` process's wall time minus its start-up and exit (the binary, the
//!    configuration, the store's creation, the agents' set-up; printing and closing), measured
//!    by the same `moot ask` with every latency 0 run just before it: that run's process time
//!    minus its own debate's time.
//!
//! The critical path is computed from the injected latencies of each stored round's calls, and
//! cross-checked against the latencies the store recorded. For openai agents the fake server's
//! clock (the bench's own) also gives a sub-millisecond timeline: process start → first
//! request, per round the spread of the requests' arrivals, the round's span over its slowest
//! latency and the gap until the next round's first request, and last reply → process exit.
//!
//! Every run is checked (the bench panics after printing its tables if one is wrong): `moot
//! ask` succeeds, the run is done, every planned call answered with a readable answer (no
//! error, no skip, no re-ask), each agent was asked exactly once per round (by the server's or
//! the script's count), and no call took less than its injected latency. The goal itself is
//! reported, not asserted.
//!
//! Settings (environment variables, defaults in brackets): `MOOT_BENCH_AGENTS` [3,10,50],
//! `MOOT_BENCH_CLI_AGENTS` [3,10] (empty: none), `MOOT_BENCH_ROUNDS` [2],
//! `MOOT_BENCH_REPEATS` [3] (medians are reported), `MOOT_BENCH_BASE_MS` [100],
//! `MOOT_BENCH_SPREAD_MS` [200].
//!
//! Run: `cargo bench -p moot --bench critical_path`.

#[path = "../tests/it/common/fake_openai.rs"]
mod fake_openai;
#[path = "common/machine.rs"]
mod machine;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};

use fake_openai::FakeOpenAi;
use machine::*;
use serde_json::Value;

const MOOT: &str = env!("CARGO_BIN_EXE_moot");
const QUESTION: &str = "What is 17 * 7?";
const GOAL: f64 = 1.05;

struct Settings {
    agents: Vec<usize>,
    cli_agents: Vec<usize>,
    rounds: usize,
    repeats: usize,
    base_ms: u64,
    spread_ms: u64,
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
        fn counts(name: &str, default: &str) -> Vec<usize> {
            std::env::var(name)
                .unwrap_or_else(|_| default.into())
                .split(',')
                .filter(|n| !n.trim().is_empty())
                .map(|n| {
                    let n: usize = n
                        .trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("{name}: {n:?} is not a number"));
                    assert!(n >= 2, "{name}: a debate needs at least 2 agents");
                    n
                })
                .collect()
        }
        let s = Settings {
            agents: counts("MOOT_BENCH_AGENTS", "3,10,50"),
            cli_agents: counts("MOOT_BENCH_CLI_AGENTS", "3,10"),
            rounds: var("MOOT_BENCH_ROUNDS", 2),
            repeats: var("MOOT_BENCH_REPEATS", 3),
            base_ms: var("MOOT_BENCH_BASE_MS", 100),
            spread_ms: var("MOOT_BENCH_SPREAD_MS", 200),
        };
        assert!(s.repeats > 0, "MOOT_BENCH_REPEATS must be positive");
        assert!(s.spread_ms > 0, "MOOT_BENCH_SPREAD_MS must be positive");
        s
    }

    /// The injected latency of agent `i` (from 0), in ms: distinct for the first `spread`
    /// agents when the spread is not a multiple of 37.
    fn latency_ms(&self, i: usize) -> u64 {
        self.base_ms + (i as u64 * 37) % self.spread_ms
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    OpenAi,
    Cli,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::OpenAi => "openai",
            Kind::Cli => "cli",
        }
    }
}

/// One round as the store recorded it (ms from the process's start, by the wall clock).
#[derive(Clone, Debug, Default)]
struct StoredRound {
    injected_max_ms: f64,
    recorded_max_ms: f64,
    /// The earliest call start (`recorded_at - latency_ms`) and the latest `recorded_at`.
    start_ms: f64,
    end_ms: f64,
    /// The slowest call (by injected latency): its start after the round's first start, its
    /// recorded latency over its injected one, and the round's end after its own.
    slowest_start_ms: f64,
    slowest_excess_ms: f64,
    slowest_end_ms: f64,
    /// Every call's recorded latency over its injected one.
    call_excess_ms: Vec<f64>,
}

impl StoredRound {
    fn stagger_ms(&self) -> f64 {
        self.slowest_start_ms - self.start_ms
    }
    fn tail_ms(&self) -> f64 {
        self.end_ms - self.slowest_end_ms
    }
}

/// One round as the fake server saw it (ms from the process's start, by the bench's clock).
#[derive(Clone, Debug, Default)]
struct ServedRound {
    first_arrival_ms: f64,
    last_arrival_ms: f64,
    last_reply_ms: f64,
    injected_max_ms: f64,
}

/// What one `moot ask` measured.
#[derive(Clone, Debug, Default)]
struct Run {
    process_ms: f64,
    /// `created_at` → `finished_at`.
    debate_ms: f64,
    /// `wall_ms` of `moot ask --json`.
    reported_ms: f64,
    created_ms: f64,
    finished_ms: f64,
    injected_cp_ms: f64,
    recorded_cp_ms: f64,
    stored: Vec<StoredRound>,
    served: Vec<ServedRound>,
    /// CPU of the moot process and its children (the agents' scripts), ms.
    cpu_ms: f64,
    /// The machine's busy share meanwhile (all processes, all cores).
    machine_busy: f64,
}

impl Run {
    /// The process's time outside its debate: start-up (binary, configuration, store,
    /// agents) and exit (printing, closing the store).
    fn outside_ms(&self) -> f64 {
        self.process_ms - self.debate_ms
    }
    fn before_first_call_ms(&self) -> f64 {
        self.stored.first().map_or(0.0, |r| r.start_ms) - self.created_ms
    }
    fn after_last_call_ms(&self) -> f64 {
        self.finished_ms - self.stored.last().map_or(0.0, |r| r.end_ms)
    }
    /// Σ of the gaps from a round's last recorded call to the next round's first call start.
    fn gaps_ms(&self) -> f64 {
        self.stored
            .windows(2)
            .map(|w| w[1].start_ms - w[0].end_ms)
            .sum()
    }
}

/// One configuration's repeats: each a zero-latency run and a run with the latencies.
struct Measured {
    kind: Kind,
    agents: usize,
    runs: Vec<Run>,
    zero: Vec<Run>,
}

impl Measured {
    fn median(&self, f: impl Fn(&Run) -> f64) -> f64 {
        median(self.runs.iter().map(f).collect())
    }
    fn median_zero(&self, f: impl Fn(&Run) -> f64) -> f64 {
        median(self.zero.iter().map(f).collect())
    }
    /// Per repeat: the process's wall time minus its start-up and exit, as the zero-latency
    /// run of the same repeat measured them (its process time minus its debate's time).
    fn process_debate_ms(&self) -> Vec<f64> {
        self.runs
            .iter()
            .zip(&self.zero)
            .map(|(r, z)| r.process_ms - z.outside_ms())
            .collect()
    }
    fn cp_ms(&self) -> f64 {
        self.median(|r| r.injected_cp_ms)
    }
    fn ratio_store(&self) -> f64 {
        self.median(|r| r.debate_ms / r.injected_cp_ms)
    }
    fn ratio_process(&self) -> f64 {
        median(
            self.runs
                .iter()
                .zip(self.process_debate_ms())
                .map(|(r, d)| d / r.injected_cp_ms)
                .collect(),
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let s = Settings::from_env();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clk_tck = clock_ticks();
    let mut problems: Vec<String> = Vec::new();

    // The bare cost of starting the binary, for reference.
    let bare: Vec<f64> = (0..s.repeats.max(3))
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(MOOT)
                .arg("--version")
                .output()
                .expect("run moot --version");
            assert!(out.status.success(), "moot --version failed");
            ms(t.elapsed())
        })
        .collect();

    // The cli agent's own cost (sh, cat, sleep 0), without moot.
    let script_ms = (!s.cli_agents.is_empty()).then(|| {
        let script = cli_script(dir.path());
        let scratch = dir.path().join("alone.calls");
        median(
            (0..20)
                .map(|_| {
                    let t = Instant::now();
                    let out = Command::new(&script)
                        .arg("0.000")
                        .arg(&scratch)
                        .args(["alone", "generate"])
                        .stdin(std::process::Stdio::null())
                        .output()
                        .expect("run the agent script");
                    assert!(out.status.success(), "the agent script failed");
                    ms(t.elapsed())
                })
                .collect(),
        )
    });

    let plan: Vec<(Kind, usize)> = s
        .agents
        .iter()
        .map(|&n| (Kind::OpenAi, n))
        .chain(s.cli_agents.iter().map(|&n| (Kind::Cli, n)))
        .collect();
    let mut results = Vec::new();
    for (kind, n) in plan {
        let mut m = Measured {
            kind,
            agents: n,
            runs: Vec::new(),
            zero: Vec::new(),
        };
        for rep in 0..s.repeats {
            let tag = format!("{}-{n}-{rep}", kind.name());
            let zero = run_once(&s, dir.path(), kind, n, true, &tag, clk_tck, &mut problems);
            let run = run_once(&s, dir.path(), kind, n, false, &tag, clk_tck, &mut problems);
            eprintln!(
                "{} × {n}, repeat {}: critical path {:.0} ms, debate {:.0} ms ({:.3}), process {:.0} ms − start-up and exit {:.0} ms = {:.0} ms ({:.3})",
                kind.name(),
                rep + 1,
                run.injected_cp_ms,
                run.debate_ms,
                run.debate_ms / run.injected_cp_ms,
                run.process_ms,
                zero.outside_ms(),
                run.process_ms - zero.outside_ms(),
                (run.process_ms - zero.outside_ms()) / run.injected_cp_ms
            );
            m.runs.push(run);
            m.zero.push(zero);
        }
        results.push(m);
    }

    report(&s, &results, median(bare), script_ms);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("PROBLEM: {p}");
        }
        panic!("{} problem(s) in the runs above", problems.len());
    }
}

/// One `moot ask` with `n` agents of `kind`, every latency 0 when `zero`; checks it.
#[allow(clippy::too_many_arguments)]
fn run_once(
    s: &Settings,
    dir: &Path,
    kind: Kind,
    n: usize,
    zero: bool,
    tag: &str,
    clk_tck: f64,
    problems: &mut Vec<String>,
) -> Run {
    let tag = format!("{tag}-{}", if zero { "zero" } else { "lat" });
    let latencies: Vec<u64> = (0..n)
        .map(|i| if zero { 0 } else { s.latency_ms(i) })
        .collect();
    let store = dir.join(format!("{tag}.db"));
    let config = dir.join(format!("{tag}.toml"));
    let counter = dir.join(format!("{tag}.calls"));
    let fake = match kind {
        Kind::OpenAi => {
            let table = latencies.clone();
            let fake = FakeOpenAi::with_latency(move |model| {
                Duration::from_millis(agent_of_model(model).map_or(0, |i| table[i]))
            });
            fs::write(&config, openai_team(s, &fake.url, n)).expect("write the team");
            Some(fake)
        }
        Kind::Cli => {
            let script = cli_script(dir);
            fs::write(&config, cli_team(s, &script, &counter, &latencies)).expect("write the team");
            None
        }
    };

    let cpu_before = (children_cpu(clk_tck), machine_ticks());
    let wall_start = SystemTime::now();
    let start = Instant::now();
    let out = Command::new(MOOT)
        .env("MOOT_STORE", &store)
        .env_remove("MOOT_MODEL_DIR")
        .env_remove("RUST_LOG")
        .args(["ask", QUESTION, "--config"])
        .arg(&config)
        .args(["--json"])
        .output()
        .expect("run moot ask");
    let process_ms = ms(start.elapsed());
    let cpu_ms = (children_cpu(clk_tck) - cpu_before.0) * 1000.0;
    let machine = machine_ticks();
    let total = machine.1.saturating_sub(cpu_before.1 .1) as f64;
    let machine_busy = if total > 0.0 {
        machine.0.saturating_sub(cpu_before.1 .0) as f64 / total
    } else {
        0.0
    };
    let what = format!(
        "{} × {n}{}",
        kind.name(),
        if zero { " (zero latency)" } else { "" }
    );
    let asked = check_ask(&what, &out, n, s.rounds, problems);
    let run_id = asked["run_id"].as_str().unwrap_or_default().to_string();

    let shown = show(&store, &run_id);
    let since = |stamp: &Value| -> f64 {
        let t = stamp
            .as_str()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .unwrap_or(wall_start);
        match t.duration_since(wall_start) {
            Ok(d) => ms(d),
            Err(e) => -ms(e.duration()),
        }
    };
    let run = &shown["run"];
    if run["status"] != "done" {
        problems.push(format!("{what}: run {run_id} is {}", run["status"]));
    }
    let created_ms = since(&run["created_at"]);
    let finished_ms = since(&run["finished_at"]);
    let calls = shown["calls"].as_array().cloned().unwrap_or_default();
    let stored = check_calls(&what, &calls, &latencies, s.rounds, &since, problems);
    let served = match &fake {
        Some(fake) => check_server(&what, fake, &latencies, s.rounds, start, problems),
        None => {
            check_counter(&what, &counter, n, s.rounds, problems);
            Vec::new()
        }
    };
    Run {
        process_ms,
        debate_ms: finished_ms - created_ms,
        reported_ms: asked["wall_ms"].as_f64().unwrap_or(f64::NAN),
        created_ms,
        finished_ms,
        injected_cp_ms: stored.iter().map(|r| r.injected_max_ms).sum(),
        recorded_cp_ms: stored.iter().map(|r| r.recorded_max_ms).sum(),
        stored,
        served,
        cpu_ms,
        machine_busy,
    }
}

/// The engine settings shared by both kinds of team: nothing serialises or cuts a call.
fn debate_section(s: &Settings, n: usize) -> String {
    format!(
        "[debate]\nprotocol = \"som\"\nrounds = {rounds}\nanswer = \"numeric\"\n\
         soft_timeout_ms = 600000\nhard_timeout_ms = 600000\nmin_agents = {n}\n\
         max_concurrent_calls = {n}\n\n\
         [budget]\nmax_total_tokens = 1000000000\n\n[retry]\nmax_retries = 0\n\n",
        rounds = s.rounds
    )
}

fn openai_team(s: &Settings, url: &str, n: usize) -> String {
    let mut toml = debate_section(s, n);
    for i in 0..n {
        toml.push_str(&format!(
            "[[agents]]\nid = \"a{i:02}\"\nbackend = \"openai\"\nbase_url = \"{url}\"\n\
             model = \"lat-{i:02}\"\nstream = false\n\n"
        ));
    }
    toml
}

/// `lat-07` → 7.
fn agent_of_model(model: &str) -> Option<usize> {
    model.strip_prefix("lat-")?.parse().ok()
}

/// The cli agent: `agent.sh SECONDS COUNTER ID MODE` reads its prompt, notes the call in
/// COUNTER, sleeps, and answers in freemad's contract.
fn cli_script(dir: &Path) -> PathBuf {
    let path = dir.join("agent.sh");
    if !path.exists() {
        fs::write(
            &path,
            "#!/bin/sh\n\
             # $1 seconds to sleep, $2 call counter file, $3 agent id, $4 generate | critique\n\
             cat > /dev/null\n\
             echo \"$3\" >> \"$2\"\n\
             sleep \"$1\"\n\
             if [ \"$4\" = critique ]; then\n\
             \tprintf 'DECISION: KEEP\\nREASONING: the peers agree: 17 * 7 = 119.\\n'\n\
             else\n\
             \tprintf 'SOLUTION: 119\\nREASONING: 17 * 7 = 119.\\n'\n\
             fi\n",
        )
        .expect("write the agent script");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod the script");
    }
    path
}

fn cli_team(s: &Settings, script: &Path, counter: &Path, latencies: &[u64]) -> String {
    let mut toml = debate_section(s, latencies.len());
    toml.push_str(&format!(
        "[security]\ncli_allowed_commands = [\"{}\"]\n\n",
        script.display()
    ));
    for (i, lat) in latencies.iter().enumerate() {
        toml.push_str(&format!(
            "[[agents]]\nid = \"c{i:02}\"\nbackend = \"cli\"\ncommand = \"{}\"\n\
             args = [\"{}.{:03}\", \"{}\", \"c{i:02}\"]\ncontract = \"freemad\"\n\n",
            script.display(),
            lat / 1000,
            lat % 1000,
            counter.display()
        ));
    }
    toml
}

/// `moot ask --json`'s summary, checked: success, every call asked, none skipped.
fn check_ask(
    what: &str,
    out: &Output,
    n: usize,
    rounds: usize,
    problems: &mut Vec<String>,
) -> Value {
    assert!(
        out.status.success(),
        "{what}: moot ask failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: moot ask --json: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let expected = (n * (rounds + 1)) as u64;
    if v["calls"] != expected || v["calls_skipped"] != 0 {
        problems.push(format!(
            "{what}: expected {expected} calls, none skipped: calls {}, skipped {}",
            v["calls"], v["calls_skipped"]
        ));
    }
    // `rounds`: each round's answers, one per agent.
    let grid = v["rounds"].as_array().cloned().unwrap_or_default();
    let full = grid.len() == rounds + 1
        && grid.iter().all(|r| {
            r.as_array()
                .is_some_and(|a| a.len() == n && a.iter().all(|x| !x.is_null()))
        });
    if !full {
        problems.push(format!(
            "{what}: expected an answer from each of {n} agents in each of {} rounds: {}",
            rounds + 1,
            v["rounds"]
        ));
    }
    v
}

/// `moot show RUN --format json` on `store`.
fn show(store: &Path, run: &str) -> Value {
    let out = Command::new(MOOT)
        .env("MOOT_STORE", store)
        .args(["show", run, "--format", "json"])
        .output()
        .expect("run moot show");
    assert!(
        out.status.success(),
        "moot show {run}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("moot show's JSON")
}

/// The stored calls, checked (one answered call per agent and round, each at least as long as
/// its injected latency), as rounds.
fn check_calls(
    what: &str,
    calls: &[Value],
    latencies: &[u64],
    rounds: usize,
    since: &dyn Fn(&Value) -> f64,
    problems: &mut Vec<String>,
) -> Vec<StoredRound> {
    let n = latencies.len();
    let mut by_round: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for c in calls {
        by_round
            .entry(c["round"].as_u64().unwrap_or(u64::MAX))
            .or_default()
            .push(c);
    }
    let expected: Vec<u64> = (0..=rounds as u64).collect();
    if by_round.keys().copied().collect::<Vec<_>>() != expected {
        problems.push(format!(
            "{what}: stored rounds {:?}, expected {expected:?}",
            by_round.keys().collect::<Vec<_>>()
        ));
    }
    let mut out = Vec::new();
    for (round, calls) in &by_round {
        let mut agents: Vec<u64> = calls.iter().filter_map(|c| c["agent"].as_u64()).collect();
        agents.sort_unstable();
        if agents != (0..n as u64).collect::<Vec<_>>() {
            problems.push(format!(
                "{what}: round {round} has calls of agents {agents:?}"
            ));
        }
        let mut r = StoredRound {
            start_ms: f64::MAX,
            end_ms: f64::MIN,
            ..StoredRound::default()
        };
        let mut slowest = (f64::MIN, f64::MIN);
        for c in calls {
            let agent = c["agent"].as_u64().unwrap_or(0) as usize;
            let injected = latencies.get(agent).copied().unwrap_or(0) as f64;
            let recorded = c["latency_ms"].as_f64().unwrap_or(f64::NAN);
            let reasked = !c["notes"]["reask"].is_null();
            if c["skipped"] != false
                || !c["error"].is_null()
                || c["response_text"].is_null()
                || c["answer"].is_null()
                || reasked
                || c["slot"] != "answer"
            {
                problems.push(format!(
                    "{what}: round {round}, agent {agent}: not a plain answered call (skipped {}, error {}, answer {}, re-asked {reasked}, slot {})",
                    c["skipped"], c["error"], c["answer"], c["slot"]
                ));
            }
            if recorded < injected {
                problems.push(format!(
                    "{what}: round {round}, agent {agent}: recorded {recorded} ms, under its injected {injected} ms"
                ));
            }
            let end = since(&c["recorded_at"]);
            if (injected, recorded) > slowest {
                slowest = (injected, recorded);
                r.slowest_start_ms = end - recorded;
                r.slowest_excess_ms = recorded - injected;
                r.slowest_end_ms = end;
            }
            r.injected_max_ms = r.injected_max_ms.max(injected);
            r.recorded_max_ms = r.recorded_max_ms.max(recorded);
            r.start_ms = r.start_ms.min(end - recorded);
            r.end_ms = r.end_ms.max(end);
            r.call_excess_ms.push(recorded - injected);
        }
        out.push(r);
    }
    out
}

/// The requests the fake server saw, checked (each model once per round, no repeats), as
/// rounds: an agent's k-th request is its round k, since rounds follow one another.
fn check_server(
    what: &str,
    fake: &FakeOpenAi,
    latencies: &[u64],
    rounds: usize,
    start: Instant,
    problems: &mut Vec<String>,
) -> Vec<ServedRound> {
    let seen = fake.seen();
    let expected = latencies.len() * (rounds + 1);
    if seen.len() != expected {
        problems.push(format!(
            "{what}: the server saw {} requests, expected {expected}",
            seen.len()
        ));
    }
    if fake.repeats() != 0 {
        problems.push(format!(
            "{what}: the server saw {} repeated requests",
            fake.repeats()
        ));
    }
    let mut per_agent = vec![0usize; latencies.len()];
    let mut served = vec![
        ServedRound {
            first_arrival_ms: f64::MAX,
            ..ServedRound::default()
        };
        rounds + 1
    ];
    for req in &seen {
        let Some(agent) = agent_of_model(&req.model).filter(|&a| a < latencies.len()) else {
            problems.push(format!("{what}: a request for model {:?}", req.model));
            continue;
        };
        let round = per_agent[agent];
        per_agent[agent] += 1;
        let Some(r) = served.get_mut(round) else {
            problems.push(format!(
                "{what}: agent {agent} asked more than once a round"
            ));
            continue;
        };
        let lat = latencies[agent] as f64;
        let at = ms(req.at.saturating_duration_since(start));
        r.first_arrival_ms = r.first_arrival_ms.min(at);
        r.last_arrival_ms = r.last_arrival_ms.max(at);
        r.last_reply_ms = r.last_reply_ms.max(at + lat);
        r.injected_max_ms = r.injected_max_ms.max(lat);
    }
    if let Some((agent, k)) = per_agent
        .iter()
        .enumerate()
        .find(|&(_, &k)| k != rounds + 1)
    {
        problems.push(format!(
            "{what}: agent {agent} was asked {k} times, expected {}",
            rounds + 1
        ));
    }
    served
}

/// The script's own count of its calls: each agent once per round.
fn check_counter(what: &str, counter: &Path, n: usize, rounds: usize, problems: &mut Vec<String>) {
    let text = fs::read_to_string(counter).unwrap_or_default();
    let mut per_agent: BTreeMap<&str, usize> = BTreeMap::new();
    for line in text.lines() {
        *per_agent.entry(line.trim()).or_default() += 1;
    }
    if per_agent.len() != n || per_agent.values().any(|&k| k != rounds + 1) {
        problems.push(format!(
            "{what}: the agents counted {} calls by {} agents, expected {} each of {n}: {per_agent:?}",
            text.lines().count(),
            per_agent.len(),
            rounds + 1
        ));
    }
}

fn report(s: &Settings, results: &[Measured], bare_ms: f64, script_ms: Option<f64>) {
    println!();
    println!("## Critical path: debate wall time / Σ rounds' slowest call");
    println!();
    println!(
        "- settings: `moot ask` under som (all-to-all), {} debate rounds after round 0, \
         agent i answers after {} + (i·37 mod {}) ms; max_concurrent_calls = min_agents = agents, \
         deadlines 600 s, retries off; SQLite store (fresh per run); median of {} repeats",
        s.rounds, s.base_ms, s.spread_ms, s.repeats
    );
    print_provenance("critical_path");
    println!("- `moot --version` process: {bare_ms:.1} ms");
    println!();
    println!(
        "Wall = the debate's own time in the store (run created_at → finished_at). \
         Process wall = `moot ask`'s process time minus its start-up and exit, measured by the \
         same `moot ask` with every latency 0 (its process time minus its debate's time)."
    );
    println!();
    println!(
        "| agents | backend | rounds | critical path ms | wall ms | ratio | overhead ms | \
         process wall ms | ratio | overhead ms |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for m in results {
        let cp = m.cp_ms();
        let wall = m.median(|r| r.debate_ms);
        let pwall = median(m.process_debate_ms());
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} | {:.3} | {:.0} |",
            m.agents,
            m.kind.name(),
            s.rounds,
            cp,
            wall,
            m.ratio_store(),
            wall - cp,
            pwall,
            m.ratio_process(),
            pwall - cp
        );
    }

    println!();
    println!("### Where the debate's time goes (store timestamps, ms, medians)");
    println!();
    println!(
        "Overhead = wall − critical path = before first call (run created → first call's \
         start) + Σ over rounds of: stagger (the slowest call's start after the round's first), \
         the slowest call's excess (its recorded latency − its injected one: HTTP or process \
         spawn), tail (round's last call recorded after the slowest) + gaps (a round's last call \
         recorded → the next round's first call: the last store write, planning the next round) \
         + after last call (→ run finished: decisions). Recorded critical path = Σ rounds' \
         slowest recorded `latency_ms`. Per-call excess: recorded − injected latency over all \
         calls of all repeats (median / max). Store timestamps are whole ms."
    );
    println!();
    println!(
        "| agents | backend | critical path | wall | overhead | before first call | stagger | \
         slowest call's excess | tail | gaps | after last call | recorded critical path | \
         per-call excess |"
    );
    println!("| ---: | --- |{}", " ---: |".repeat(11));
    for m in results {
        let excess: Vec<f64> = m
            .runs
            .iter()
            .flat_map(|r| {
                r.stored
                    .iter()
                    .flat_map(|x| x.call_excess_ms.iter().copied())
            })
            .collect();
        let sum = |f: fn(&StoredRound) -> f64| move |r: &Run| r.stored.iter().map(f).sum::<f64>();
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} / {:.0} |",
            m.agents,
            m.kind.name(),
            m.cp_ms(),
            m.median(|r| r.debate_ms),
            m.median(|r| r.debate_ms - r.injected_cp_ms),
            m.median(Run::before_first_call_ms),
            m.median(sum(StoredRound::stagger_ms)),
            m.median(sum(|x| x.slowest_excess_ms)),
            m.median(sum(StoredRound::tail_ms)),
            m.median(Run::gaps_ms),
            m.median(Run::after_last_call_ms),
            m.median(|r| r.recorded_cp_ms),
            median(excess.clone()),
            excess.iter().copied().fold(f64::NAN, f64::max)
        );
    }

    println!();
    println!("### The process (ms, medians)");
    println!();
    println!(
        "`wall_ms` is what `moot ask --json` reports. Start-up = spawn → run created; exit = run \
         finished → process exit. The zero-latency run is the same `moot ask` with every \
         latency 0, just before. CPU: the moot process and its agents' processes."
    );
    println!();
    println!(
        "| agents | backend | process | start-up | debate | `wall_ms` | exit | zero-latency \
         process | its debate | CPU | machine busy |"
    );
    println!("| ---: | --- |{}", " ---: |".repeat(9));
    for m in results {
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0}% |",
            m.agents,
            m.kind.name(),
            m.median(|r| r.process_ms),
            m.median(|r| r.created_ms),
            m.median(|r| r.debate_ms),
            m.median(|r| r.reported_ms),
            m.median(|r| r.process_ms - r.finished_ms),
            m.median_zero(|r| r.process_ms),
            m.median_zero(|r| r.debate_ms),
            m.median(|r| r.cpu_ms),
            100.0 * m.median(|r| r.machine_busy)
        );
    }
    if let Some(script_ms) = script_ms {
        println!();
        println!(
            "The cli agent's script alone (`agent.sh 0 …`, stdin empty, run by the bench one at a \
             time): {script_ms:.1} ms (median), of which `moot` has no part."
        );
    }

    let served: Vec<&Measured> = results.iter().filter(|m| m.kind == Kind::OpenAi).collect();
    if !served.is_empty() {
        println!();
        println!("### openai: the fake server's timeline (bench clock, ms, medians)");
        println!();
        println!(
            "Per round: spread = first → last request arrival; over = round span (first arrival → \
             last reply) − its slowest latency; gap = last reply → next round's first request."
        );
        println!();
        let mut head = "| agents | spawn → first request |".to_string();
        let mut rule = "| ---: | ---: |".to_string();
        for r in 0..=s.rounds {
            head.push_str(&format!(" r{r} spread | r{r} over |"));
            rule.push_str(" ---: | ---: |");
            if r < s.rounds {
                head.push_str(&format!(" gap r{r}→r{} |", r + 1));
                rule.push_str(" ---: |");
            }
        }
        head.push_str(" last reply → exit | first request → last reply | ratio |");
        rule.push_str(" ---: | ---: | ---: |");
        println!("{head}");
        println!("{rule}");
        for m in served {
            let mut row = format!(
                "| {} | {:.1} |",
                m.agents,
                m.median(|r| r.served.first().map_or(f64::NAN, |x| x.first_arrival_ms))
            );
            for i in 0..=s.rounds {
                let round = |r: &Run| r.served.get(i).cloned().unwrap_or_default();
                row.push_str(&format!(
                    " {:.1} | {:.1} |",
                    m.median(|r| {
                        let x = round(r);
                        x.last_arrival_ms - x.first_arrival_ms
                    }),
                    m.median(|r| {
                        let x = round(r);
                        x.last_reply_ms - x.first_arrival_ms - x.injected_max_ms
                    })
                ));
                if i < s.rounds {
                    row.push_str(&format!(
                        " {:.1} |",
                        m.median(|r| {
                            let next = r.served.get(i + 1).cloned().unwrap_or_default();
                            next.first_arrival_ms - round(r).last_reply_ms
                        })
                    ));
                }
            }
            let span = |r: &Run| {
                r.served.last().map_or(f64::NAN, |x| x.last_reply_ms)
                    - r.served.first().map_or(f64::NAN, |x| x.first_arrival_ms)
            };
            row.push_str(&format!(
                " {:.1} | {:.1} | {:.3} |",
                m.median(|r| r.process_ms - r.served.last().map_or(f64::NAN, |x| x.last_reply_ms)),
                m.median(span),
                m.median(|r| span(r) / r.injected_cp_ms)
            ));
            println!("{row}");
        }
    }

    println!();
    println!("### Goal: ratio ≤ {GOAL}");
    println!();
    for m in results {
        let verdict = |r: f64| if r <= GOAL { "meets" } else { "misses" };
        println!(
            "- {} × {}: wall/critical path {:.3} ({}), process wall/critical path {:.3} ({})",
            m.kind.name(),
            m.agents,
            m.ratio_store(),
            verdict(m.ratio_store()),
            m.ratio_process(),
            verdict(m.ratio_process())
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
