#!/usr/bin/env bash
# The research simulations of issue 5: each runs `moot bench` with simulated agents on 1000
# GSM8K questions and writes its report to results/sim/. Run from the repository root:
#   experiments/sim/run.sh
# Needs the benchmark data (MOOT_DATA_DIR, default ../shared/data) and a release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=target/release/moot
[[ -x $moot ]] || cargo build --release -p moot
out=results/sim
mkdir -p "$out"
store=$(mktemp -d)/sim.db
export MOOT_STORE=$store
common=(--dataset gsm8k --limit 1000 --seed 41 --concurrency 8)

run() { # name, then bench arguments
  local name=$1; shift
  { echo "\$ moot bench ${common[*]} $*"; echo; "$moot" bench "${common[@]}" --run "$name" "$@"; } > "$out/$name.md"
  echo "wrote $out/$name.md"
}

run masking --config experiments/sim/masking.toml --protocol som,mad-m2
run masking-objective --config experiments/sim/masking.toml --protocol som,mad-m2 -o masking=objective
run madc-consistency-last --config experiments/sim/madc.toml --protocol som,madc
run madc-random --config experiments/sim/madc.toml --protocol som,madc -o ordering=random
run madc-truth-last --config experiments/sim/madc.toml --protocol madc -o ordering=truth-last
run madc-truth-first --config experiments/sim/madc.toml --protocol madc -o ordering=truth-first
run svr --config experiments/sim/svr.toml --protocol cot-sc,som,svr-mad
run conformity --config experiments/sim/conformity.toml --protocol free-mad-c,free-mad-n
run cut-off --config experiments/sim/conformity.toml --protocol free-mad-c,free-mad-n -o faults.cut_off=0.5
