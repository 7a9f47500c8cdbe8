"""Prefill and decode speed of llama.cpp (llama-cpp-python) on the same
synthetic prompt `iesr bench-llm` uses, for scripts/bench_vs_llamacpp.sh.

Usage: python3 scripts/llamacpp_bench.py MODEL.gguf PROMPT_TOKENS GEN_TOKENS THREADS
Prints one JSON line.
"""
import json
import sys
import time

import numpy as np
from llama_cpp import Llama


def synthetic_text(llm, n):
    # Mirrors synthetic_prompt() in src/llm/bench.rs.
    text = "You are a careful SQLite expert.\n"
    table = 0
    ids = []
    while len(ids) < n:
        for _ in range(20):
            text += (
                f"CREATE TABLE t{table} ( -- {table * 37 % 1000} rows\n  id INTEGER PRIMARY KEY,\n"
                f"  name TEXT, -- e.g. 'item {table}'\n  amount REAL,\n"
                f"  parent_id INTEGER REFERENCES t{table // 2}(id)\n);\n"
            )
            table += 1
        ids = llm.tokenize(text.encode(), add_bos=False, special=True)
    return ids[:n]


def last_logits(llm):
    # Without logits_all only the last evaluated position's logits exist.
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))


def main():
    path, n_prompt, n_gen, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    llm = Llama(path, n_ctx=n_prompt + n_gen + 64, n_batch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    ids = synthetic_text(llm, n_prompt)
    llm.eval(ids[:32])  # warm-up
    llm.reset()
    start = time.perf_counter()
    llm.eval(ids)
    prefill = time.perf_counter() - start
    token = int(np.argmax(last_logits(llm)))
    start = time.perf_counter()
    for _ in range(n_gen):
        llm.eval([token])
        token = int(np.argmax(last_logits(llm)))
    decode = time.perf_counter() - start
    print(json.dumps({
        "prompt_tokens": len(ids),
        "gen_tokens": n_gen,
        "prefill_tok_s": len(ids) / prefill,
        "decode_tok_s": n_gen / decode,
    }))


if __name__ == "__main__":
    main()
