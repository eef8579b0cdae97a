"""What only the PostgreSQL store promises, on a real PostgreSQL (tests/pg.py; the contract tests
run on it in tests/store/test_store.py): its tables in a versioned schema of their own, created in one
transaction; errors that name the server and never the password; the database's clock for leases;
`open_store` and the CLI's ``--store`` taking its URL.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks._store import new_holder, store_deadline
from tests.conftest import ROOT, Background, eventually
from tests.pg import PASSWORD, Cluster
from tests.store.test_store import TASK, ref, working


def tables(url: str, schema: str = "mcp_tasks") -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (schema,)
        )
        return [row[0] for row in rows]


def schemas(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1")]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# -- its tables ------------------------------------------------------------------------------------


def test_its_tables_are_made_once_in_a_schema_of_their_own(pg_url: str) -> None:
    with mt.PostgresTaskStore(pg_url) as store:
        store.record(ref())
    assert tables(pg_url) == ["answers", "intents", "leases", "tasks", "version"]
    with mt.PostgresTaskStore(pg_url) as again, mt.PostgresTaskStore(pg_url, schema="other_app") as other:
        assert again.get(TASK) == ref() and other.get(TASK) is None  # each schema its own store
    assert "other_app" in schemas(pg_url)
    assert repr(again) == f"<PostgresTaskStore {again.server} schema=mcp_tasks>" and PASSWORD not in repr(again)
    for bad in ("", "1abc", 'x"; DROP TABLE y; --', "a" * 64):
        with pytest.raises(ValueError, match="schema"):
            mt.PostgresTaskStore(pg_url, schema=bad)


def test_stores_opened_at_once_make_the_tables_once(pg_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys, mcp_tasks as mt; mt.PostgresTaskStore(sys.argv[1]).close()"
    opening = [
        subprocess.Popen([sys.executable, "-c", code, pg_url], env=env, stderr=subprocess.PIPE) for _ in range(4)
    ]
    errors = [p.communicate()[1] for p in opening]
    assert [p.returncode for p in opening] == [0] * 4, errors
    assert tables(pg_url) == ["answers", "intents", "leases", "tasks", "version"]


def test_closed_it_says_so_and_leaves_no_thread(pg_url: str) -> None:
    store = mt.PostgresTaskStore(pg_url)
    store.record(ref())
    store.close()
    store.close()  # twice is fine
    with pytest.raises(mt.StoreError, match="closed"):
        store.get(TASK)


FORKED = """
import os, sys
import mcp_tasks as mt

store = mt.PostgresTaskStore(sys.argv[1])
store.record(mt.TaskRef("http://127.0.0.1:9/mcp", "parent"))  # the parent's pool is in use
children = []
for n in range(3):  # as a web server forks its workers after the app has loaded
    pid = os.fork()
    if pid == 0:
        for i in range(30):
            store.record(mt.TaskRef("http://127.0.0.1:9/mcp", f"child-{n}-{i}"))
            assert store.get(f"child-{n}-{i}") is not None
        store.close()
        os._exit(0)
    children.append(pid)
for i in range(30):  # the parent goes on meanwhile, on its own connections
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", f"parent-{i}"))
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
print(codes, len(store.unfinished()), flush=True)
store.close()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_process_gets_connections_of_its_own(pg_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", FORKED, pg_url], capture_output=True, text=True, env=env, timeout=600
    )  # the timeout bounds a hang only (a child on its parent's connections hangs)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("]")[0] == "[0, 0, 0" and done.stdout.split()[-1] == str(1 + 3 * 30 + 30)


# -- bad input -------------------------------------------------------------------------------------


def test_a_server_that_cannot_be_reached_is_named_never_the_password() -> None:
    port = closed_port()
    url = f"postgresql://ada:{PASSWORD}@127.0.0.1:{port}/inventory"
    with pytest.raises(mt.StoreError) as raised:
        mt.PostgresTaskStore(url, connect_timeout=5)
    said = str(raised.value)
    assert f"127.0.0.1:{port}/inventory" in said and "cannot open it" in said
    assert PASSWORD not in said and raised.value.__cause__ is None
    # libpq's text spans lines ("Connection refused\n\tIs the server running"): one line, never "\n\t"
    assert "Connection refused Is the server running" in said and "\n" not in said and "\t" not in said


