"""The session layer's own promises (issue 15), against the tests' own legacy servers: the cancel
budget of ``cancel_on_timeout``, one deprecation warning per client, one owner per message kind,
and the agreement published whole.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._session._dispatch import Dispatcher
from tests.session.test_issue15_regressions import TRANSPORTS, Legacy, servers  # noqa: F401  (the fixture)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cancel_on_timeout_spends_its_budget_and_no_more(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that never answers tasks/cancel: the wait gives the cancel `CANCEL_BUDGET` (the
    RequestTimeout that ends it names that limit), not the client's timeout, and says the task
    was not cancelled.
    """
    client = servers(transport).client(timeout=None)  # no client limit: only the budget bounds it
    task = mt.call_tool(client, "deaf")
    assert isinstance(task, mt.Status)
    with caplog.at_level(logging.WARNING, logger="mcp_tasks"), pytest.raises(mt.TaskTimeout) as timed_out:
        mt.wait_task(client, task, timeout=0.2, cancel_on_timeout=True)
    assert timed_out.value.cancelled is False
    warned = [r.getMessage() for r in caplog.records if "could not cancel" in r.getMessage()]
    assert len(warned) == 1 and f"{mt.CANCEL_BUDGET:g} s" in warned[0], warned


def test_a_server_request_has_one_owner_per_kind() -> None:
    dispatcher = Dispatcher(mt.InputHandlers())
    dispatcher.own_notifications("notifications/tasks/status", lambda method, params: None)
    with pytest.raises(ValueError, match="already have an owner"):
        dispatcher.own_notifications("notifications/tasks/status", lambda method, params: None)
    dispatcher.own_related_requests(lambda message: None)
    with pytest.raises(ValueError, match="already have an owner"):
        dispatcher.own_related_requests(lambda message: None)


def test_a_request_claimed_by_a_pending_request_goes_to_its_owner_first() -> None:
    answered: list[str] = []
    dispatcher = Dispatcher(mt.InputHandlers(form=lambda params: {"action": "decline"}))

    def owner(message: dict[str, Any]) -> dict[str, Any]:
        answered.append("owner")
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {}}}

    asked = {"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {"message": "?"}}

    def action(origin: object) -> object:
        response = dispatcher.receive(asked, origin=origin)
        assert response is not None
        return response["result"]["action"]

    dispatcher.claim(41, owner)
    assert action(41) == "accept"
    assert action(None) == "decline"  # no guessing
    dispatcher.release(41)
    assert action(41) == "decline"
    assert answered == ["owner"]


def test_sampling_and_roots_are_answered_with_one_deprecation_warning_per_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handlers = mt.InputHandlers(
        sampling=lambda params: {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
        roots=lambda params: {"roots": []},
    )
    sampling = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"messages": []}}
    roots = {"jsonrpc": "2.0", "id": 2, "method": "roots/list", "params": {}}
    with caplog.at_level(logging.WARNING, logger="mcp_tasks"):
        for dispatcher in (Dispatcher(handlers), Dispatcher(handlers)):  # two clients
            for _ in range(3):
                assert "result" in (dispatcher.receive(sampling) or {})
                assert "result" in (dispatcher.receive(roots) or {})
    warned = [r.getMessage() for r in caplog.records if "SEP-2577" in r.getMessage()]
    assert len(warned) == 4  # each kind once, for each client
    assert sum("sampling/createMessage" in w for w in warned) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_threads_making_the_first_call_at_once_share_one_handshake(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
) -> None:
    legacy = servers(transport)
    client = legacy.client()
    start = threading.Barrier(4)
    results: list[object] = []

    def first_call() -> None:
        start.wait()
        results.append(client.protocol_version)

    threads = [threading.Thread(target=first_call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["2025-11-25"] * 4
    assert client.channel.agreed is not None and client.channel.agreed.era == "legacy"
    # The server reports in order: once it has reported a later request, it has reported every
    # initialize it saw.
    client.list_tools()
    legacy.journal.wait_for(lambda event: event.get("method") == "tools/list", what="tools/list")
    initializes = legacy.journal.events(lambda event: event.get("event") == "initialize")
    assert len(initializes) == 1, initializes
