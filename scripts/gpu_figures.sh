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
# database/) and spider_dev_random100.json (scripts/gpu_kit.sh makes it);
# a stripped binary compressed as iesr.xz is unpacked first. OUT receives
# six files: log.txt (the GPU, each step's exit status and seconds, the
# workloads' rates), hf_generate.json, iesr_bench_llm.json and each
# workload's predictions. The model is
# a Qwen2.5-7B-shaped checkpoint with random bf16 weights
# (scripts/hf_generate_bench.py), so every completion runs to its token
# limit: the figures measure throughput, not accuracy. Each step runs
# under its own time limit, about 9 minutes in all.
set -uo pipefail
kit=${1:?usage: scripts/gpu_figures.sh KIT OUT}
out=${2:?usage: scripts/gpu_figures.sh KIT OUT}
model=/tmp/q7b-random
log=$out/log.txt
started=$(date +%s)
stamp() { echo "[$(($(date +%s) - started)) s] $*" | tee -a "$log"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >>"$log"
if [ ! -x "$kit/iesr" ]; then
    python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + '/iesr.xz'), open(sys.argv[1] + '/iesr', 'wb'))" "$kit"
    chmod +x "$kit/iesr"
fi
# The CUDA 13 libraries the build links by soname: PyTorch's copies.
lib=$(python3 -c "
import glob, nvidia, os
found = {os.path.dirname(p) for base in nvidia.__path__
         for p in glob.glob(os.path.join(base, '**', 'lib*.so*'), recursive=True)}
print(':'.join(sorted(found)))")
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/nvidia/lib64
ldd "$kit/iesr" | grep 'not found' | tee -a "$log"

# step NAME SECONDS COMMAND...: runs COMMAND under a time limit, its
# stderr's last lines kept in the log.
step() {
    local name=$1 seconds=$2 rc
    shift 2
    stamp "$name: start"
    timeout "$seconds" "$@" 2>"/tmp/$name.err"
    rc=$?
    tail -n 5 "/tmp/$name.err" >>"$log"
    stamp "$name: exit $rc"
}

[ -f "$model/config.json" ] ||
    step hf 170 python3 scripts/hf_generate_bench.py "$model" 1500 256 1,64,128 "$out/hf_generate.json"
cp "$kit/tokenizer.json" "$kit/tokenizer_config.json" "$model/"
step llm 90 sh -c "'$kit/iesr' bench-llm --model $model --device cuda:0 --prompt-tokens 1500 \
    --gen-tokens 256 --batch 1,8,32,64 --json >'$out/iesr_bench_llm.json'"

# Questions answered at once on the Spider subset. A question's
# predictions line holds its generated tokens, and the predictions file is
# written as each question ends, so a run stopped at its limit still gives
# the rate of the questions it finished: their tokens over the seconds
# from the start (the model's loading included) to the last one's end.
workload() {
    local name=$1 limit=$2 seconds=$3 began
    shift 3
    began=$(date +%s.%N)
    step "$name" "$seconds" "$kit/iesr" bench --dataset spider --data-dir "$kit/spider" \
        --subset "$kit/spider_dev_random100.json" --model "$model" --device cuda:0 \
        --no-embedding --limit "$limit" --out "/tmp/$name" "$@"
    cp -p "/tmp/$name/predictions.jsonl" "$out/$name.jsonl" 2>/dev/null
    python3 - "$out/$name.jsonl" "$began" "$name" <<'EOF' | tee -a "$log"
import json, os, sys
path, began, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if not os.path.exists(path) or os.path.getsize(path) == 0:
    sys.exit(print(f"{name}: no question finished"))
rows = [json.loads(line) for line in open(path)]
tokens = sum(r.get("generated_tokens", 0) for r in rows)
seconds = os.path.getmtime(path) - began
print(f"{name}: {len(rows)} questions, {tokens} generated tokens in {seconds:.1f} s "
      f"= {tokens / seconds:.0f} tokens/s")
EOF
}
workload sc8-c64 64 75 --method sc --samples 8 --concurrency 64
workload search-c64 100 150 --method iesr --rollouts 8 --concurrency 64
workload search-c1 2 40 --method iesr --rollouts 8 --concurrency 1
stamp done
