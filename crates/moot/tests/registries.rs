//! The registries — protocols, decision rules, backends, answer kinds — are the one source of
//! their names: `--help` lists them through clap's possible values, the example configuration is
//! held to them by moot-config's tests, and the README's tables and lists are held to them here.

use std::path::Path;

use assert_cmd::Command;
use moot_core::protocol::{build_protocol, ProtocolOptions, PROTOCOLS};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
fn the_readme_backend_list_is_the_registry() {
    let readme = readme();
    let start = readme
        .find("Backends per agent:")
        .expect("the README lists the backends");
    let paragraph = readme[start..].split("\n\n").next().unwrap_or_default();
    // The paragraph names the backends first, then other things.
    let listed: Vec<String> = backticked(paragraph)
        .into_iter()
        .take(moot_config::BACKENDS.len())
        .collect();
    assert_eq!(listed, moot_config::backend_names());
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
    let help = |args: &[&str]| {
        let out = Command::cargo_bin("moot")
            .unwrap()
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let ask = help(&["ask", "--help"]);
    for p in PROTOCOLS {
        assert!(ask.contains(p.name), "ask --help lacks {}", p.name);
    }
    for a in moot_config::AnswerSetting::names() {
        assert!(ask.contains(a), "ask --help lacks {a}");
    }
    let bench = help(&["bench", "--help"]);
    assert!(PROTOCOLS.iter().all(|p| bench.contains(p.name)));
    let decide = help(&["decide", "--help"]);
    for r in moot_core::decision::rule_names() {
        assert!(decide.contains(r), "decide --help lacks {r}");
    }
    let example = help(&["config", "example"]);
    assert_eq!(example, moot_config::EXAMPLE);
}
