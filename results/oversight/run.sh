#!/usr/bin/env bash
# The oversight result of issue 46 (results/oversight/README.md). On the embedded default model,
# 10 of the 12 shipped passage questions (datasets/passages, --limit 10 --seed 41):
#   oversight-blind  the model alone, without the passage (what a judge knows by itself);
#   oversight-10     the model alone reading the passage (cot), consultancy and an assigned
#                    debate, where the debaters read the passage and the judge sees only their
#                    checked quotes (hidden evidence); one argument round.
# Both benchmarks share the item ids, so one report pairs them. Then the simulated sweep of judge
# accuracy against debater strength, and its plot. Resumable: the same command continues.
#   results/oversight/run.sh            # store: results/oversight.db (not committed)
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
export MOOT_STORE=${MOOT_STORE:-results/oversight.db}
file=datasets/passages/passages.jsonl
common=(--limit 10 --seed 41 --rounds 1 --concurrency 1 --config results/oversight.toml)
"$moot" bench "${common[@]}" --dataset "jsonl:$file?kind=choice&options=choices&id=id" \
  --protocol cot --run oversight-blind
"$moot" bench "${common[@]}" --dataset "jsonl:$file?kind=choice&options=choices&id=id&context=passage" \
  --protocol cot,consultancy,assigned --run oversight-10
"$moot" report oversight-blind oversight-10 --out results/oversight
"$moot" sweep experiments/sim/sweeps/oversight.toml --out results/oversight
python3 results/oversight/plot.py results/oversight/oversight.csv results/oversight/judge-vs-debaters.svg
