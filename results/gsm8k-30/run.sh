#!/usr/bin/env bash
# The GSM8K real-model benchmark of results/README.md: three agents on the embedded default model,
# 30 GSM8K test questions (--limit 30 --seed 41), every protocol, then the report. Resumable:
# run it again with the same store and it continues where it stopped (finished debates are read
# back, and the request cache answers any call already made).
#   results/gsm8k-30/run.sh            # store: results/gsm8k-30.db (not committed)
# Four benchmarks share the store, so round 0 is generated once per question and reused by every
# debating protocol through the request cache, and som's first debate round is free-mad-c's (one
# debate at a time: two debates of one item started together would each sample their own round
# 0, as the first 21 questions of gsm8k-30-beta did at CONCURRENCY=2):
#   gsm8k-30-beta     FREE-MAD under its three prompts (free-mad-n, free-mad-c, free-mad-neutral),
#                     one round: the real-model conformity measurement of results/sim/beta-fit.md,
#                     first because it is the smallest;
#   gsm8k-30-rest-r1  cot, cot-sc and the other one-round debates;
#   gsm8k-30-som-r2   som with two rounds;
#   gsm8k-30-fmn4-r1  free-mad-n with four agents, one round: FREE-MAD's equal-budget row, whose
#                     output tokens match som's two rounds with three agents.
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
export MOOT_STORE=${MOOT_STORE:-results/gsm8k-30.db}
common=(--dataset gsm8k --limit 30 --seed 41 --concurrency "${CONCURRENCY:-1}" --config results/gsm8k-30.toml)
"$moot" bench "${common[@]}" --rounds 1 --run gsm8k-30-beta --protocol free-mad-n,free-mad-c,free-mad-neutral
"$moot" bench "${common[@]}" --rounds 1 --run gsm8k-30-rest-r1 --protocol cot,cot-sc,mad-m2,svr-mad
"$moot" bench "${common[@]}" --rounds 2 --run gsm8k-30-som-r2 --protocol som
"$moot" bench "${common[@]}" --rounds 1 --agents 4 --run gsm8k-30-fmn4-r1 --protocol free-mad-n
"$moot" report gsm8k-30-beta gsm8k-30-rest-r1 gsm8k-30-som-r2 gsm8k-30-fmn4-r1 --out results/gsm8k-30
