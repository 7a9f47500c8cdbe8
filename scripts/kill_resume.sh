#!/usr/bin/env bash
# A bench run killed (SIGKILL) at random points and resumed each time must
# end with the same predictions as an uninterrupted run.
#
# Usage: scripts/kill_resume.sh OUT [bench arguments...]
#   e.g. scripts/kill_resume.sh runs/kill --dataset spider --db concert_singer \
#          --data-dir ../shared/datasets/spider --method greedy --limit 8
# Env: KILLS (default 20), SEED (for the delays, default 1), IESR (the
#      binary, default target/release/iesr). Each kill comes after a random
#      delay of up to three times the uninterrupted run's time over KILLS,
#      so kills land in model loading, decoding, execution and writing
#      alike, and the run advances between them but is still unfinished at
#      most kills.
# Prints one line per kill and exits 1 if the predictions differ.
set -euo pipefail
out=${1:?usage: scripts/kill_resume.sh OUT [bench arguments...]}
shift
iesr=${IESR:-target/release/iesr}
kills=${KILLS:-20}
RANDOM=${SEED:-1}

sorted() { python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in sorted(rows, key=lambda r: r["question_id"]): print(r["question_id"], r["sql"])' "$1"; }

rm -rf "$out/whole" "$out/killed"
started=$(date +%s%N)
"$iesr" bench "$@" --out "$out/whole" > /dev/null
# The longest delay, in tenths of a second.
max_delay=$(( ($(date +%s%N) - started) * 3 / kills / 100000000 + 1 ))

for kill in $(seq 1 "$kills"); do
  delay=$(( RANDOM % max_delay + 1 ))
  "$iesr" bench "$@" --out "$out/killed" --resume > /dev/null 2>&1 &
  pid=$!
  sleep "$(printf '%d.%d' $((delay / 10)) $((delay % 10)))"
  if kill -KILL "$pid" 2>/dev/null; then state=killed; else state="had ended"; fi
  wait "$pid" 2>/dev/null || true
  kept=$(cat "$out/killed/predictions.jsonl" 2>/dev/null | grep -c . || true)
  echo "kill $kill after ${delay}00 ms: $state, $kept questions kept"
done
"$iesr" bench "$@" --out "$out/killed" --resume > /dev/null

if diff <(sorted "$out/whole/predictions.jsonl") <(sorted "$out/killed/predictions.jsonl"); then
  echo "same predictions after $kills kills: $(grep -c . "$out/whole/predictions.jsonl") questions"
else
  echo "predictions differ after $kills kills" >&2
  exit 1
fi
