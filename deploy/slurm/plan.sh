#!/usr/bin/env bash
# Records a benchmark's plan in the shared store, once, from any machine that has the benchmark
# data and the team configuration (a login node, a laptop): the drawn items × the protocols and the
# configuration they run with. Workers (moot-work.sbatch, Kubernetes, `ssh host moot work NAME`)
# then need the store URL, the model keys and the same team configuration (--config: a stored
# plan grants no agent, server or key).
#
#   deploy/slurm/plan.sh NAME                       # gsm8k, free-mad-n and som, 200 items, team.toml
#   deploy/slurm/plan.sh NAME --dataset math500 --protocol som,mad-m2 --limit 100 --config team.toml
#
# Any `moot bench` flags may follow NAME (with none, the defaults shown above); --name NAME and
# --detach are added. Recording the same plan again is harmless. Needs MOOT_STORE (a postgres://
# URL; or MOOT_ENV_FILE, a chmod-600 file exporting it) and `moot` on PATH.
set -euo pipefail

fail() {
    echo "plan: $*" >&2
    exit 2
}

[[ $# -ge 1 && -n "$1" && "$1" != -* ]] || fail "usage: $0 NAME [moot bench flags…]"
bench="$1"
shift

if [[ -n "${MOOT_ENV_FILE:-}" ]]; then
    [[ -r "$MOOT_ENV_FILE" ]] || fail "MOOT_ENV_FILE=$MOOT_ENV_FILE is not a readable file"
    # shellcheck source=/dev/null
    source "$MOOT_ENV_FILE"
fi
[[ -n "${MOOT_STORE:-}" ]] ||
    fail "MOOT_STORE is not set: export MOOT_STORE=postgres://USER:PASSWORD@HOST:5432/DB"
case "$MOOT_STORE" in
postgres://* | postgresql://*) ;;
*) fail "MOOT_STORE must be a postgres:// or postgresql:// URL: workers on other machines must reach it" ;;
esac
command -v moot >/dev/null 2>&1 || fail "moot is not on PATH"

if [[ $# -eq 0 ]]; then
    set -- --dataset gsm8k --protocol free-mad-n,som --limit 200 --config team.toml
fi
moot bench "$@" --name "$bench" --detach

here="$(cd "$(dirname "$0")" && pwd)"
cat >&2 <<NEXT
plan: recorded benchmark ${bench}. Start workers, e.g.:
  sbatch --export=ALL,BENCH=${bench} ${here}/moot-work.sbatch
and watch them with:
  moot bench status ${bench}
NEXT