def test_a_connection_string_that_cannot_be_read_is_not_shown() -> None:
    with pytest.raises(mt.StoreError) as raised:
        mt.PostgresTaskStore(f"host=127.0.0.1 password={PASSWORD} oops")
    assert "cannot be read" in str(raised.value) and PASSWORD not in str(raised.value)
    with pytest.raises(mt.StoreError) as raised:
        mt.PostgresTaskStore(f"postgresql://ada:{PASSWORD}@127.0.0.1:notaport/db")
    assert "127.0.0.1:notaport/db" in str(raised.value) and PASSWORD not in str(raised.value)


def test_a_wrong_password_or_a_role_without_rights_is_named(pg_cluster: Cluster, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    with pytest.raises(mt.StoreError) as raised:
        mt.PostgresTaskStore(pg_cluster.url(database, password="not-" + PASSWORD))
    assert f"127.0.0.1:{pg_cluster.port}/{database}" in str(raised.value) and PASSWORD not in str(raised.value)
    role_password = "role-secret-8c1d"
    pg_cluster.sql(
        f"DROP ROLE IF EXISTS limited_{database}; CREATE ROLE limited_{database} LOGIN PASSWORD '{role_password}'"
    )
    limited = pg_cluster.url(database, user=f"limited_{database}", password=role_password)
    with pytest.raises(mt.StoreError, match=r"role may not") as refused:
        mt.PostgresTaskStore(limited)  # no CREATE on the database: it cannot make its schema
    assert f"/{database}" in str(refused.value) and role_password not in str(refused.value)
    assert "mcp_tasks" not in schemas(pg_url)  # nothing made


def test_a_failure_midway_leaves_nothing_half_created(pg_cluster: Cluster, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    pg_cluster.sql(
        "CREATE FUNCTION no_index() RETURNS event_trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'no indexes today'; END $$; "
        "CREATE EVENT TRIGGER no_index ON ddl_command_start WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION no_index()",
        database,
    )
    with pytest.raises(mt.StoreError, match="no indexes today"):
        mt.PostgresTaskStore(pg_url)  # the schema and two tables were made before the first index
    assert "mcp_tasks" not in schemas(pg_url)
    pg_cluster.sql("DROP EVENT TRIGGER no_index", database)
    with mt.PostgresTaskStore(pg_url) as store:
        store.record(ref())


def test_a_schema_of_a_newer_version_or_of_another_program_is_named_and_kept(pg_url: str) -> None:
    with mt.PostgresTaskStore(pg_url) as store:
        store.record(ref())
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE mcp_tasks.version SET version = 99")
    with pytest.raises(mt.StoreError, match=r"newer mcp_tasks \(version 99; this one reads 2\)"):
        mt.PostgresTaskStore(pg_url)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM mcp_tasks.tasks").fetchone() == (1,)  # nothing lost
        conn.execute("CREATE SCHEMA billing; CREATE TABLE billing.tasks (id int); INSERT INTO billing.tasks VALUES (7)")
    with pytest.raises(mt.StoreError, match=r"schema billing .*is not a task store's.*left as it is"):
        mt.PostgresTaskStore(pg_url, schema="billing")
    assert tables(pg_url, "billing") == ["tasks"]


def test_a_schema_of_version_1_is_migrated_to_keep_intents_and_keeps_its_tasks(pg_url: str) -> None:
    with mt.PostgresTaskStore(pg_url) as store:
        store.record(ref())
    with psycopg.connect(pg_url) as conn:  # as mcp_tasks made it before intents
        conn.execute("DROP TABLE mcp_tasks.intents; UPDATE mcp_tasks.version SET version = 1")
    with mt.PostgresTaskStore(pg_url) as store:
        assert store.get(TASK) == ref()
        assert store.record_intent(mt.Intent("http://h/mcp", "k", "export", "d" * 64)) is None
        assert [intent.key for intent in store.unrecorded_intents()] == ["k"]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM mcp_tasks.version").fetchone() == (2,)


def test_a_call_kept_waiting_by_a_lock_ends_at_the_callers_deadline(
    pg_store: mt.PostgresTaskStore, pg_url: str
) -> None:
    pg_store.record(ref())
    assert pg_store.acquire(TASK, new_holder(), 600)
    with psycopg.connect(pg_url) as other:
        other.execute("SELECT * FROM mcp_tasks.leases FOR UPDATE")  # held until this block ends
        with store_deadline(time.monotonic() + 0.3), pytest.raises(mt.StoreError) as raised:
            pg_store.acquire(TASK, new_holder(), 600)
        other.rollback()
    assert "did not answer in time" in str(raised.value) and pg_store.server in str(raised.value)
    assert pg_store.get(TASK) == ref()  # the store is fine after


def test_a_takeover_committed_while_a_fenced_write_waits_refuses_the_write(
    pg_store: mt.PostgresTaskStore, pg_url: str
) -> None:
    """The fence is decided in the write's own transaction: a takeover that commits while the
    write waits for the lease row makes the write refused, not written."""
    one, two = new_holder(), new_holder()
    pg_store.record(ref())
    assert pg_store.acquire(TASK, one, 600)
    with psycopg.connect(pg_url) as other:
        other.execute("UPDATE mcp_tasks.leases SET holder = %s WHERE task_id = %s", (two, TASK))  # not committed
        writing = Background(lambda: pg_store.write_answers(TASK, {"k": {"action": "accept"}}, holder=one))

        def blocked() -> bool:
            with psycopg.connect(pg_url) as probe:
                row = probe.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'"
                ).fetchone()
                return row is not None and row[0] == 1

        eventually(blocked, timeout=60, message="the fenced write waiting for the lease row")
        other.commit()
    with pytest.raises(mt.StoreError, match="does not hold its lease"):
        writing.result()
    assert pg_store.unacknowledged(TASK) == {}
    pg_store.write_answers(TASK, {"k": {"action": "accept"}}, holder=two)


def test_old_finished_tasks_are_pruned_and_newer_records_kept(pg_url: str) -> None:
    with mt.PostgresTaskStore(pg_url, keep_finished=1e-6) as store:
        store.record(ref("done"))
        store.update("done", working("done", mt.TaskState.COMPLETED))
        store.write_answers("done", {"a": {"x": 1}})
        assert store.acquire("done", new_holder(), 600)
        store.record(ref("running"))
        for n in range(64):  # pruning runs now and then, not on every write
            store.record(ref(f"more-{n}"))
        assert store.get("done") is None and store.unacknowledged("done") == {}
        assert store.get("running") is not None
        newer = json.dumps({**json.loads(ref("running").to_json()), "format": 2})
        with psycopg.connect(pg_url) as conn:
            conn.execute("UPDATE mcp_tasks.tasks SET ref = %s WHERE task_id = 'running'", (newer,))
            assert conn.execute("SELECT count(*) FROM mcp_tasks.leases").fetchone() == (0,)
        with pytest.raises(mt.StoreError, match=r"has a record it cannot read.*newer mcp_tasks"):
            store.get("running")
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT ref FROM mcp_tasks.tasks WHERE task_id = 'running'").fetchone() == (newer,)


# -- the database's clock --------------------------------------------------------------------------


def test_leases_run_on_the_databases_clock(pg_store: mt.PostgresTaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    pg_store.record(ref())
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 7200)  # this machine's clock two hours behind
    one = new_holder()
    assert pg_store.acquire(TASK, one, 600)
    monkeypatch.setattr(time, "time", lambda: real() + 7200)  # another machine's, two hours ahead
    assert not pg_store.acquire(TASK, new_holder(), 600) and pg_store.claim(new_holder(), 600, 5) == []
    pg_store.write_answers(TASK, {"k": {"action": "accept"}}, holder=one)  # still its lease
    assert pg_store.unacknowledged(TASK) == {"k": {"action": "accept"}}


# -- open_store and the CLI ------------------------------------------------------------------------


def test_open_store_takes_paths_sqlite_and_postgresql_urls(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "platform", "linux")
    default = mt.open_store()
    assert isinstance(default, mt.SqliteTaskStore) and default.path == mt.SqliteTaskStore().path
    for location in (tmp_path / "a.db", str(tmp_path / "a.db"), f"sqlite://{tmp_path}/a.db"):
        opened = mt.open_store(location, lease_ttl=40)
        assert isinstance(opened, mt.SqliteTaskStore) and opened.path == tmp_path / "a.db" and opened.lease_ttl == 40
    for location in (pg_url, pg_url.replace("postgresql://", "postgres://")):
        with mt.open_store(location) as store:
            assert isinstance(store, mt.PostgresTaskStore)
            store.record(ref())
    monkeypatch.setenv("MCP_TASKS_STORE", pg_url)
    with mt.open_store() as named:
        assert isinstance(named, mt.PostgresTaskStore) and named.get(TASK) == ref()
    with pytest.raises(mt.StoreError, match=r"open it with mt\.open_store"):
        mt.SqliteTaskStore()  # a PostgreSQL URL is no file name
    monkeypatch.setenv("MCP_TASKS_STORE", f"sqlite://{tmp_path}/b.db")
    assert mt.open_store().path == tmp_path / "b.db"  # type: ignore[union-attr]
    for bad in ("mysql://db/x", "sqlite://", f"sqlite://{tmp_path}/c.db?mode=ro"):
        with pytest.raises(ValueError):
            mt.open_store(bad)


def test_the_cli_lists_a_postgresql_store(pg_url: str) -> None:
    with mt.open_store(pg_url) as store:
        store.record(ref())
        store.update(TASK, working())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    listed = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", "tasks", "--store", pg_url], capture_output=True, text=True, env=env
    )
    assert listed.returncode == 0, listed.stderr
    assert short_id(TASK) in listed.stdout and "export" in listed.stdout and "working" in listed.stdout
    env["MCP_TASKS_STORE"] = pg_url.replace(PASSWORD, "wrong")
    failed = subprocess.run([sys.executable, "-m", "mcp_tasks", "tasks"], capture_output=True, text=True, env=env)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr and "127.0.0.1" in failed.stderr
    assert "wrong" not in failed.stderr


