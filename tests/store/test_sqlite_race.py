import sqlite3
from pathlib import Path

import mcp_tasks as mt
from mcp_tasks._store._sqlite_file import SCHEMA, check_layout


def test_a_store_made_by_another_process_between_two_reads_is_a_store(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    path.touch()
    db = sqlite3.connect(path, isolation_level=None)
    seen: list[str] = []

    def made_between(sql: str) -> None:
        seen.append(sql)
        if len(seen) == 2:  # another process makes the store between check_layout's two reads
            mt.SqliteTaskStore(path).close()

    db.set_trace_callback(made_between)
    try:
        assert check_layout(db, path) == SCHEMA
    finally:
        db.close()
