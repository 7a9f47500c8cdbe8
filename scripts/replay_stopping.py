#!/usr/bin/env python3
"""Stopping rules and choice weights replayed on a Spider sc-N run.

Usage: scripts/replay_stopping.py RUN_DIR [DATA_DIR] [--greedy GREEDY_RUN]
       scripts/replay_stopping.py RUN_DIR DATA_DIR --export SAMPLES.jsonl
       scripts/replay_stopping.py SAMPLES.jsonl

An `iesr bench --method sc --samples N` run's traces hold its N samples in
the order sc-k draws them (each row has its own seed), with the repaired
query of each and the reviewer's log-probability of the question given
each distinct query. So any rule that stops after k samples and chooses
among them, as the search does, can be replayed without a model call:
ln(share of the group) + ln p(question | its likeliest query) + the
prior of a result without a value. Gold and candidate results are
compared as sets of rows (BIRD's rule). Tokens per sample are the call's
generated tokens split by the replies' characters. DATA_DIR is Spider's
(the default) or LogicCat's folder: a `dev.json` with `db_id` and `query`.

With `--greedy GREEDY_RUN` (an `iesr bench --method greedy` run on the
same questions) it also replays a pool whose first sample is greedy's
query (what `greedy_rows = 1` draws): row 0 replaced by greedy's
prediction, rows 1.. as drawn. Greedy's reviewer log-probability is the
best of the samples with its result, or their mean when none has it.
Greedy's prediction may have been corrected by execution feedback, which
a greedy row is not, so this is an estimate.

`--export FILE` writes what the replay reads of a run, one line per
question (each sample's result as a number within the question, whether
it has a value and is right, its tokens and reviewer score, and the
query's own log-probability where the trace holds one), so that the
replay runs again from that file alone, without the run's folder or the
databases; docs/samples/ keeps such files of runs reported in
docs/results.md.
"""
import argparse
import collections
import json
import math
import pathlib
import re
import sqlite3
import sys


