"""What the scripts that make test databases share: the folder layout
`iesr bench --dataset spider --data-dir OUT_DIR` reads, and checks that
every gold query answers something a run can be scored against.

Each script calls `out_dir(__doc__)` for its one argument, `database(out,
name)` for every database it fills, and `write_questions(out, questions)`
once at the end.
"""
import json
import pathlib
import sqlite3
import sys


def out_dir(usage):
    """The one argument, OUT_DIR; anything else exits with the usage text."""
    if len(sys.argv) != 2:
        sys.exit(usage)
    return pathlib.Path(sys.argv[1])


def database_path(out, name):
    return out / "database" / name / f"{name}.sqlite"


def database(out, name):
    """A new, empty database at OUT_DIR/database/NAME/NAME.sqlite."""
    path = database_path(out, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    return sqlite3.connect(path)


def write_questions(out, questions):
    """Check the gold query of each (database, question, gold query) triple
    and write them all as OUT_DIR/dev.json, in Spider's record layout.

    A gold query must return a row, and one asking for the top group by a
    count (`ORDER BY COUNT(*) DESC LIMIT 1`) must have a single top group:
    otherwise a right answer could be scored wrong.
    """
    records = [{"db_id": db, "question": q, "query": sql} for db, q, sql in questions]
    connections = {}
    for record in records:
        db = record["db_id"]
        if db not in connections:
            connections[db] = sqlite3.connect(database_path(out, db))
        conn, query = connections[db], record["query"]
        assert conn.execute(query).fetchall(), f"no rows: {record['question']}"
        top = "ORDER BY COUNT(*) DESC LIMIT 1"
        if query.endswith(top):
            # The count goes last in the select list, so `GROUP BY 1` still
            # names the first column.
            counted = query.replace(top, "ORDER BY COUNT(*) DESC").replace(" FROM ", ", COUNT(*) FROM ", 1)
            counts = conn.execute(counted).fetchall()
            assert len(counts) < 2 or counts[0][-1] > counts[1][-1], f"tie at the top: {record['question']}"
    (out / "dev.json").write_text(json.dumps(records, indent=1) + "\n")
