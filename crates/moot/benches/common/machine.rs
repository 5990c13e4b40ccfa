//! What the benchmarks print about the machine and the run (commit, CPU, settings) and the CPU
//! time they read from `/proc`: shared by the benchmarks of this crate.

#![allow(dead_code)]

use std::fs;
use std::process::Command;

pub fn env_overrides() -> String {
    let set: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("MOOT_BENCH_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!(" with {}", set.join(" "))
    }
}

pub fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

pub fn commit() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let head = command_line("git", &["-C", root, "rev-parse", "--short", "HEAD"]);
    let dirty = !command_line(
        "git",
        &["-C", root, "status", "--porcelain", "--untracked-files=no"],
    )
    .is_empty();
    if dirty {
        format!("{head} with uncommitted changes")
    } else {
        head
    }
}

pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

pub fn clock_ticks() -> f64 {
    command_line("getconf", &["CLK_TCK"])
        .parse()
        .unwrap_or(100.0)
}

/// The fields of `/proc/PID/stat`, from field 2 (the command name, without its parentheses) on.
pub fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut fields = vec![comm];
    fields.extend(rest.split_whitespace().map(str::to_string));
    Some(fields)
}

/// Field `n` (numbered from 1, as in proc(5)) of `stat_fields`, as a number.
pub fn field(fields: &[String], n: usize) -> u64 {
    fields.get(n - 2).and_then(|f| f.parse().ok()).unwrap_or(0)
}

/// CPU seconds of this process's children that have been waited for (cutime + cstime).
pub fn children_cpu(clk_tck: f64) -> f64 {
    let f = stat_fields("self").unwrap_or_default();
    (field(&f, 16) + field(&f, 17)) as f64 / clk_tck
}

/// CPU seconds of this process itself (the fake server's threads and the bench).
pub fn self_cpu(clk_tck: f64) -> f64 {
    let f = stat_fields("self").unwrap_or_default();
    (field(&f, 14) + field(&f, 15)) as f64 / clk_tck
}

/// Every process: its pid and `stat_fields`.
pub fn processes() -> Vec<(String, Vec<String>)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let name = e.ok()?.file_name().into_string().ok()?;
        name.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
        Some((name.clone(), stat_fields(&name)?))
    })
    .collect()
}

/// The machine's busy and total CPU ticks so far (all cores), from `/proc/stat`.
pub fn machine_ticks() -> (u64, u64) {
    let stat = fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let v: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    let idle = get(3) + get(4);
    let busy = get(0) + get(1) + get(2) + get(5) + get(6) + get(7);
    (busy, busy + idle)
}

/// The bullet lines every benchmark's report opens with: the command that reproduces it (with
/// the `MOOT_BENCH_*` settings in force), the build, the commit, the machine and the date.
pub fn print_provenance(bench: &str) {
    let profile = if cfg!(debug_assertions) {
        " --profile dev"
    } else {
        ""
    };
    println!(
        "- command: `cargo bench -p moot --bench {bench}{profile}`{}",
        env_overrides()
    );
    println!(
        "- build: {}",
        if cfg!(debug_assertions) {
            "dev profile (workspace crates unoptimised, dependencies opt-level 1)"
        } else {
            "optimised"
        }
    );
    println!("- commit: {}", commit());
    println!("- machine: {}, {} cores visible", cpu_model(), cores());
    println!(
        "- date: {}",
        command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    );
}
