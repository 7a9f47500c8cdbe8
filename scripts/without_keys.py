#!/usr/bin/env python3
"""A copy of a Spider subset's databases that declare no foreign keys, as
many real databases do (tables loaded from files, or made by programs
that keep the links in their code): each table is created again with its
columns, types and primary key and its rows, without REFERENCES clauses.
The questions and gold queries stay the same, so a run on the copy pairs
with a run on the originals.

Usage: scripts/without_keys.py [--no-primary-keys] SPIDER_DIR SUBSET OUT_DIR

`--no-primary-keys` drops the primary keys too, as a program that writes
data frames to SQLite leaves its tables.

OUT_DIR gets `dev.json` (Spider's) and `database/<db>/<db>.sqlite` for
each database the subset's questions use; run it with
`iesr bench --dataset spider --data-dir OUT_DIR --subset SUBSET`.
"""
import json
import pathlib
import sqlite3
import sys

from spaced_names import quoted, subset_databases


def table_without_keys(conn, table, primary_keys):
    """`CREATE TABLE` for `table` as `conn` holds it, without foreign keys
    (and without its primary key unless `primary_keys`)."""
    columns = conn.execute(f"PRAGMA table_info({quoted(table)})").fetchall()
    keys = [name for (_, name, _, _, _, pk) in sorted(columns, key=lambda c: c[5]) if pk]
    parts = [f"{quoted(name)} {kind}".rstrip() for (_, name, kind, _, _, _) in columns]
    if keys and primary_keys:
        parts.append("PRIMARY KEY (" + ", ".join(quoted(k) for k in keys) + ")")
    return f"CREATE TABLE {quoted(table)} ({', '.join(parts)})"


def copy_without_keys(source, target, primary_keys):
    original = sqlite3.connect(source)
    tables = [t for (t,) in original.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    statements = [table_without_keys(original, t, primary_keys) for t in tables]
    original.close()
    conn = sqlite3.connect(target)
    for statement in statements:
        conn.execute(statement)
    conn.execute("ATTACH DATABASE ? AS original", (str(source),))
    for table in tables:
        conn.execute(f"INSERT INTO main.{quoted(table)} SELECT * FROM original.{quoted(table)}")
    conn.commit()
    conn.execute("DETACH DATABASE original")
    conn.close()


def main():
    args = sys.argv[1:]
    primary_keys = "--no-primary-keys" not in args
    args = [a for a in args if a != "--no-primary-keys"]
    if len(args) != 3:
        sys.exit(__doc__)
    spider, subset, out = (pathlib.Path(a) for a in args)
    for db in subset_databases(spider, subset):
        target = out / "database" / db / f"{db}.sqlite"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        copy_without_keys(spider / "database" / db / f"{db}.sqlite", target, primary_keys)
    (out / "dev.json").write_text((spider / "dev.json").read_text())


if __name__ == "__main__":
    main()
