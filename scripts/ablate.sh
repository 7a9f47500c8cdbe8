#!/usr/bin/env bash
# Ablations of the tree search: the full method and the method with each part
# switched off, at one rollout budget, each in its own folder OUT/<name>,
# resumably; then `iesr report` writes OUT/runs.csv and the plots and prints
# the table. Running it again with the same arguments continues where it
# stopped.
#
# Usage: scripts/ablate.sh OUT [bench arguments...]
#   e.g. scripts/ablate.sh runs/ablate-spider30 --dataset spider \
#          --data-dir ../shared/datasets/spider \
#          --subset ../shared/datasets/subsets/spider_dev_random100.json --limit 30
# The guided search by default spends every rollout on samples, so the parts
# of the tree search (stage 1, the reasoning actions, the discriminator) are
# ablated with --reasoning-fallback on, where they run; `reasoning-fallback`
# is that configuration with nothing switched off.
# Env: ROLLOUTS (default 8), ABLATIONS (default: the paper's search and every
#      ablation flag, as folder names below), IESR (the binary; default: a
#      release build here).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [bench arguments...]" >&2; exit 2; }
out=$1
shift
rollouts=${ROLLOUTS:-8}
ablations=${ABLATIONS:-full reasoning-fallback paper no-understanding no-verification no-compression no-embedding no-a0 no-a1 no-a2 no-a3 no-a4 no-a6 no-discriminator}
if [ -z "${IESR:-}" ]; then
  cargo build --release --quiet
  IESR=./target/release/iesr
fi
mkdir -p "$out"

for name in $ablations; do
  case $name in
    full) flags=() ;;
    reasoning-fallback) flags=(--reasoning-fallback) ;;
    paper) flags=(--search paper) ;;
    no-a[0-9]) flags=(--reasoning-fallback --disable-action "A${name#no-a}") ;;
    no-*) flags=(--reasoning-fallback "--$name") ;;
    *) echo "unknown ablation $name (full, reasoning-fallback, paper, no-<part> or no-a<N>)" >&2; exit 2 ;;
  esac
  dir=$out/$name
  resume=()
  [ -e "$dir/predictions.jsonl" ] && resume=(--resume)
  echo "== $dir" >&2
  "$IESR" bench --out "$dir" "${resume[@]}" --method iesr --rollouts "$rollouts" \
    "${flags[@]}" "$@" --json > /dev/null
done
dirs=()
for name in $ablations; do dirs+=("$out/$name"); done
"$IESR" report --out "$out" "${dirs[@]}"
