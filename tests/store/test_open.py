"""`open_store` reads one string as libpq and the file system would: libpq key=value pairs are a
PostgreSQL store (never a SQLite file named after them, password included), a path is a file, and
anything else is refused without being quoted. The pairs are read as libpq reads them (compared
with libpq's own parser, through psycopg).
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import mcp_tasks as mt
from mcp_tasks._store._conninfo import parse_conninfo
from mcp_tasks._store._location import store_location
from tests.pg import PASSWORD, Cluster
from tests.store.test_postgres import closed_port
from tests.store.test_store import TASK, ref

SECRET = "s3cret-Kv9-pw"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, no store named in the environment."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    return folder


def test_libpq_key_value_pairs_open_the_postgresql_store(pg_cluster: Cluster, workdir: Path) -> None:
    database = pg_cluster.new_database()
    pairs = f"host=127.0.0.1 port={pg_cluster.port} user=postgres password={PASSWORD} dbname={database}"
    spaced = f"  host = 127.0.0.1\tport= {pg_cluster.port} user =postgres password = '{PASSWORD}' dbname={database} "
    for location in (pairs, spaced, f" {pg_cluster.url(database)}\n"):  # pasted with spaces around: still a URL
        with mt.open_store(location) as store:
            assert isinstance(store, mt.PostgresTaskStore)
            store.record(ref())
            for shown in (repr(store), str(store), store.server):
                assert PASSWORD not in shown and f"127.0.0.1:{pg_cluster.port}/{database}" in shown
    assert list(workdir.iterdir()) == []  # no file named after the string, password and all


def test_the_environment_names_it_alike_and_a_sqlite_store_refuses_it(
    pg_cluster: Cluster, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = pg_cluster.new_database()
    monkeypatch.setenv("MCP_TASKS_STORE", f"dbname={database} host=127.0.0.1 port={pg_cluster.port} "
                       f"user=postgres password={PASSWORD}")  # fmt: skip
    with mt.open_store() as store:
        assert isinstance(store, mt.PostgresTaskStore) and store.unfinished() == []
    with pytest.raises(mt.StoreError, match=r"no SQLite file: open it with mt\.open_store") as refused:
        mt.SqliteTaskStore()
    assert PASSWORD not in str(refused.value)
    assert list(workdir.iterdir()) == []


def test_values_are_read_as_libpq_reads_them(pg_cluster: Cluster, workdir: Path) -> None:
    """A quoted password with a space, a quote and a backslash, as libpq escapes them, connects."""
    database = pg_cluster.new_database()
    role, password = f"r_{database}", "pw with space's \\ end"
    pg_cluster.sql(f"CREATE ROLE {role} LOGIN PASSWORD '{password.replace(chr(39), chr(39) * 2)}'")
    pg_cluster.sql(f"GRANT CREATE ON DATABASE {database} TO {role}")
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    location = f"host=127.0.0.1 port={pg_cluster.port} user={role} dbname={database} password='{quoted}'"
    with mt.open_store(location) as store:
        store.record(ref())
        assert store.get(TASK) == ref() and password not in repr(store)
    assert list(workdir.iterdir()) == []


def test_a_server_that_cannot_be_reached_is_named_never_the_password(workdir: Path) -> None:
    port = closed_port()
    with pytest.raises(mt.StoreError) as raised:
        mt.open_store(f"host=127.0.0.1 port={port} user=ada password={SECRET} dbname=inventory")
    said = str(raised.value)
    assert f"127.0.0.1:{port}/inventory" in said and SECRET not in said and raised.value.__cause__ is None
    with pytest.raises(mt.StoreError) as raised:  # a connection string as the database's name: not shown
        mt.open_store(f"host=127.0.0.1 port={port} dbname='postgresql://ada:{SECRET}@db/x'")
    assert f"127.0.0.1:{port}" in str(raised.value) and SECRET not in str(raised.value)
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize(
    "location",
    [
        f"mysql://ada:{SECRET}@db/app",
        f"redis://{SECRET}",
        f"x-custom+tls://{SECRET}",
        f"hots=db password={SECRET}",  # a keyword misspelled
        f"HOST=db password={SECRET}",  # keywords are lower case
        f"host=db password={SECRET} more",  # a word without =
        f"host=db password='{SECRET}",  # a quote left open
        f"host=db password={SECRET} words=x",  # an unquoted space: part of the password looks like a keyword
        f"tasks={SECRET}.db",  # a file name starting with word=: written ./tasks=….db
    ],
)
def test_a_location_neither_path_nor_known_url_is_refused_unshown(
    location: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError) as raised:
        mt.open_store(location)
    said = str(raised.value)
    assert SECRET not in said and "words" not in said
    assert "postgresql://" in said and "key=value" in said and "path" in said and "not shown" in said
    monkeypatch.setenv("MCP_TASKS_STORE", location)
    with pytest.raises(ValueError) as raised:
        mt.open_store()
    assert SECRET not in str(raised.value)
    with pytest.raises(mt.StoreError) as refused:
        mt.SqliteTaskStore()
    assert SECRET not in str(refused.value) and "MCP_TASKS_STORE" in str(refused.value)
    assert list(workdir.iterdir()) == []


def test_a_misspelled_keyword_is_named_by_the_one_it_looks_like(workdir: Path) -> None:
    with pytest.raises(ValueError, match=r"did you mean dbname\?"):
        mt.open_store(f"host=db dbnmae=app password={SECRET}")


def test_what_is_a_path(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = workdir.parent / "home"
    monkeypatch.setenv("HOME", str(home))
    expected = {
        "plain.db": workdir / "plain.db",
        "./tasks=2.db": workdir / "tasks=2.db",  # word= with its folder: a file
        "runs/a=b.db": workdir / "runs" / "a=b.db",  # no keyword holds a /
        "my tasks.db": workdir / "my tasks.db",
        "~/t.db": home / "t.db",
        str(workdir / "abs.db"): workdir / "abs.db",
        f"sqlite://{workdir}/url.db": workdir / "url.db",
    }
    for location, path in expected.items():
        with mt.open_store(location) as store:
            assert isinstance(store, mt.SqliteTaskStore) and store.path.absolute() == path, location
    with mt.open_store(workdir / "host=db dbname=x") as store:  # a path object is a path, whatever its name
        assert isinstance(store, mt.SqliteTaskStore) and store.path == workdir / "host=db dbname=x"


@pytest.mark.parametrize(
    "text",
    [
        "host=db port=5432 dbname=app",
        "  host = db\tport= 5432\n dbname =app  ",
        "password='a b\\'c\\\\d' host=x",
        "password=a\\ b host=x",
        "host= port=5",  # libpq: host is "port=5"
        "host='' dbname=x",
        "host='a'port=5",
        "password=end\\",
        "dbname='postgresql://u:pw@h/d'",
    ],
)
def test_the_pairs_are_those_libpq_reads(text: str) -> None:
    assert dict(parse_conninfo(text)) == conninfo_to_dict(text)


@pytest.mark.parametrize("text", ["host=a oops", "host='a", "host=a =b", "host=a port", "host=a tty=x"])
def test_what_libpq_refuses_is_refused(text: str) -> None:
    with pytest.raises(psycopg.Error):
        conninfo_to_dict(text)
    with pytest.raises(ValueError, match="not shown"):
        store_location(text)
