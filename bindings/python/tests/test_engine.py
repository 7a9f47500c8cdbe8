"""The Python package on the demo database, with the real 0.5B model.

Run after `pip install ./bindings/python` (the model is pulled on first use):
    python -m pytest bindings/python/tests
"""

import os
import pathlib
import sqlite3

import pytest

import iesr

ROOT = pathlib.Path(__file__).resolve().parents[3]
DEMO = ROOT / "datasets" / "concert_singer" / "concert_singer.sqlite"
SPIDER = pathlib.Path(os.environ.get("IESR_DATASETS", ROOT.parent / "shared" / "datasets")) / "spider"
MODEL = "qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def engine():
    return iesr.Engine(DEMO, model=MODEL, method="greedy")


def truth(sql):
    with sqlite3.connect(f"file:{DEMO}?mode=ro", uri=True) as conn:
        return [list(row) for row in conn.execute(sql)]


def test_a_question_gets_the_query_its_rows_and_the_trace(engine):
    before = DEMO.stat().st_mtime_ns
    answer = engine.answer("How many singers are there?")
    assert answer["sql"].lower().startswith("select")
    assert answer["result"]["rows"] == truth("SELECT count(*) FROM singer")
    assert 0.0 <= answer["confidence"] <= 1.0
    assert answer["cost"]["generated_tokens"] > 0
    assert answer["trace"]["calls"], "the trace holds the model calls"
    assert answer["method"] == "greedy"
    # The engine never writes to the user's database.
    assert DEMO.stat().st_mtime_ns == before


def test_a_hint_reaches_the_prompt_and_the_trace_can_be_left_out(engine):
    answer = engine.answer("How many stadiums are there?", hint="stadium is a table", trace=False)
    assert "trace" not in answer
    assert answer["result"]["rows"] == truth("SELECT count(*) FROM stadium")


def test_schema_and_guarded_queries(engine):
    schema = engine.schema()
    assert {t["name"] for t in schema["schema"]["tables"]} >= {"singer", "stadium", "concert"}
    assert "CREATE TABLE" in schema["ddl"]
    rows = engine.sql("SELECT Name FROM singer ORDER BY Name", max_rows=2)["rows"]
    assert rows == truth("SELECT Name FROM singer ORDER BY Name LIMIT 2")
    with pytest.raises(iesr.IesrError) as refused:
        engine.sql("DELETE FROM singer")
    assert "\n" not in str(refused.value)
    assert truth("SELECT count(*) FROM singer") == [[6]]


def test_bad_input_is_one_line_error_before_any_model_loads(tmp_path):
    with pytest.raises(iesr.IesrError) as missing:
        iesr.Engine(tmp_path / "nope.sqlite", model=MODEL)
    assert "nope.sqlite" in str(missing.value) and "\n" not in str(missing.value)
    with pytest.raises(iesr.IesrError, match="unknown method"):
        iesr.Engine(DEMO, model=MODEL, method="guess")
    with pytest.raises(iesr.IesrError, match="unknown dataset"):
        iesr.bench("nosuch", SPIDER, tmp_path / "run", model=MODEL)


def test_bench_runs_and_resumes(tmp_path):
    out = tmp_path / "run"
    args = dict(dataset="spider", data_dir=SPIDER, out=out, model=MODEL,
                db="concert_singer", limit=2)
    summary = iesr.bench(**args)
    assert len(summary["report"]["questions"]) == 2
    assert summary["cost"]["questions"] == 2
    predictions = (out / "predictions.jsonl").read_text()
    assert len(predictions.splitlines()) == 2
    # Resumed with one more question: the two answered are kept as they
    # were, and only the third is asked.
    again = iesr.bench(**{**args, "limit": 3}, resume=True)
    assert len(again["report"]["questions"]) == 3
    assert (out / "predictions.jsonl").read_text().startswith(predictions)
