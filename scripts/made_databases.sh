#!/usr/bin/env bash
# One benchmark run over every database set the scripts of this folder make
# alone (each `scripts/X.py OUT_DIR` that uses made_database.py): the sets
# are made anew in OUT/data/X, each run goes to OUT/X, resumably, and
# `iesr report` then prints them together. Kill it at any time; running it
# again with the same arguments continues where it stopped.
#
# Usage: scripts/made_databases.sh OUT [bench arguments...]
#   e.g. scripts/made_databases.sh runs/made-greedy \
#          --model qwen2.5-coder-1.5b-instruct --method greedy
# Env: IESR (the binary; default: a release build of this checkout),
#      SETS (default: every such script, by name without .py).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [bench arguments...]" >&2; exit 2; }
out=$1
shift
if [ -z "${IESR:-}" ]; then
  cargo build --release --quiet
  IESR=./target/release/iesr
fi
if [ -z "${SETS:-}" ]; then
  SETS=$(grep -l 'out_dir(__doc__)' scripts/*.py | grep -v made_database.py | xargs -n1 basename | sed 's/\.py$//' | tr '\n' ' ')
fi

runs=()
for set in $SETS; do
  data=$out/data/$set
  [ -e "$data/dev.json" ] || python3 "scripts/$set.py" "$data" > /dev/null
  resume=()
  [ -e "$out/$set/predictions.jsonl" ] && resume=(--resume)
  echo "== $set" >&2
  "$IESR" bench --dataset spider --data-dir "$data" --out "$out/$set" "${resume[@]}" "$@" \
    --json > /dev/null
  runs+=("$out/$set")
done
rm -rf scripts/__pycache__
"$IESR" report "${runs[@]}"
