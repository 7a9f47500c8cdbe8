"""iesr: answers questions over structured data with verified SQL search.

    import iesr
    engine = iesr.Engine("concert_singer.sqlite", model="qwen2.5-coder-0.5b-instruct")
    answer = engine.answer("How many singers are there?")
    answer["sql"], answer["result"]["rows"], answer["confidence"]

Results are plain dicts with the keys of `iesr search --json`. The model is
a name from `iesr model list` (pulled on first use, checked by sha256), a
GGUF file, or a Hugging Face checkpoint folder.
"""

import json
import os

from . import _iesr
from ._iesr import IesrError

__all__ = ["Engine", "IesrError", "bench"]


class Engine:
    """One SQLite database, one model and one method.

    method: "greedy", "sc" (self-consistency), "iesr" (the tree search) or
    "read"; by default the search, on a CPU with greedy's query
    answering alone when the model is sure of it (as `iesr search`).
    budget: samples (sc) or rollouts (iesr); the method's default if None.
    device: "cpu", or "cuda:N" in a build with CUDA.
    """

    def __init__(self, db, model=None, method=None, budget=None, device="cpu"):
        self._engine = _iesr.Engine(os.fspath(db), model, method, budget, device)

    def answer(self, question, hint=None, trace=True):
        """The chosen query, its result, confidence, cost and trace."""
        return json.loads(self._engine.answer(question, hint, trace))

    def schema(self):
        """The annotated schema the model sees, and its tables as data."""
        return json.loads(self._engine.schema())

    def sql(self, sql, max_rows=100):
        """Runs one read query under the engine's time, row and memory limits."""
        return json.loads(self._engine.sql(sql, max_rows))


def bench(dataset, data_dir, out, model=None, method="greedy", budget=None,
          subset=None, split="all", db=None, limit=None, resume=False,
          device="cpu"):
    """Runs a benchmark as `iesr bench` does; returns its summary.

    Predictions and traces are written under `out`; with resume=True a run
    that stopped goes on from where it was.
    """
    return json.loads(_iesr.bench(
        dataset, os.fspath(data_dir), os.fspath(out), model, method, budget,
        None if subset is None else os.fspath(subset), split, db, limit,
        resume, device))
