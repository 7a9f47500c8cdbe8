#!/usr/bin/env bash
# The GPU figures of docs/performance.md, in one run on a machine with an
# NVIDIA GPU, PyTorch and transformers (nothing is downloaded):
#
#   scripts/gpu_figures.sh KIT OUT
#
# KIT holds `iesr` (a `--features cuda` build: scripts/cuda_toolkit.sh),
# Qwen2.5's tokenizer.json and tokenizer_config.json (from the hub, or
# written from a Qwen2.5 GGUF file's metadata with the tokenizers crate's
# `Tokenizer::from_gguf` of candle), spider/ (Spider's dev.json and
# database/) and spider_dev_random100.json; where a file limit applies,
# carry the stripped binary xz-compressed (about 14 MB) and unpack it
# first. OUT receives gpu.txt, hf_generate.json,
# iesr_bench_llm.json, and for each search workload its predictions and
# wall seconds. The model is a Qwen2.5-7B-shaped checkpoint with random
# bf16 weights (scripts/hf_generate_bench.py), so every completion runs to
# its token limit: the workloads measure throughput, not accuracy.
set -uo pipefail
kit=${1:?usage: scripts/gpu_figures.sh KIT OUT}
out=${2:?usage: scripts/gpu_figures.sh KIT OUT}
model=/tmp/q7b-random
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$out/gpu.txt"
# The CUDA 13 libraries the build links by soname: PyTorch's copies.
lib=$(python3 -c "
import glob, nvidia, os
found = {os.path.dirname(p) for base in nvidia.__path__
         for p in glob.glob(os.path.join(base, '**', 'lib*.so*'), recursive=True)}
print(':'.join(sorted(found)))")
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/nvidia/lib64
ldd "$kit/iesr" | grep 'not found' >&2

[ -f "$model/config.json" ] ||
    timeout 200 python3 scripts/hf_generate_bench.py "$model" 1500 256 1,64,128 "$out/hf_generate.json"
cp "$kit/tokenizer.json" "$kit/tokenizer_config.json" "$model/"
timeout 120 "$kit/iesr" bench-llm --model "$model" --device cuda:0 --prompt-tokens 1500 \
    --gen-tokens 256 --batch 1,8,32,64,128 --json >"$out/iesr_bench_llm.json"

# Questions answered at once: the search at 8 rollouts and sc-8, on the
# first questions of the Spider subset, each under a wall-clock limit.
workload() {
    local name=$1 limit=$2 seconds=$3
    shift 3
    local started rc
    started=$(date +%s%N)
    timeout "$seconds" "$kit/iesr" bench --dataset spider --data-dir "$kit/spider" \
        --subset "$kit/spider_dev_random100.json" --model "$model" --device cuda:0 \
        --no-embedding --limit "$limit" --out "/tmp/$name" "$@" >/dev/null
    rc=$?
    echo "$name exit $rc wall_ms $((($(date +%s%N) - started) / 1000000))" >>"$out/workloads.txt"
    cp "/tmp/$name/predictions.jsonl" "$out/$name.jsonl"
}
workload search-c32 32 130 --method iesr --rollouts 8 --concurrency 32
workload sc8-c32 32 60 --method sc --samples 8 --concurrency 32
workload search-c1 4 45 --method iesr --rollouts 8 --concurrency 1