def rows(data, db, sql):
    folder = "database" if pathlib.Path(data, "database").is_dir() else "databases"
    path = pathlib.Path(data, folder, db, f"{db}.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode(errors="replace")
    try:
        return frozenset(con.execute(sql).fetchmany(100000))
    except sqlite3.Error:
        return None
    finally:
        con.close()


def reviewed_form(sql):
    """A query as the reviewer's records key it: the reviewer reads names
    that must be quoted as plain words (`"from"` as `from_`), so quotes
    and underscores are left out on both sides."""
    return re.sub(r'["`_]', "", sql).lower()


def load(run, data):
    dev = json.loads(pathlib.Path(data, "dev.json").read_text())
    questions = []
    for path in sorted(pathlib.Path(run, "traces").glob("*.json")):
        trace = json.loads(path.read_text())
        gold_item = dev[int(path.stem)]
        db = gold_item["db_id"]
        gold = rows(data, db, gold_item["query"])
        call = trace["calls"][0]
        replies = call["outputs"]
        chars = sum(len(r) for r in replies) or 1
        reviewed = {reviewed_form(r["sql"]): r for r in trace.get("review") or []}
        samples = []
        for i, candidate in enumerate(trace["candidates"][: len(replies)]):
            execution = candidate["execution"]
            ran = execution.get("status") == "ok"
            key = rows(data, db, candidate["sql"]) if ran else None
            preview = execution.get("preview") or []
            review = reviewed.get(reviewed_form(candidate["sql"]), {})
            sample = {
                "key": key,
                "value": ran and any(v is not None for row in preview for v in row),
                "right": key is not None and key == gold,
                "tokens": call["usage"]["generated_tokens"] * len(replies[i]) / chars,
                "log_prob": review.get("log_prob"),
            }
            # Kept for exports; the replay does not read them.
            for field in ("query_log_prob", "query_tokens"):
                if field in review:
                    sample[field] = review[field]
            samples.append(sample)
        questions.append(samples)
    return questions


def export(run, data, out):
    """Writes the run's samples as `load` reads them, one question a line."""
    paths = sorted(pathlib.Path(run, "traces").glob("*.json"))
    with open(out, "w") as file:
        for path, samples in zip(paths, load(run, data)):
            # Results as numbers, equal where the row sets are equal (as
            # sets compare: 1 and 1.0 alike).
            results = {}
            for sample in samples:
                if sample["key"] is not None:
                    sample["key"] = results.setdefault(sample["key"], len(results))
            file.write(json.dumps({"question": path.stem, "samples": samples}) + "\n")


def load_exported(path):
    return [json.loads(line)["samples"] for line in pathlib.Path(path).read_text().splitlines()]


def chosen_right(samples, empty_prior=0.1, log_prob_weight=1.0):
    groups = collections.defaultdict(list)
    for s in samples:
        if s["key"] is not None:
            groups[s["key"]].append(s)
    if not groups:
        return False
    if len(groups) == 1:
        return next(iter(groups.values()))[0]["right"]

    def score(members):
        scored = [m["log_prob"] for m in members if m["log_prob"] is not None]
        prior = 0.0 if members[0]["value"] else (
            math.log(empty_prior) if empty_prior > 0 else -1e12)
        return (math.log(len(members) / len(samples))
                + log_prob_weight * (max(scored) if scored else -1e9) + prior)

    return max(groups.values(), key=score)[0]["right"]


def top_share(samples):
    counts = collections.Counter(s["key"] for s in samples if s["key"] is not None and s["value"])
    return (max(counts.values()) if counts else 0) / len(samples)


def replay(questions, schedule, settle, **choice):
    """EX and mean generated tokens of drawing `schedule` samples in turn
    until the largest group with a value holds `settle(k)` of the k drawn."""
    right, tokens = 0, 0.0
    for samples in questions:
        drawn = samples
        for k in schedule:
            drawn = samples[:k]
            if top_share(drawn) >= settle(k):
                break
        right += chosen_right(drawn, **choice)
        tokens += sum(s["tokens"] for s in drawn)
    return 100.0 * right / len(questions), tokens / len(questions)


def with_greedy_row(questions, run, data, greedy_run):
    """Each question's samples with row 0 replaced by greedy's query."""
    dev = json.loads(pathlib.Path(data, "dev.json").read_text())
    predictions = {}
    for line in pathlib.Path(greedy_run, "predictions.jsonl").read_text().splitlines():
        p = json.loads(line)
        predictions[p["question_id"]] = p
    paths = sorted(pathlib.Path(run, "traces").glob("*.json"))
    replaced = []
    for path, samples in zip(paths, questions):
        item = dev[int(path.stem)]
        gold = rows(data, item["db_id"], item["query"])
        prediction = predictions[path.stem]
        key = rows(data, item["db_id"], prediction["sql"])
        same = [s["log_prob"] for s in samples if s["key"] == key and s["log_prob"] is not None]
        scored = [s["log_prob"] for s in samples if s["log_prob"] is not None]
        log_prob = max(same) if same else (sum(scored) / len(scored) if scored else None)
        greedy = {
            "key": key,
            "value": key is not None and any(v is not None for row in key for v in row),
            "right": key is not None and key == gold,
            "tokens": samples[0]["tokens"],
            "log_prob": log_prob,
        }
        replaced.append([greedy] + samples[1:])
    return replaced


def main(run, data, greedy_run):
    if run.endswith(".jsonl"):
        questions = load_exported(run)
    else:
        questions = load(run, data)
    n = min(len(q) for q in questions)
    never = lambda k: 2.0  # noqa: E731
    print("rule\tEX\tgenerated tokens")
    for k in range(1, n + 1):
        print("sc-%d\t%.1f\t%.0f" % ((k,) + replay(questions, [k], never)))
    rules = {
        "4, 8; 3 of 4 (the search's)": ([4, 8], lambda k: 0.75),
        "2, 4, 8; 2 of 2, 3 of 4": ([2, 4, 8], lambda k: 0.75),
        "2, 4, 8; 2 of 2, 2 of 4": ([2, 4, 8], lambda k: 1.0 if k == 2 else 0.5),
        "3, 6, 8; 2 of 3, 4 of 6": ([3, 6, 8], lambda k: 0.66),
        "4, 8; 2 of 4": ([4, 8], lambda k: 0.5),
        "2, 8; 2 of 2": ([2, 8], lambda k: 1.0),
        # Budgets that go past 8 only where the samples disagree: their
        # mean tokens can match sc-8's while unsettled questions draw more.
        "4, 8, 12, 16; 3 of 4": ([4, 8, 12, 16], lambda k: 0.75),
        "4, 8, 16; 3 of 4": ([4, 8, 16], lambda k: 0.75),
        "4, 8, 16; 2 of 4": ([4, 8, 16], lambda k: 0.5),
    }
    for name, (schedule, settle) in rules.items():
        if max(schedule) <= n:
            print("%s\t%.1f\t%.0f" % ((name,) + replay(questions, schedule, settle)))
    print("\nempty prior\tlog-prob weight\tsc-%d EX\tsearch rule EX" % n)
    for empty_prior in [0.3, 0.1, 0.03, 0.01, 0.0]:
        for weight in [0.5, 1.0, 2.0]:
            choice = {"empty_prior": empty_prior, "log_prob_weight": weight}
            whole = replay(questions, [n], never, **choice)[0]
            search = replay(questions, [4, 8], lambda k: 0.75, **choice)[0]
            print("%g\t%g\t%.1f\t%.1f" % (empty_prior, weight, whole, search))
    if greedy_run:
        pooled = with_greedy_row(questions, run, data, greedy_run)
        print("\nk\tsc-k EX\tgreedy row + samples 1..k-1 EX")
        for k in range(1, n + 1):
            print("%d\t%.1f\t%.1f" % (k, replay(questions, [k], never)[0],
                                       replay(pooled, [k], never)[0]))
        print("the search's rule\t%.1f\t%.1f" % (replay(questions, [4, 8], lambda k: 0.75)[0],
                                                replay(pooled, [4, 8], lambda k: 0.75)[0]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Stopping rules replayed on an sc-N run.")
    parser.add_argument("run")
    parser.add_argument("data", nargs="?", default="../shared/datasets/spider")
    parser.add_argument("--greedy", help="a greedy run on the same questions")
    parser.add_argument("--export", help="write the run's samples to this file and stop")
    args = parser.parse_args()
    if args.greedy and args.run.endswith(".jsonl"):
        parser.error("--greedy needs the run's folder: an exported file holds no queries")
    if args.export:
        export(args.run, args.data, args.export)
    else:
        main(args.run, args.data, args.greedy)