def test_the_cli_closes_the_postgresql_store_it_opened(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_tasks import cli

    with mt.open_store(pg_url) as store:
        store.record(ref())
    assert cli.main(["tasks", "--store", pg_url]) == 0
    assert short_id(TASK) in capsys.readouterr().out
    assert [t.name for t in threading.enumerate() if t.name.startswith("mcp_tasks-postgres")] == []


def test_without_psycopg_the_core_works_and_the_store_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "import mcp_tasks as mt\n"
        "mt.open_store(sys.argv[1]).record(mt.TaskRef('http://127.0.0.1:9/mcp', 't-1'))\n"
        "try:\n"
        "    mt.open_store('postgresql://ada@127.0.0.1:9/db')\n"
        "except mt.StoreError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.db")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "pip install 'mcp_tasks[postgres]'" in done.stdout


@pytest.mark.parametrize("batch", ["renew_many", "release_many", "finish_many"])
def test_a_batch_of_leases_locks_them_in_the_order_of_their_ids(pg_store: Any, pg_url: str, batch: str) -> None:
    """Two batches of one process (its renewal and a round of ends) or of two never deadlock:
    each locks the lease rows in the order of their ids, whatever order they are stored or given
    in. Held up at t-2, this one holds t-1 and not yet t-3.
    """
    holder = new_holder()
    for task_id in ("t-3", "t-2", "t-1"):  # stored in the reverse of their order
        pg_store.record(mt.TaskRef("http://127.0.0.1:9/mcp", task_id))
        assert pg_store.acquire(task_id, holder, 600)
    pairs = [("t-3", holder), ("t-2", holder), ("t-1", holder)]
    done = working("x", mt.TaskState.COMPLETED)
    calls = {
        "renew_many": lambda: pg_store.renew_many(pairs, 600),
        "release_many": lambda: pg_store.release_many(pairs),
        "finish_many": lambda: pg_store.finish_many([(task_id, done, holder) for task_id, _ in pairs]),
    }
    leases = '"mcp_tasks".leases'
    with psycopg.connect(pg_url) as blocker, psycopg.connect(pg_url, autocommit=True) as probe:
        blocker.execute(f"SELECT 1 FROM {leases} WHERE task_id = 't-2' FOR UPDATE")
        running = Background(calls[batch])
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        eventually(lambda: (probe.execute(waiting).fetchone() or [0])[0] == 1, 30, "the batch waiting at t-2")

        def locked(task_id: str) -> bool:
            try:
                probe.execute(f"SELECT 1 FROM {leases} WHERE task_id = %s FOR UPDATE NOWAIT", (task_id,))
            except psycopg.errors.LockNotAvailable:
                return True
            return False

        assert locked("t-1") and not locked("t-3")
        blocker.rollback()
        running.result()
