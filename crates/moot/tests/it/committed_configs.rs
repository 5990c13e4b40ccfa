//! Every configuration committed beside results (`experiments/sim/*.toml`, `results/*.toml`) or
//! as an example the README names (`examples/*.toml`) passes `moot config check`, so the settings
//! behind committed results and documented commands cannot rot unnoticed.

use crate::common;

use std::path::Path;

use common::Env;

#[test]
fn every_committed_configuration_checks() {
    let env = Env::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = Vec::new();
    for dir in ["experiments/sim", "results", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).expect(dir) {
            let path = entry.expect("a directory entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            env.stdout(&["config", "check", path.to_str().unwrap()]);
            checked.push(path);
        }
    }
    assert!(checked.len() >= 7, "only {checked:?}");
}
