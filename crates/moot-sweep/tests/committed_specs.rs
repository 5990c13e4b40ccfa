//! Every sweep spec committed under `experiments/sim/sweeps/` still reads and plans, so the
//! configurations behind committed results cannot rot unnoticed.

use std::path::Path;

use moot_sweep::SweepSpec;

#[test]
fn every_committed_sweep_spec_reads_and_plans() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sim/sweeps");
    let mut read = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("experiments/sim/sweeps") {
        let path = entry.expect("a directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let spec = SweepSpec::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        spec.plan(None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        read.push(path);
    }
    assert!(read.len() >= 10, "only {read:?}");
}
