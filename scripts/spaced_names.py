#!/usr/bin/env python3
"""A copy of a Spider subset's databases whose names hold spaces, as many
real databases' do (`"Order Items"`, `"Unit Price"`): every table and
column name with an underscore gets a space instead, and the gold queries
of those databases are rewritten to quote the new names. The questions
stay the same, so a run on the copy pairs with a run on the originals.

Usage: scripts/spaced_names.py SPIDER_DIR SUBSET OUT_DIR

OUT_DIR gets `dev.json` (Spider's, those queries rewritten) and
`database/<db>/<db>.sqlite` for each database the subset's questions use;
run it with `iesr bench --dataset spider --data-dir OUT_DIR --subset SUBSET`.
"""
import json
import pathlib
import re
import shutil
import sqlite3
import sys

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def spaced(name):
    return name.replace("_", " ").strip() if "_" in name.strip("_") else name


def quoted(name):
    return '"' + name.replace('"', '""') + '"'


def respace_database(path):
    """Renames the tables and columns of the database at `path`; returns
    {old name lowercased: new name}."""
    conn = sqlite3.connect(path)
    renamed = {}
    tables = [t for (t,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        for column in [row[1] for row in conn.execute(f"PRAGMA table_info({quoted(table)})")]:
            new = spaced(column)
            if new != column:
                conn.execute(
                    f"ALTER TABLE {quoted(table)} RENAME COLUMN {quoted(column)} TO {quoted(new)}")
                renamed[column.lower()] = new
    for table in tables:
        new = spaced(table)
        if new != table:
            conn.execute(f"ALTER TABLE {quoted(table)} RENAME TO {quoted(new)}")
            renamed[table.lower()] = new
    conn.commit()
    conn.close()
    return renamed


def rewrite(sql, renamed):
    """`sql` with each renamed name outside string literals quoted anew."""
    out, i = [], 0
    while i < len(sql):
        c = sql[i]
        if c in "'\"":
            end = sql.find(c, i + 1)
            end = len(sql) - 1 if end < 0 else end
            out.append(sql[i:end + 1])
            i = end + 1
            continue
        match = WORD.match(sql, i)
        if match and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            word = match.group()
            out.append(quoted(renamed[word.lower()]) if word.lower() in renamed else word)
            i = match.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def subset_databases(spider, subset):
    """The databases the questions of `subset` ask about, sorted."""
    dev = json.loads((spider / "dev.json").read_text())
    return sorted({dev[i]["db_id"] for i in json.loads(subset.read_text())["indices"]})


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    spider, subset, out = (pathlib.Path(a) for a in sys.argv[1:])
    dev = json.loads((spider / "dev.json").read_text())
    renamed = {}
    for db in subset_databases(spider, subset):
        target = out / "database" / db / f"{db}.sqlite"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spider / "database" / db / f"{db}.sqlite", target)
        renamed[db] = respace_database(target)
    for record in dev:
        if record["db_id"] in renamed:
            record["query"] = rewrite(record["query"], renamed[record["db_id"]])
    (out / "dev.json").write_text(json.dumps(dev))


if __name__ == "__main__":
    main()
