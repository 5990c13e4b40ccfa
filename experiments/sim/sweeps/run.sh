#!/usr/bin/env bash
# Every claim sweep of results/sim/README.md, one `moot sweep` each, written to results/sim/sweeps/
# (NAME.md, NAME.csv, NAME.svg). Run from the repository root; pass sweep names to run only those:
#   experiments/sim/sweeps/run.sh [free-mad-score anti-vs-conform …]
set -euo pipefail
cd "$(dirname "$0")/../../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  names=(free-mad-score free-mad-team anti-vs-conform cut-off malicious masking madc svr qwen-like
    judge-strength judge-conformity)
fi
for name in "${names[@]}"; do
  start=$SECONDS
  "$moot" sweep "experiments/sim/sweeps/$name.toml" --out results/sim/sweeps
  echo "$name: $((SECONDS - start)) s"
done
