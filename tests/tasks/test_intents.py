"""No task starts unrecorded: on a store-backed client a ``tools/call`` is recorded (an intent)
before it is sent, so a store that cannot take it fails the call with nothing sent; the task id
(or the immediate result) joins the intent when the answer comes, and a process that dies in
between leaves an intent listed as "started, id never recorded", never silence. A caller's key
(``key=``) is an idempotency key: a second call under it never calls the tool again. On SQLite and
a real PostgreSQL, against the reference server over HTTP (which counts its ``tools/call``).
"""

from __future__ import annotations

import io
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks.cli._store import list_tasks
from mcp_tasks.server import HttpServer, Server, serve_http
from tests.fixtures.servers import make_server
from tests.memory_store import MemoryTaskStore
from tests.pg import running_cluster


class Served:
    """The reference server over HTTP, and the ``tools/call`` it received (but the tests' own
    ``release`` of a gate).
    """

    def __init__(self) -> None:
        self.server: Server = make_server()
        self.http: HttpServer = serve_http(self.server)
        self.url = self.http.url
        self.calls: list[str] = []
        previous = self.server.on_request

        def count(method: str, params: dict[str, Any]) -> None:
            if method == "tools/call" and params.get("name") != "release":
                self.calls.append(str(params.get("name")))
            if previous is not None:
                previous(method, params)

        self.server.on_request = count

    def close(self) -> None:
        self.http.close()
        self.server.close()


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        yield mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")
    else:
        yield request.getfixturevalue("pg_store")


def release(served: Served) -> None:
    with mt.Client.http(served.url) as plain:
        plain.call_tool("release", {"gate": "slow"})


# -- the store down: nothing is sent ---------------------------------------------------------------


def test_a_sqlite_store_that_cannot_be_written_fails_the_call_before_it_is_sent(served: Served, tmp_path: Path) -> None:
    folder = tmp_path / "store"
    store = mt.SqliteTaskStore(folder / "tasks.sqlite3")
    with mt.Client.http(served.url, store=store) as client:
        assert mt.server_supports(client)  # negotiated while the store was fine
        shutil.rmtree(folder)
        folder.write_text("a file where the store's folder was")  # unwritable as root too
        with pytest.raises(mt.StoreError, match="cannot use the task store"):
            mt.call_tool(client, "slow_compute", {"block": True}, timeout=5)
        with pytest.raises(mt.StoreError):
            mt.submit(client, "slow_compute", {"block": True}, timeout=5)
    assert served.calls == []  # nothing reached the server


