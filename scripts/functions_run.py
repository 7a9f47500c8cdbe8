#!/usr/bin/env python3
"""How a run used synthesised functions, and its calling accuracy.

Usage: scripts/functions_run.py RUN_DIR [RUN_DIR...]

Reads each run's traces and summary.json (`iesr bench --functions --out
RUN_DIR` writes them). A question "called" a function when its final query
carries a functions block (`/*js ... */`); calling accuracy is the share
of those questions the benchmark scored right. Also counted: questions
whose model wrote at least one function (whether or not it was kept), the
function-writing calls, and the tokens they generated.
"""
import json
import pathlib
import sys


def main(runs):
    print("run\tquestions\twrote\tcalled\tcalled right\tcalling accuracy\t"
          "writing calls\twriting tokens")
    for run in runs:
        run = pathlib.Path(run)
        summary = json.loads((run / "summary.json").read_text())
        verdicts = {q["question_id"]: q["verdict"]
                    for q in summary["report"]["questions"]}
        wrote = called = called_right = calls = tokens = 0
        for path in sorted((run / "traces").glob("*.json")):
            trace = json.loads(path.read_text())
            writing = [c for c in trace["calls"] if c["stage"] == "function_writing"]
            if writing:
                wrote += 1
                calls += len(writing)
                tokens += sum(c["usage"]["generated_tokens"] for c in writing)
            if (trace.get("answer") or "").lstrip().startswith("/*js"):
                called += 1
                called_right += verdicts.get(path.stem) == "correct"
        share = f"{100 * called_right / called:.1f}%" if called else "-"
        print(f"{run.name}\t{len(verdicts)}\t{wrote}\t{called}\t{called_right}\t"
              f"{share}\t{calls}\t{tokens}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1:])
