#!/usr/bin/env bash
# A bench run killed (SIGKILL) at random points and resumed each time must
# end with the same predictions as an uninterrupted run.
#
# Usage: scripts/kill_resume.sh OUT [bench arguments...]
#   e.g. scripts/kill_resume.sh runs/kill --dataset spider --db concert_singer \
#          --data-dir ../shared/datasets/spider --method greedy --limit 8
# Env: KILLS (default 20), SEED (for the delays, default 1), IESR (the
#      binary, default target/release/iesr). Kill k waits until k/(KILLS+1)
#      of the questions are kept, then a random delay of up to one and a
#      half questions' time (the uninterrupted run's mean), so the kills
#      spread over the whole run and land in model loading, decoding,
#      execution and writing alike.
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
kept() { cat "$1/predictions.jsonl" 2>/dev/null | grep -c . || true; }

started=$(date +%s%N)
"$iesr" bench "$@" --out "$out/whole" > /dev/null
total=$(kept "$out/whole")
# The longest delay after the target is reached, in tenths of a second.
max_delay=$(( ($(date +%s%N) - started) * 15 / total / 1000000000 + 1 ))

for kill in $(seq 1 "$kills"); do
  target=$(( kill * total / (kills + 1) ))
  delay=$(( RANDOM % max_delay + 1 ))
  "$iesr" bench "$@" --out "$out/killed" --resume > /dev/null 2>&1 &
  pid=$!
  while [ "$(kept "$out/killed")" -lt "$target" ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
  done
  sleep "$(printf '%d.%d' $((delay / 10)) $((delay % 10)))"
  if kill -KILL "$pid" 2>/dev/null; then state=killed; else state="had ended"; fi
  wait "$pid" 2>/dev/null || true
  echo "kill $kill ${delay}00 ms after $target questions: $state, $(kept "$out/killed") kept"
done
"$iesr" bench "$@" --out "$out/killed" --resume > /dev/null

if diff <(sorted "$out/whole/predictions.jsonl") <(sorted "$out/killed/predictions.jsonl"); then
  echo "same predictions after $kills kills: $total questions"
else
  echo "predictions differ after $kills kills" >&2
  exit 1
fi
