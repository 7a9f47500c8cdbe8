#!/usr/bin/env bash
# Runs `iesr bench-llm` and llama.cpp (llama-cpp-python) on the same GGUF,
# prompt, length and threads, one after the other, and prints the ratios.
#
# Usage: scripts/bench_vs_llamacpp.sh [PROMPT_TOKENS] [GEN_TOKENS]
# Env: IESR_MODEL (a GGUF path; default: the pulled default model), THREADS (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
prompt=${1:-1500}
gen=${2:-256}
threads=${THREADS:-$(nproc)}
cargo build --release --quiet
model=${IESR_MODEL:-$(./target/release/iesr model pull 2>/dev/null)}
python3 -c "import llama_cpp" 2>/dev/null || python3 -m pip install --quiet 'llama-cpp-python==0.3.36'

ours=$(RAYON_NUM_THREADS=$threads ./target/release/iesr bench-llm --model "$model" \
  --prompt-tokens "$prompt" --gen-tokens "$gen" --batch 1,4,8 --json)
theirs=$(python3 scripts/llamacpp_bench.py "$model" "$prompt" "$gen" "$threads" 2>/dev/null | tail -n 1)

python3 - "$ours" "$theirs" <<'PY'
import json, sys
report, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ours = report["backends"][0]
print(f"{'measure':32} {'iesr (candle)':>14} {'llama.cpp':>10} {'ratio':>7}")
for key, label in [("prefill_tok_s", "prefill tok/s"), ("decode_tok_s", "decode tok/s (batch 1)")]:
    print(f"{label:32} {ours[key]:14.1f} {theirs[key]:10.1f} {ours[key] / theirs[key]:7.2f}")
for b in ours["batches"]:
    print(f"{'decode batch %d aggregate tok/s' % b['batch']:32} {b['aggregate_tok_s']:14.1f} {'':>10} {'':>7}")
print(f"{'first token cold / cached (s)':32} {ours['cold_first_token_s']:7.2f} / {ours['cached_first_token_s']:.2f} ({ours['cached_prefix_speedup']:.0f}x)")
print(f"{'peak RSS (MB)':32} {report['peak_rss_mb']:14.0f}")
print(f"threads {report['threads']}, prompt {ours['prompt_tokens']} tokens (llama.cpp {theirs['prompt_tokens']}), {report['gen_tokens']} generated")
PY
