#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed time, starting from the small
# seed corpora in fuzz/corpus (new inputs go to a scratch folder, so the
# committed corpora stay small). A crash leaves its input in
# fuzz/artifacts/TARGET and makes the script exit 1.
#
# Usage: scripts/fuzz.sh [SECONDS per target, default 60] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(model_output guard cells table_file dataset_file gguf_header)
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  if cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 > "$log" 2>&1; then
    echo "$target: no crash in ${seconds} s; $(grep -Eo '#[0-9]+' "$log" | tail -1 | tr -d '#') runs"
  else
    echo "$target: FAILED (see fuzz/artifacts/$target)"
    tail -20 "$log"
    status=1
  fi
done
exit $status
