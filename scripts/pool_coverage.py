#!/usr/bin/env python3
"""How often a run's candidate pool holds a right query, against how often
its chosen answer is right: whether the room left is in choosing or in
writing a right query at all.

Usage: scripts/pool_coverage.py RUN_DIR BENCH_ARGS...

BENCH_ARGS are the question arguments the run was made with (`--dataset
... --data-dir ... [--split ...] --subset ...`). Every candidate a trace
keeps (`iesr bench --out RUN_DIR` writes them) is scored with `iesr eval`:
the k-th candidates of all questions form one predictions file, scored
with the run's own arguments. IESR_BIN names the binary
(target/release/iesr by default).
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

BIN = os.environ.get("IESR_BIN", "target/release/iesr")


def verdicts(predictions, args):
    """question id -> (right, gold non-empty or None when not scored)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for question, sql in predictions.items():
            f.write(json.dumps({"question_id": question, "sql": sql}) + "\n")
        path = f.name
    try:
        out = subprocess.run(
            [BIN, "eval", *args, "--predictions", path, "--json"],
            capture_output=True, text=True, check=True,
        ).stdout
    finally:
        os.unlink(path)
    return {
        q["question_id"]: (q["verdict"] == "correct", q.get("gold_nonempty"))
        for q in json.loads(out)["questions"]
    }


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run, args = pathlib.Path(sys.argv[1]), sys.argv[2:]
    pools = {
        trace.stem: [c["sql"] for c in json.loads(trace.read_text()).get("candidates", [])]
        for trace in (run / "traces").glob("*.json")
    }
    chosen = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        record = json.loads(line)
        chosen[record["question_id"]] = record["sql"]
    answered = verdicts(chosen, args)
    in_pool = {q: False for q in answered}
    for k in range(max((len(p) for p in pools.values()), default=0)):
        kth = {q: p[k] for q, p in pools.items() if len(p) > k}
        for q, (right, _) in verdicts(kth, args).items():
            in_pool[q] |= right
    scored = [q for q, (_, nonempty) in answered.items() if nonempty is not None]
    for label, questions in (
        ("scored", scored),
        ("non-empty gold", [q for q in scored if answered[q][1]]),
    ):
        right = sum(answered[q][0] for q in questions)
        pool = sum(in_pool[q] for q in questions)
        print(f"{label}: {len(questions)} questions, chosen right {right}, a right candidate in the pool {pool}")
    missed = sorted(q for q in scored if in_pool[q] and not answered[q][0])
    print("a right candidate not chosen:", " ".join(missed) or "none")


if __name__ == "__main__":
    main()
