#!/usr/bin/env python3
"""Offline experiment: on the questions whose first four sc samples do not
settle (no result with a value shared by three of them), draw four more
queries from a second prompt, in place of sc's samples 4-7, and compare
the two pools. The second prompt is one of:

  attempts  sc's prompt, then the distinct first attempts with their results
  plan      sc's prompt, asking for a short plan (tables, columns, the
            computation) before the query

Usage:
  scripts/second_generator.py draw VARIANT SC8_RUN_DIR OUT.jsonl MODEL.gguf [IDS.json]
  scripts/second_generator.py score SC8_RUN_DIR OUT.jsonl BENCH_ARGS...

`draw` (resumable) decodes with llama-cpp-python on one thread: row 0 at
temperature 0, rows 1-3 at 0.8, without the engine's name constraint or
repairs; IDS.json (a list of question ids) limits it to those questions, in
that order. `score` judges every query with `iesr eval` (IESR_BIN, default
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


PLAN = ("\n\nFirst write a short plan, at most four lines: the tables and columns"
        " the question needs, how they join, and the computation it asks for. Then"
        " write the one SQLite query in a ```sql block.")


def with_attempts(trace, first):
    """sc's question followed by its distinct first attempts and their results."""
    seen, attempts = set(), []
    for c in first:
        rows, error = run_query(trace["database"], c["sql"])
        key = result_key(rows) if error is None else c["sql"]
        if key not in seen:
            seen.add(key)
            attempts.append(f"```sql\n{c['sql']}\n```\n{shown(rows, error)}")
    return ("\n\nEarlier attempts at this question, which disagree:\n\n"
            + "\n\n".join(f"Attempt {i + 1}:\n{a}" for i, a in enumerate(attempts))
            + "\n\nCheck each attempt against the question and the schema, then"
            " write the one SQLite query that answers the question.")


ONLY_THE_QUERY = "Reply with only the query in a ```sql block, without explanation."

VARIANTS = {  # name -> (sc's system message -> the variant's, text added to sc's user message, reply token limit)
    "attempts": (lambda system: system, with_attempts, 384),
    "plan": (lambda system: system.replace(ONLY_THE_QUERY, "Reply with a short plan, then the query in a ```sql block."),
             lambda trace, first: PLAN, 768),
}


def last_query(text):
    """The last fenced block of a reply, or the reply when it has none."""
    blocks = re.findall(r"```(?:sql)?\s*(.*?)(?:```|$)", text, re.S)
    return (blocks[-1] if blocks else text).strip()


def draw(variant, run, out, model, only=None):
    import llama_cpp

    system_of, added, max_tokens = VARIANTS[variant]
    done = set()
    if out.exists():
        done = {json.loads(line)["question"] for line in out.read_text().splitlines()}
    llm = llama_cpp.Llama(model_path=model, n_ctx=8192, n_threads=1, verbose=False, seed=0)
    order = only if only is not None else sorted(p.stem for p in (run / "traces").glob("*.json"))
    for path in (run / "traces" / f"{q}.json" for q in order):
        if path.stem in done or not path.exists():
            continue
        trace = json.loads(path.read_text())
        first = unsettled(trace)
        if first is None:
            continue
        system, user = trace["calls"][0]["prompt"][:2]
        system = dict(system, content=system_of(system["content"]))
        user = dict(user, content=user["content"] + added(trace, first))
        new = []
        for row in range(4):
            reply = llm.create_chat_completion(
                [system, user], temperature=0.0 if row == 0 else 0.8, seed=row,
                max_tokens=max_tokens)
            new.append({"sql": last_query(reply["choices"][0]["message"]["content"]),
                        "tokens": reply["usage"]["completion_tokens"]})
        record = {"question": path.stem, "samples": [c["sql"] for c in trace["candidates"][:8]],
                  "shown": new}
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(path.stem, flush=True)


def score(run, out, args):
    # One record a question: two draws over overlapping id lists may both write one.
    records = list({r["question"]: r for r in map(json.loads, out.read_text().splitlines())}.values())
    pools = {r["question"]: r["samples"] + [s["sql"] for s in r["shown"]] for r in records}
    databases = {q: json.loads((run / "traces" / f"{q}.json").read_text())["database"] for q in pools}
    results = {q: [run_query(databases[q], sql) for sql in pool] for q, pool in pools.items()}
    right = {q: [False] * 12 for q in pools}
    for j in range(12):
        for q, (ok, _) in verdicts({q: p[j] for q, p in pools.items()}, args).items():
            if q in right:
                right[q][j] = ok

    def chosen(q, members):
        groups = {}
        for i in members:
            rows, error = results[q][i]
            if error is None:
                group = groups.setdefault(result_key(rows), [0.0, i])
                group[0] += 1.0 if has_value(rows) else 0.1
        return max(groups.values(), key=lambda g: (g[0], -g[1]))[1] if groups else members[0]

    print(f"{len(pools)} questions whose first four samples do not settle")
    for name, members in [("sc-4", range(4)), ("sc-8 (samples 0-7)", range(8)),
                          ("samples 0-3 + 4 of the second prompt", [0, 1, 2, 3, 8, 9, 10, 11]),
                          ("all twelve", range(12))]:
        members = list(members)
        picked = sum(right[q][chosen(q, members)] for q in pools)
        covered = sum(any(right[q][i] for i in members) for q in pools)
        print(f"{name}: chosen right {picked}, a right query in the pool {covered}")
    for name, rows in (("samples 4-7", range(4, 8)), ("second prompt", range(8, 12))):
        print(f"{name}: {sum(right[q][j] for q in pools for j in rows)} right, "
              f"{sum(results[q][j][1] is None for q in pools for j in rows)} run, of {4 * len(pools)}")
    print("questions with a right query only from the second prompt:",
          " ".join(q for q in pools if any(right[q][8:]) and not any(right[q][:8])) or "none")
    print("generated tokens per second-prompt row:",
          round(sum(s["tokens"] for r in records for s in r["shown"]) / (4 * len(records)), 1))


if __name__ == "__main__":
    if sys.argv[1:2] == ["draw"] and len(sys.argv) in (6, 7) and sys.argv[2] in VARIANTS:
        only = [str(q) for q in json.loads(pathlib.Path(sys.argv[6]).read_text())] if len(sys.argv) == 7 else None
        draw(sys.argv[2], pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), sys.argv[5], only)
    elif sys.argv[1:2] == ["score"] and len(sys.argv) >= 4:
        score(pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit(__doc__)
