#!/usr/bin/env bash
# The controls of issue 35 on simulated debates: `moot bench` on 200 GSM8K test questions with
# cot-sc, som and free-mad-n (3 agents, 2 rounds), then the cot-sc arm `--sc-at-budget` sizes for
# the costliest debate, reported together into results/controls-sim/. Run from the repository
# root (needs the benchmark data: MOOT_DATA_DIR, default ../shared/data); takes seconds.
#   experiments/controls/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
out=results/controls-sim
store=$(mktemp -d)/controls.db
export MOOT_STORE=$store
common=(--dataset gsm8k --limit 200 --seed 41 --protocol cot-sc,som,free-mad-n --agents 3 --rounds 2 --sc-at-budget)

# name, folder, then the team's arguments
run() {
  local name=$1 dir=$2; shift 2
  # The arm is the benchmark NAME-scK, K chosen from the stored debates: the report's second.
  local arm
  arm=$("$moot" bench "${common[@]}" "$@" --run "$name" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["benches"][1]["name"])')
  "$moot" report "$name" "$arm" --out "$out/$dir"
  "$moot" report "$name" "$arm" --format json --out "$out/$dir"
  echo "$name and $arm: $out/$dir"
}

run sim-team homogeneous --sim --config experiments/controls/budget.toml
run mixed-team mixed --config experiments/controls/mixed.toml
