#!/usr/bin/env bash
# The plain anchor for tables and graphs: one greedy call of the GGUF
# through llama.cpp (a llama-cpp-python server) that reads the tables as
# text and answers directly (`iesr bench --method read`), resumable in OUT,
# scored as the other methods' runs are.
#
# Usage: scripts/read_anchor.sh OUT [bench arguments...]
#   e.g. scripts/read_anchor.sh runs/wtq100-anchor --dataset wikitablequestions \
#          --data-dir ../shared/datasets/wikitablequestions \
#          --subset datasets/subsets/wtq_dev_random100.json
# Env: IESR (default target/release/iesr), MODEL (default the 0.5B card's
#      file in the iesr model cache), PORT (default 8765), PYTHON (python3),
#      THREADS (the server's threads, default all cores).
set -euo pipefail
out=$1
shift
iesr=${IESR:-target/release/iesr}
model=${MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/iesr/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
port=${PORT:-8765}
python=${PYTHON:-python3}
threads=${THREADS:-$(nproc)}
if [ ! -f "$model" ]; then
  echo "error: no model file at $model; run \`$iesr model pull\` or set MODEL" >&2
  exit 1
fi
if ! "$python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "error: llama-cpp-python's server is missing; pip install 'llama-cpp-python[server]'" >&2
  exit 1
fi
"$python" -m llama_cpp.server --host 127.0.0.1 --port "$port" --model "$model" \
  --n_ctx 8192 --n_threads "$threads" > "$out.server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null && break
  sleep 1
done
"$iesr" bench --method read --openai-url "http://127.0.0.1:$port/v1" \
  --model "$(basename "$model" .gguf)" --out "$out" --resume "$@"