def test_a_postgres_store_whose_server_is_down_fails_the_call_before_it_is_sent(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_cluster() as cluster:
        store = mt.PostgresTaskStore(cluster.url(cluster.new_database()), connect_timeout=1)
        try:
            with mt.Client.http(served.url, store=store) as client:
                assert mt.server_supports(client)
                cluster.stop()
                monkeypatch.setattr(cluster, "stop", lambda: None)  # stopped already
                with pytest.raises(mt.StoreError, match=r"PostgreSQL 127\.0\.0\.1"):
                    mt.call_tool(client, "slow_compute", {"block": True}, timeout=3)
                with pytest.raises(mt.StoreError):
                    mt.call_and_await(client, "greet", {"name": "Ada"}, call_opts={"timeout": 3})
        finally:
            store.close()
    assert served.calls == []


# -- the id joins the intent; a process that dies in between leaves it listed ------------------------


class LosesIds:
    """A store whose ``join_intent`` fails (a process killed between the call and its id's write)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.joins = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def join_intent(self, *args: Any, **kwargs: Any) -> None:
        self.joins += 1
        raise mt.StoreError("the task store: the process died before its id was written")


def test_a_call_whose_id_was_never_recorded_is_listed_as_started(
    served: Served, store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    dying = LosesIds(store)
    with mt.Client.http(served.url, store=dying) as client:
        task = mt.call_tool(client, "slow_compute", {"block": True}, key="order-7")
        assert isinstance(task, mt.Status)
    assert dying.joins >= 2  # tried again while the client lives and at close(), with a warning
    assert "could not record its id with its call" in caplog.text and task.task_id not in caplog.text
    # A new client, a new process: the call is not silent.
    (started,) = store.unrecorded_intents()
    assert (started.key, started.tool, started.task_id, started.recorded) == ("order-7", "slow_compute", None, False)
    assert store.unfinished() == []
    out = io.StringIO()
    assert list_tasks(store, out) == 1
    assert "started, id never recorded" in out.getvalue() and "order-7" in out.getvalue()
    out = io.StringIO()
    list_tasks(store, out, form="json")
    (listed,) = json.loads(out.getvalue())
    assert (listed["taskId"], listed["key"], listed["started"]) == (None, "order-7", "started, id never recorded")
    assert list(mt.adopt(store, timeout=1)) == []  # nothing adopt can follow, and no crash
    with (
        mt.Client.http(served.url, store=store) as again,
        pytest.raises(mt.OutcomeUnknown, match=r"'order-7'.*never recorded: its outcome is unknown"),
    ):
        mt.call_tool(again, "slow_compute", {"block": True}, key="order-7")
    assert served.calls == ["slow_compute"]  # not called again
    release(served)


def test_an_id_the_store_refused_is_recorded_at_the_next_call(served: Served, store: Any) -> None:
    class FailsOnce(LosesIds):
        def join_intent(self, *args: Any, **kwargs: Any) -> None:
            self.joins += 1
            if self.joins == 1:
                raise mt.StoreError("the task store: busy")
            self.inner.join_intent(*args, **kwargs)

    flaky = FailsOnce(store)
    with mt.Client.http(served.url, store=flaky) as client:
        first = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(first, mt.Status) and flaky.joins >= 1
        mt.call_tool(client, "greet", {"name": "Ada"})  # tries the refused join again first, if no retry has
        assert store.unrecorded_intents() == []
        assert [ref.task_id for ref in store.unfinished()] == [first.task_id]
    release(served)


# -- the caller's key ------------------------------------------------------------------------------


def test_a_key_already_recorded_follows_its_task_and_never_calls_again(served: Served, store: Any) -> None:
    with mt.Client.http(served.url, store=store) as client:
        first = mt.call_tool(client, "slow_compute", {"label": "x", "block": True}, key="order-7")
        again = mt.call_tool(client, "slow_compute", {"block": True, "label": "x"}, key="order-7")
        assert isinstance(first, mt.Status) and isinstance(again, mt.Status)
        assert again.task_id == first.task_id
    with mt.Client.http(served.url, store=store) as other:  # another process, the same store
        future = mt.submit(other, "slow_compute", {"label": "x", "block": True}, key="order-7")
        assert future.task_id == first.task_id
        release(served)
        assert future.result(timeout=30)["structuredContent"]["label"] == "x"
        result = mt.call_and_await(
            other, "slow_compute", {"label": "x", "block": True}, call_opts={"key": "order-7"}, timeout=30
        )
        assert result["structuredContent"]["label"] == "x"
    assert served.calls == ["slow_compute"]  # the tool ran once
    assert store.unfinished() == []


def test_a_key_answered_at_once_returns_its_kept_result(served: Served, store: Any) -> None:
    with mt.Client.http(served.url, store=store) as client:
        first = mt.call_tool(client, "greet", {"name": "Ada"}, key="hello-1")
    with mt.Client.http(served.url, store=store) as other:
        again = mt.call_tool(other, "greet", {"name": "Ada"}, key="hello-1")
        assert mt.submit(other, "greet", {"name": "Ada"}, key="hello-1").result(timeout=30) == first
    assert isinstance(first, dict) and again == first
    assert served.calls == ["greet"]


def test_a_key_used_for_another_call_is_a_value_error(served: Served, store: Any) -> None:
    with mt.Client.http(served.url, store=store) as client:
        mt.call_tool(client, "greet", {"name": "Ada"}, key="order-7")
        with pytest.raises(ValueError, match=r"'order-7' was used for another call.*other arguments") as other_args:
            mt.call_tool(client, "greet", {"name": "Secret-Grace"}, key="order-7")
        assert "Secret-Grace" not in str(other_args.value)
        with pytest.raises(ValueError, match="with the tool 'greet'"):
            mt.call_tool(client, "slow_compute", key="order-7")
    assert served.calls == ["greet"]


def test_a_call_the_server_refused_frees_its_key(served: Served, store: Any) -> None:
    with mt.Client.http(served.url, store=store) as client:
        with pytest.raises(mt.McpError):
            mt.call_tool(client, "no_such_tool", key="k")  # refused (-32602): nothing was made
        assert store.unrecorded_intents() == []
        greeted = mt.call_tool(client, "greet", {"name": "Ada"}, key="k")
        assert isinstance(greeted, dict) and greeted["content"][0]["text"] == "Hello, Ada!"


# -- a store of one's own without intents ----------------------------------------------------------


class NoIntents(MemoryTaskStore):
    record_intent = None  # type: ignore[assignment]


def test_a_store_without_intents_still_works_and_says_so_once(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    store = NoIntents()
    with caplog.at_level(logging.WARNING, "mcp_tasks"), mt.Client.http(served.url, store=store) as client:
        mt.call_tool(client, "greet", {"name": "Ada"})
        mt.call_tool(client, "greet", {"name": "Ada"})
        with pytest.raises(ValueError, match="key= needs a client with a task store that records intents"):
            mt.call_tool(client, "greet", {"name": "Ada"}, key="k")
    assert caplog.text.count("has no record_intent") == 1
    with mt.Client.http(served.url) as plain, pytest.raises(ValueError, match="this client has no store"):
        mt.call_tool(plain, "greet", {"name": "Ada"}, key="k")
