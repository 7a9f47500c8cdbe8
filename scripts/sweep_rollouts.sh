#!/usr/bin/env bash
# Rollout-budget sweep: runs `iesr bench` for every method at every budget
# (rollouts for iesr, samples for sc; greedy once), each in its own folder
# OUT/<method>-<budget>, resumably, then `iesr report` writes OUT/sweep.csv
# and the plots. Kill it at any time; running it again with the same
# arguments continues where it stopped.
#
# Usage: scripts/sweep_rollouts.sh OUT [bench arguments...]
#   e.g. scripts/sweep_rollouts.sh runs/sweep-logiccat30 --dataset logiccat \
#          --data-dir ../shared/datasets/logiccat --split mini500 \
#          --subset ../shared/datasets/subsets/logiccat_mini500_first100.json --limit 30
# Env: BUDGETS (default "1 2 4 8 16 32"), METHODS (default "greedy sc iesr"),
#      IESR (the binary; default: a release build of this checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [bench arguments...]" >&2; exit 2; }
out=$1
shift
budgets=${BUDGETS:-1 2 4 8 16 32}
methods=${METHODS:-greedy sc iesr}
if [ -z "${IESR:-}" ]; then
  cargo build --release --quiet
  IESR=./target/release/iesr
fi
mkdir -p "$out"

run() { # run DIR ARGS...
  local dir=$1
  shift
  local resume=()
  [ -e "$dir/predictions.jsonl" ] && resume=(--resume)
  echo "== $dir" >&2
  "$IESR" bench --out "$dir" "${resume[@]}" "$@" "${bench_args[@]}" --json > /dev/null
}

bench_args=("$@")
first=${budgets%% *}
# Budgets outermost, so a sweep cut short still compares every method.
for budget in $budgets; do
  for method in $methods; do
    case $method in
      greedy) if [ "$budget" = "$first" ]; then run "$out/greedy-1" --method greedy; fi ;;
      sc) run "$out/sc-$budget" --method sc --samples "$budget" ;;
      iesr) run "$out/iesr-$budget" --method iesr --rollouts "$budget" ;;
      *) echo "unknown method $method (greedy, sc or iesr)" >&2; exit 2 ;;
    esac
  done
done
dirs=()
for d in "$out"/*/; do [ -e "$d/summary.json" ] && dirs+=("$d"); done
"$IESR" report --out "$out" "${dirs[@]}"
