#!/usr/bin/env python3
"""Share of a run's sampled queries that execute, and why the others fail.

Usage: scripts/samples_run.py RUN_DIR [RUN_DIR...]

Reads each run's traces (`iesr bench --out RUN_DIR` writes them). For the
tree search a sample is a tree node whose step wrote a query (after the
repairs and any rewrite); for sc and greedy, a candidate the trace keeps
(the samples after the repairs, and execution-feedback rewrites).
"""
import collections
import json
import pathlib
import sys


def kind(error):
    if "no such column" in error:
        return "no such column"
    if "no such table" in error:
        return "no such table"
    if "syntax error" in error or "unrecognized token" in error:
        return "syntax"
    if "incomplete input" in error:
        return "incomplete"
    return "other"


def samples(trace):
    if trace["method"] == "Iesr":
        return [n["execution"] for n in trace["tree"] if n.get("sql") is not None]
    return [c["execution"] for c in trace["candidates"]]


def main(runs):
    print("run\tsamples\trun\tshare\t" + "\t".join(
        ["no such column", "no such table", "syntax", "incomplete", "other"]))
    for run in runs:
        total, ran = 0, 0
        failures = collections.Counter()
        for path in sorted(pathlib.Path(run, "traces").glob("*.json")):
            for execution in samples(json.loads(path.read_text())):
                total += 1
                if execution and execution.get("status") == "ok":
                    ran += 1
                else:
                    failures[kind((execution or {}).get("error", "not executed"))] += 1
        share = 100.0 * ran / total if total else 0.0
        counts = "\t".join(str(failures[k]) for k in
                           ["no such column", "no such table", "syntax", "incomplete", "other"])
        print(f"{run}\t{total}\t{ran}\t{share:.1f}%\t{counts}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/samples_run.py RUN_DIR [RUN_DIR...]")
    main(sys.argv[1:])
