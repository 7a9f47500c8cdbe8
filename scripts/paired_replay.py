#!/usr/bin/env python3
"""A run against sc over the first k samples of kept sc samples, paired.

Usage: scripts/paired_replay.py RUN SAMPLES.jsonl [RUN SAMPLES.jsonl ...] [--k 2,3,4,5,6,8]

RUN is an `iesr bench` output folder (its summary.json says which
questions each run got right; predictions.jsonl its generated tokens).
SAMPLES.jsonl is an export of an sc run on the same questions
(`scripts/replay_stopping.py RUN DATA --export`; docs/samples/ keeps
them). For each k, sc-k is replayed with the engine's choice
(`replay_stopping.chosen_right` over the first k samples) and compared
with RUN on the questions both scored: questions right, mean generated
tokens, the difference in points with a 95% bootstrap interval over
questions (10,000 resamples, seed 0), and the questions won and lost.
Several RUN SAMPLES pairs (one per database set, as
scripts/made_databases.sh writes them) are pooled into one comparison.
This is how docs/results.md compares the search with sc at equal
tokens.
"""
import argparse
import json
import pathlib
import random
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import replay_stopping  # noqa: E402


def run_verdicts(run):
    path = pathlib.Path(run, "summary.json")
    if not path.is_file():
        sys.exit(f"{run} has no summary.json: finish the run (iesr bench --resume) first")
    summary = json.loads(path.read_text())
    return {
        q["question_id"]: q["verdict"] == "correct"
        for q in summary["report"]["questions"]
        if q["verdict"] != "gold_failed"
    }


def run_tokens(run):
    lines = pathlib.Path(run, "predictions.jsonl").read_text().splitlines()
    return {p["question_id"]: p["generated_tokens"] for p in map(json.loads, lines)}


def bootstrap(pairs, resamples=10000, seed=0):
    """95% interval of the difference in points, resampling questions."""
    rng = random.Random(seed)
    n = len(pairs)
    diffs = []
    for _ in range(resamples):
        drawn = [pairs[rng.randrange(n)] for _ in range(n)]
        diffs.append(100.0 * sum(a - b for a, b in drawn) / n)
    diffs.sort()
    return diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", metavar="RUN SAMPLES", help="a run and its sc samples")
    parser.add_argument("--k", default="2,3,4,5,6,8", help="sample counts to replay")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        sys.exit("give each run with its samples file: RUN SAMPLES [RUN SAMPLES ...]")
    kept = []
    for run, samples in zip(args.pairs[::2], args.pairs[1::2]):
        verdicts = run_verdicts(run)
        tokens = run_tokens(run)
        for line in pathlib.Path(samples).read_text().splitlines():
            row = json.loads(line)
            if row["question"] in verdicts:
                row["right"] = verdicts[row["question"]]
                row["tokens"] = tokens[row["question"]]
                kept.append(row)
    if not kept:
        sys.exit("no question of the samples files was scored in the runs")
    n = len(kept)
    right = sum(row["right"] for row in kept)
    mean_tokens = sum(row["tokens"] for row in kept) / n
    runs = " ".join(args.pairs[::2])
    print(f"{runs}: {right} of {n} right, {mean_tokens:.0f} generated tokens")
    for k in (int(x) for x in args.k.split(",")):
        pairs, sc_tokens = [], 0.0
        for row in kept:
            drawn = row["samples"][:k]
            pairs.append((int(row["right"]), int(replay_stopping.chosen_right(drawn))))
            sc_tokens += sum(s["tokens"] for s in drawn)
        low, high = bootstrap(pairs)
        won = sum(1 for a, b in pairs if a > b)
        lost = sum(1 for a, b in pairs if a < b)
        diff = 100.0 * sum(a - b for a, b in pairs) / n
        print(
            f"sc-{k}: {sum(b for _, b in pairs)} right, {sc_tokens / n:.0f} tokens; "
            f"run - sc-{k} = {diff:+.2f} [{low:+.2f}, {high:+.2f}] ({won} won, {lost} lost)"
        )


if __name__ == "__main__":
    main()
