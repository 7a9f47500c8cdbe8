#!/usr/bin/env python3
"""Offline experiment: on the questions whose first four sc samples do not
settle (no result with a value shared by three of them), draw four more
queries from a prompt that shows the model the distinct attempts and their
results, in place of sc's samples 4-7, and compare the two pools.

Usage:
  scripts/attempts_shown.py draw SC8_RUN_DIR OUT.jsonl MODEL.gguf
  scripts/attempts_shown.py score SC8_RUN_DIR OUT.jsonl BENCH_ARGS...

`draw` (resumable) decodes with llama-cpp-python on one thread: row 0 at
temperature 0, rows 1-3 at 0.8, without the engine's name constraint or
repairs. `score` judges every query with `iesr eval` (IESR_BIN, default
target/release/iesr) and replays a vote over each pool (a result without
a value counts a tenth; ties go to the earlier sample).
"""
import json
import pathlib
import re
import sqlite3
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from pool_coverage import verdicts  # noqa: E402

SETTLED = 3  # of the first four samples on one result with a value


def run_query(db, sql):
    """(rows, None) or (None, error), read-only, at most 10 seconds."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        deadline = time.time() + 10
        con.set_progress_handler(lambda: int(time.time() > deadline), 10000)
        return con.execute(sql).fetchmany(1001), None
    except Exception as error:  # any SQLite failure is the sample's result
        return None, str(error)


def result_key(rows):
    return json.dumps(sorted(map(repr, set(map(tuple, rows)))))


def has_value(rows):
    return any(v is not None for row in rows for v in row)


def shown(rows, error):
    if error is not None:
        return "Error: " + error[:200]
    if not rows:
        return "Result: no rows"
    head = "; ".join(", ".join(str(v) for v in row) for row in rows[:3])
    return f"Result ({len(rows)} rows): {head}" + (" ..." if len(rows) > 3 else "")


def unsettled(trace):
    """The first four samples, when they do not settle; else None."""
    first = trace["candidates"][:4]
    if len(trace["candidates"]) < 8:
        return None
    counts = {}
    for c in first:
        rows, error = run_query(trace["database"], c["sql"])
        if error is None and has_value(rows):
            counts[result_key(rows)] = counts.get(result_key(rows), 0) + 1
    return None if counts and max(counts.values()) >= SETTLED else first


def draw(run, out, model):
    import llama_cpp

    done = set()
    if out.exists():
        done = {json.loads(line)["question"] for line in out.read_text().splitlines()}
    llm = llama_cpp.Llama(model_path=model, n_ctx=8192, n_threads=1, verbose=False, seed=0)
    for path in sorted((run / "traces").glob("*.json")):
        trace = json.loads(path.read_text())
        first = None if path.stem in done else unsettled(trace)
        if first is None:
            continue
        seen, attempts = set(), []
        for c in first:
            rows, error = run_query(trace["database"], c["sql"])
            key = result_key(rows) if error is None else c["sql"]
            if key not in seen:
                seen.add(key)
                attempts.append(f"```sql\n{c['sql']}\n```\n{shown(rows, error)}")
        system, user = trace["calls"][0]["prompt"][:2]
        user = dict(user, content=user["content"] + (
            "\n\nEarlier attempts at this question, which disagree:\n\n"
            + "\n\n".join(f"Attempt {i + 1}:\n{a}" for i, a in enumerate(attempts))
            + "\n\nCheck each attempt against the question and the schema, then"
            " write the one SQLite query that answers the question."))
        new = []
        for row in range(4):
            reply = llm.create_chat_completion(
                [system, user], temperature=0.0 if row == 0 else 0.8, seed=row, max_tokens=384)
            text = reply["choices"][0]["message"]["content"]
            match = re.search(r"```(?:sql)?\s*(.*?)(```|$)", text, re.S)
            new.append({"sql": (match.group(1) if match else text).strip(),
                        "tokens": reply["usage"]["completion_tokens"]})
        record = {"question": path.stem, "samples": [c["sql"] for c in trace["candidates"][:8]],
                  "shown": new}
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(path.stem, len(attempts), flush=True)


def score(run, out, args):
    records = [json.loads(line) for line in out.read_text().splitlines()]
    pools = {r["question"]: r["samples"] + [s["sql"] for s in r["shown"]] for r in records}
    databases = {q: json.loads((run / "traces" / f"{q}.json").read_text())["database"] for q in pools}
    right = {q: [False] * 12 for q in pools}
    for j in range(12):
        for q, (ok, _) in verdicts({q: p[j] for q, p in pools.items()}, args).items():
            if q in right:
                right[q][j] = ok

    def chosen(q, members):
        groups = {}
        for i in members:
            rows, error = run_query(databases[q], pools[q][i])
            if error is None:
                group = groups.setdefault(result_key(rows), [0.0, i])
                group[0] += 1.0 if has_value(rows) else 0.1
        return max(groups.values(), key=lambda g: (g[0], -g[1]))[1] if groups else members[0]

    print(f"{len(pools)} questions whose first four samples do not settle")
    for name, members in [("sc-4", range(4)), ("sc-8 (samples 0-7)", range(8)),
                          ("samples 0-3 + 4 shown attempts", [0, 1, 2, 3, 8, 9, 10, 11])]:
        members = list(members)
        picked = sum(right[q][chosen(q, members)] for q in pools)
        covered = sum(any(right[q][i] for i in members) for q in pools)
        print(f"{name}: chosen right {picked}, a right query in the pool {covered}")
    failed = sum(run_query(databases[q], pools[q][j])[1] is not None for q in pools for j in range(8, 12))
    print(f"rows right: samples 4-7 {sum(sum(r[4:8]) for r in right.values())}, "
          f"shown attempts {sum(sum(r[8:]) for r in right.values())} of {4 * len(pools)} "
          f"({failed} of them fail to run)")
    print("generated tokens per shown-attempts row:",
          round(sum(s["tokens"] for r in records for s in r["shown"]) / (4 * len(records)), 1))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("draw", "score"):
        sys.exit(__doc__)
    run_dir, out_file = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    if sys.argv[1] == "draw":
        draw(run_dir, out_file, sys.argv[4])
    else:
        score(run_dir, out_file, sys.argv[4:])
