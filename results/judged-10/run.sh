#!/usr/bin/env bash
# The deciding-agent benchmark of results/README.md: the team of results/judged-10.toml (three
# debaters on the embedded default model, plus a judge, an aggregator and a chairman on the same
# model), 10 GSM8K test questions (--limit 10 --seed 41), one debate round. Resumable: run it
# again with the same store and it continues where it stopped.
#   results/judged-10/run.sh            # store: results/judged-10.db (not committed)
# One store, one debate at a time, so round 0 is generated once per question and shared by
# every protocol through the request cache (every protocol asks round 0 the same way):
#   judged-10             cot-sc, judge, moa and council;
#   judged-10-judge       judge alone, every call answered from the request cache (the same
#                         debates as judged-10's judge), so that the forks below fork judge only;
#   judged-10-judge-null  a null fork at round 1: the debate round and the judge asked afresh,
#                         the control for the intervention below;
#   judged-10-judge-wrong agent 1's round-0 answer replaced by the item's defined wrong answer
#                         (the most common wrong round-0 answer, else gold + 1), then the debate
#                         round and the judge asked anew.
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
export MOOT_STORE=${MOOT_STORE:-results/judged-10.db}
common=(--dataset gsm8k --limit 10 --seed 41 --concurrency "${CONCURRENCY:-1}" --config results/judged-10.toml)
"$moot" bench "${common[@]}" --rounds 1 --run judged-10 --protocol cot-sc,judge,moa,council
"$moot" bench "${common[@]}" --rounds 1 --run judged-10-judge --protocol judge
"$moot" bench --fork-of judged-10-judge --round 1 --concurrency "${CONCURRENCY:-1}" --run judged-10-judge-null
"$moot" bench --fork-of judged-10-judge --round 0 --agent 1 --say-wrong --concurrency "${CONCURRENCY:-1}" --run judged-10-judge-wrong
"$moot" report judged-10 --out results/judged-10
"$moot" report judged-10-judge-null > results/judged-10/fork-null.md
"$moot" report judged-10-judge-wrong > results/judged-10/fork-wrong.md
