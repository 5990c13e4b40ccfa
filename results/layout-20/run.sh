#!/usr/bin/env bash
# The prompt-layout experiment of issue 44 (results/README.md): free-mad-n and som, one round,
# three agents on the embedded default model, on the same 20 GSM8K test questions (--limit 20
# --seed 41, the first 20 of results/gsm8k-30's draw), once in the papers' layout (the default)
# and once shared-first; then the report, whose paired table gives each protocol's two layouts'
# discordant items and the exact McNemar p-value. Resumable, as results/gsm8k-30/run.sh is.
#   results/layout-20/run.sh            # store: results/layout-20.db (not committed)
# One store: round 0 has no peers' answers, so both layouts ask it alike and the request cache
# answers the second; the layouts differ from round 1 on, which is what is compared.
set -euo pipefail
cd "$(dirname "$0")/../.."
moot=${MOOT:-target/release/moot}
[[ -x $moot ]] || cargo build --release -p moot
export MOOT_STORE=${MOOT_STORE:-results/layout-20.db}
common=(--dataset gsm8k --limit 20 --seed 41 --rounds 1 --concurrency 1 --protocol free-mad-n,som)
"$moot" bench "${common[@]}" --config results/gsm8k-30.toml --run layout-20-papers
"$moot" bench "${common[@]}" --config results/layout-shared-first.toml --run layout-20-shared
"$moot" report layout-20-papers layout-20-shared --out results/layout-20
