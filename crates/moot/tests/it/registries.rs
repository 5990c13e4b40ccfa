//! The registries — protocols, decision rules, backends, datasets, answer kinds — are the one
//! source of their names: `--help` lists them (through clap's possible values or help made from
//! the registry), the example configuration is held to them by moot-config's tests and here, and
//! the README's tables and lists are held to them here. Each test names the step that was missed.

use std::path::Path;

use assert_cmd::Command;
use moot_core::protocol::{build_protocol, ProtocolOptions, PROTOCOLS};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cells of each row of the README table whose header row is `header`.
fn table_rows(readme: &str, header: &str) -> Vec<Vec<String>> {
    let start = readme
        .find(header)
        .unwrap_or_else(|| panic!("the README has no table headed {header:?}"));
    readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            row.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The output of `moot ARGS`, which must succeed.
fn moot_stdout(args: &[&str]) -> String {
    let out = Command::cargo_bin("moot")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The backticked names of `text`, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_protocol_table_is_the_registry() {
    let readme = readme();
    let start = readme
        .find("| protocol | what it does | default rule |")
        .expect("the README has the protocol table");
    let rows: Vec<&str> = readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let mut listed = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (names, rule) = (backticked(cells[1]), cells[3]);
        for name in names {
            let protocol = build_protocol(&name, &ProtocolOptions::default())
                .unwrap_or_else(|e| panic!("README protocol {name}: {e}"));
            assert_eq!(protocol.default_rule(), rule, "default rule of {name}");
            listed.push(name);
        }
    }
    let registry: Vec<&str> = PROTOCOLS.iter().map(|p| p.name).collect();
    assert_eq!(
        listed, registry,
        "README's protocol table against PROTOCOLS"
    );
}

#[test]
fn the_readme_rule_list_is_the_registry() {
    let readme = readme();
    let start = readme
        .find("Decision rules:\n")
        .expect("the README lists the decision rules");
    let listed: Vec<String> = readme[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("- ") || l.starts_with("  "))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert_eq!(listed, moot_core::decision::rule_names());
}

#[test]
fn the_readme_backend_table_is_the_registry() {
    let rows = table_rows(&readme(), "| backend | what it is |");
    let listed: Vec<String> = rows.iter().flat_map(|r| backticked(&r[0])).collect();
    assert_eq!(
        listed,
        moot_config::backend_names(),
        "the README's backend table against moot_config::BACKENDS"
    );
    for (row, entry) in rows.iter().zip(moot_config::BACKENDS) {
        assert_eq!(
            backticked(&row[2]),
            entry.key_names(),
            "the keys of backend {} in the README's table",
            entry.name
        );
    }
}

#[test]
fn the_example_configuration_shows_an_agent_of_every_backend() {
    for b in moot_config::BACKENDS {
        let line = format!("backend = \"{}\"", b.name);
        assert!(
            moot_config::EXAMPLE
                .lines()
                .any(|l| l.trim_start_matches(['#', ' ']).starts_with(&line)),
            "crates/moot-config/src/example.toml has no agent with {line}"
        );
    }
}

#[test]
fn the_readme_dataset_table_is_the_registry() {
    let rows = table_rows(&readme(), "| dataset | what it is |");
    let (generic, builtin): (Vec<_>, Vec<_>) = rows
        .iter()
        .map(|r| backticked(&r[0]))
        .partition(|names| names.iter().any(|n| n.starts_with("jsonl:")));
    let registry: Vec<Vec<String>> = moot_eval::DATASETS
        .iter()
        .map(moot_eval::DatasetEntry::forms)
        .collect();
    assert_eq!(
        builtin, registry,
        "the README's dataset table (one row per dataset, its forms) against moot_eval::DATASETS"
    );
    assert_eq!(
        generic.len(),
        1,
        "the README's table has one row of generic files"
    );
    for names in builtin {
        for name in names.iter().filter(|n| !n.contains(char::is_uppercase)) {
            name.parse::<moot_eval::DatasetSpec>()
                .unwrap_or_else(|e| panic!("README dataset {name}: {e}"));
        }
    }
}

#[test]
fn the_readme_answer_kinds_are_the_registry() {
    let readme = readme();
    let start = readme
        .find("Answer kinds:")
        .expect("the README lists the answer kinds");
    let paragraph = readme[start..].split("\n\n").next().unwrap_or_default();
    let listed: Vec<String> = backticked(paragraph)
        .into_iter()
        .filter(|name| !name.starts_with("--"))
        .collect();
    assert_eq!(listed, moot_config::AnswerSetting::names());
}

#[test]
fn help_lists_every_registered_name() {
    let help = moot_stdout;
    let ask = help(&["ask", "--help"]);
    for p in PROTOCOLS {
        assert!(ask.contains(p.name), "ask --help lacks {}", p.name);
    }
    for a in moot_config::AnswerSetting::names() {
        assert!(ask.contains(a), "ask --help lacks {a}");
    }
    let bench = help(&["bench", "--help"]);
    assert!(PROTOCOLS.iter().all(|p| bench.contains(p.name)));
    let bench_short = help(&["bench", "-h"]);
    for d in moot_eval::DATASETS {
        assert!(
            bench.contains(&d.usage()),
            "bench --help lacks {}",
            d.usage()
        );
        assert!(
            bench.contains(d.summary),
            "bench --help lacks {}'s summary",
            d.name
        );
        assert!(
            bench_short.contains(&d.usage()),
            "bench -h lacks {}",
            d.usage()
        );
    }
    let health = help(&["health", "--help"]);
    for b in moot_config::backend_names() {
        assert!(
            health.contains(&format!("  {b} ")),
            "health --help lacks backend {b}"
        );
    }
    let decide = help(&["decide", "--help"]);
    for r in moot_core::decision::rule_names() {
        assert!(decide.contains(r), "decide --help lacks {r}");
    }
    let example = help(&["config", "example"]);
    assert_eq!(example, moot_config::EXAMPLE);
}
