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
# Env: BUDGETS (default "1 2 4 8 16 32"), SC_BUDGETS and IESR_BUDGETS (each
#      method's own list, default BUDGETS), METHODS (default "greedy sc iesr"),
#      IESR (the binary; default: a release build of this checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [bench arguments...]" >&2; exit 2; }
out=$1
shift
budgets=${BUDGETS:-1 2 4 8 16 32}
sc_budgets=${SC_BUDGETS:-$budgets}
iesr_budgets=${IESR_BUDGETS:-$budgets}
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
# Budgets outermost (in increasing order over both lists), so a sweep cut
# short still compares every method.
all_budgets=$(printf '%s\n' $sc_budgets $iesr_budgets | sort -n -u)
first=$(printf '%s\n' $all_budgets | head -n 1)
listed() { [[ " $2 " == *" $1 "* ]]; } # listed BUDGET "LIST"
for budget in $all_budgets; do
  for method in $methods; do
    case $method in
      greedy) if [ "$budget" = "$first" ]; then run "$out/greedy-1" --method greedy; fi ;;
      sc) if listed "$budget" "$sc_budgets"; then run "$out/sc-$budget" --method sc --samples "$budget"; fi ;;
      iesr) if listed "$budget" "$iesr_budgets"; then run "$out/iesr-$budget" --method iesr --rollouts "$budget"; fi ;;
      *) echo "unknown method $method (greedy, sc or iesr)" >&2; exit 2 ;;
    esac
  done
done
dirs=()
for d in "$out"/*/; do [ -e "$d/summary.json" ] && dirs+=("$d"); done
"$IESR" report --out "$out" "${dirs[@]}"
