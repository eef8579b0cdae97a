"""The client core over every transport: envelope, discover, calls, input rounds, timeouts,
threads."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._wire import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION
from tests.conftest import Harness


def answers(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def test_discover_and_cached_capabilities(harness: Harness) -> None:
    client = harness.client()
    result = client.discover()
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert client.server_capabilities == result["capabilities"]
    assert client.server_capabilities == result["capabilities"]
    times = client.call_tool("stats", {"method": "server/discover"})["structuredContent"]["times"]
    assert len(times) == 1  # the property reused the first answer


def test_server_capabilities_discovers_once_on_first_use(harness: Harness) -> None:
    client = harness.client()
    assert "tools" in client.server_capabilities
    assert "tools" in client.server_capabilities
    times = client.call_tool("stats", {"method": "server/discover"})["structuredContent"]["times"]
    assert len(times) == 1


def test_call_tool_returns_the_call_tool_result(client: mt.Client) -> None:
    result = client.call_tool("greet", {"name": "Ada"})
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert result["resultType"] == "complete"


def test_every_request_carries_the_envelope_and_the_callers_meta_wins(harness: Harness) -> None:
    client = harness.client(
        client_capabilities={"experimental": {"x": {}}},
        input_handlers=mt.InputHandlers(form=answers, roots=lambda p: {"roots": []}),
        client_info={"name": "tests", "version": "9"},
    )
    meta = client.call_tool("echo_meta")["structuredContent"]["meta"]
    assert meta[META_PROTOCOL_VERSION] == "2026-07-28"
    assert meta[META_CLIENT_INFO] == {"name": "tests", "version": "9"}
    assert meta[META_CLIENT_CAPABILITIES] == {
        "experimental": {"x": {}},
        "elicitation": {"form": {}},
        "roots": {"listChanged": False},
    }
    mine = {META_CLIENT_INFO: {"name": "override", "version": "1"}, "com.example/trace": "abc"}
    meta = client.call_tool("echo_meta", meta=mine)["structuredContent"]["meta"]
    assert meta[META_CLIENT_INFO] == {"name": "override", "version": "1"}
    assert meta["com.example/trace"] == "abc"
    assert meta[META_PROTOCOL_VERSION] == "2026-07-28"


def test_client_capabilities_reflect_the_handlers() -> None:
    handlers = mt.InputHandlers(form=answers, url=answers, sampling=answers)
    caps = handlers.capabilities({"elicitation": {}})
    assert caps == {"elicitation": {"form": {}, "url": {}}, "sampling": {}}
    assert mt.InputHandlers(url=answers).capabilities() == {"elicitation": {"form": {}, "url": {}}}


def test_server_refuses_an_unsupported_version_and_a_missing_envelope(client: mt.Client) -> None:
    with pytest.raises(mt.McpError) as refused:
        client.call_tool("greet", {"name": "x"}, meta={META_PROTOCOL_VERSION: "1900-01-01"})
    assert refused.value.code == -32022
    assert refused.value.data == {"supported": ["2026-07-28"], "requested": "1900-01-01"}
    with pytest.raises(mt.McpError) as missing:
        client.request("tools/list", meta={META_CLIENT_CAPABILITIES: None})
    assert missing.value.code == -32602
    assert missing.value.kind == "protocol"


def test_unknown_and_removed_methods_are_method_not_found(client: mt.Client) -> None:
    for method in ("no/such", "tasks/list", "tasks/result"):
        with pytest.raises(mt.McpError) as error:
            client.request(method, {"taskId": "x"})
        assert error.value.code == -32601
        assert error.value.kind == "protocol"


def test_input_required_is_answered_by_the_form_handler(harness: Harness) -> None:
    seen = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params["message"])
        return answers(params)

    client = harness.client(input_handlers=mt.InputHandlers(form=form))
    result = client.call_tool("ask_sync", {"kinds": ["form"]})
    assert result["structuredContent"] == {"form": {"action": "accept", "content": {"name": "Ada"}}}
    assert seen == ["Your name?"]


def test_request_state_carries_earlier_answers_across_rounds(harness: Harness) -> None:
    client = harness.client(input_handlers=mt.InputHandlers(form=answers))
    result = client.call_tool("ask_twice")
    assert set(result["structuredContent"]) == {"first", "second"}


def test_answer_input_false_returns_the_input_required_result(harness: Harness) -> None:
    client = harness.client(client_capabilities={"roots": {}})
    result = client.call_tool("ask_sync", {"kinds": ["roots"]}, answer_input=False)
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {"roots": {"method": "roots/list"}}
    assert isinstance(result["requestState"], str)


def test_every_kind_reaches_its_handler(harness: Harness) -> None:
    sampling = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}
    handlers = mt.InputHandlers(
        form=answers,
        url=lambda p: {"action": "accept"},
        sampling=lambda p: sampling,
        roots=lambda p: {"roots": [{"uri": "file:///tmp/work", "name": "work"}]},
    )
    client = harness.client(input_handlers=handlers)
    result = client.call_tool("ask_sync", {"kinds": ["form", "url", "sampling", "roots"]})
    got = result["structuredContent"]
    assert got["url"] == {"action": "accept"}
    assert got["sampling"] == sampling
    assert got["roots"]["roots"][0]["uri"] == "file:///tmp/work"


@pytest.mark.parametrize(
    ("kind", "bad"),
    [
        ("form", {"action": "maybe"}),
        ("form", {"content": {}}),
        ("sampling", {"role": "assistant", "content": {"type": "text"}, "model": "m"}),
        ("roots", {"roots": [{"uri": "http://example.com"}]}),
        ("form", ["not", "a", "dict"]),
    ],
)
def test_a_handler_response_that_fails_its_check_is_not_sent(harness: Harness, kind: str, bad: Any) -> None:
    handlers = mt.InputHandlers(**{kind: lambda p: bad})
    client = harness.client(input_handlers=handlers)
    with pytest.raises(mt.McpError) as error:
        client.call_tool("ask_sync", {"kinds": [kind]})
    assert error.value.code == -32603
    assert error.value.kind == "execution"
    tag, key, reason, result = error.value.cause
    assert (tag, key) == ("input_handler", kind)
    assert reason == ("invalid_return" if isinstance(bad, list) else "invalid_response", bad)
    assert result["resultType"] == "input_required"


def test_no_handler_for_a_kind_is_a_clear_error(harness: Harness) -> None:
    # The client declares sampling (so the server may ask) but has no sampling handler.
    client = harness.client(client_capabilities={"sampling": {}}, input_handlers=mt.InputHandlers(form=answers))
    with pytest.raises(mt.McpError) as error:
        client.call_tool("ask_sync", {"kinds": ["sampling"]})
    assert error.value.code == -32602
    assert error.value.cause[:2] == ("no_input_handler", "sampling")


def test_server_will_not_ask_for_a_kind_the_client_did_not_declare(client: mt.Client) -> None:
    with pytest.raises(mt.McpError) as error:
        client.call_tool("ask_sync", {"kinds": ["form"]})
    assert error.value.code == -32021
    assert error.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


def test_input_error_from_a_handler_gives_minus_32603(harness: Harness) -> None:
    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise mt.InputError("the user walked away")

    client = harness.client(input_handlers=mt.InputHandlers(form=refuse))
    with pytest.raises(mt.McpError) as error:
        client.call_tool("ask_sync", {"kinds": ["form"]})
    assert error.value.code == -32603
    assert error.value.cause[:3] == ("input_handler", "form", "the user walked away")


def test_other_exceptions_from_a_handler_reach_the_caller(harness: Harness) -> None:
    class Boom(Exception):
        pass

    def explode(params: dict[str, Any]) -> dict[str, Any]:
        raise Boom("handler bug")

    client = harness.client(input_handlers=mt.InputHandlers(form=explode))
    with pytest.raises(Boom):
        client.call_tool("ask_sync", {"kinds": ["form"]})


def test_input_rounds_are_bounded(harness: Harness) -> None:
    client = harness.client(input_handlers=mt.InputHandlers(form=answers), max_input_rounds=3)
    with pytest.raises(mt.McpError) as error:
        client.call_tool("ask_forever")
    assert error.value.data == {"maxInputRounds": 3}


def test_a_stalled_request_times_out_with_minus_32001(harness: Harness) -> None:
    client = harness.client(timeout=0.3)
    with pytest.raises(mt.RequestTimeout) as error:
        client.call_tool("stall")
    assert isinstance(error.value, TimeoutError)
    assert error.value.code == -32001
    assert error.value.kind == "transport"
    assert error.value.data == {"timeoutMs": 300}
    # The connection is still good after a timed-out request.
    assert client.call_tool("greet", {"name": "again"}, timeout=10)["content"][0]["text"] == "Hello, again!"


def test_a_per_call_timeout_overrides_the_clients(harness: Harness) -> None:
    client = harness.client(timeout=60)
    with pytest.raises(mt.RequestTimeout) as error:
        client.call_tool("stall", timeout=0.2)
    assert error.value.data == {"timeoutMs": 200}


def test_twenty_threads_share_one_client(harness: Harness) -> None:
    client = harness.client()
    start = threading.Barrier(20)
    wrong: list[str] = []

    def worker(n: int) -> None:
        start.wait()
        for i in range(50):
            name = f"{n}-{i}"
            text = client.call_tool("greet", {"name": name})["content"][0]["text"]
            if text != f"Hello, {name}!":
                wrong.append(text)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_closed_client_refuses_requests(harness: Harness) -> None:
    client = harness.client()
    client.close()
    client.close()  # idempotent
    with pytest.raises(mt.TransportError):
        client.call_tool("greet", {"name": "x"})


def test_bad_caller_input_is_a_value_or_type_error(client: mt.Client) -> None:
    with pytest.raises(ValueError):
        client.request("")
    with pytest.raises(ValueError):
        client.request("subscriptions/listen")
    with pytest.raises(TypeError):
        client.call_tool("greet", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="JSON"):
        client.call_tool("greet", {"name": float("nan")})
    with pytest.raises(ValueError):
        client.call_tool("greet", {"name": "x"}, timeout=-1)
    with pytest.raises(TypeError):
        mt.Client.direct(object())  # type: ignore[arg-type]


def test_an_unknown_tool_is_invalid_params_and_bad_arguments_a_tool_error(client: mt.Client) -> None:
    with pytest.raises(mt.McpError) as unknown:
        client.call_tool("no_such_tool")
    assert unknown.value.code == -32602
    missing = client.call_tool("greet", {})
    assert missing["isError"] is True
    assert "Missing argument 'name'" in missing["content"][0]["text"]
    wrong_type = client.call_tool("greet", {"name": 3})
    assert wrong_type["isError"] is True
    assert mt.call_and_await(client, "slow_compute", {"label": 7})["isError"] is True


def test_list_tools_leaves_out_refused_annotations(client: mt.Client, caplog: pytest.LogCaptureFixture) -> None:
    names = {tool["name"] for tool in client.list_tools()}
    assert {"greet", "routed", "slow_compute"} <= names
    assert "badly_annotated" not in names
    assert "leaving out tool 'badly_annotated'" in caplog.text
    raw = client.request("tools/list")
    assert "badly_annotated" in {tool["name"] for tool in raw["tools"]}
    assert (raw["ttlMs"], raw["cacheScope"]) == (0, "private")


# -- hostile answers (issue 9, item 10) -----------------------------------------------------------


MODERN = "2026-07-28"  # pinned: these servers answer only what the test scripts, no era probe


class Answers:
    """A direct server that answers each request with the next of `replies` (a function of the
    request), and `good` after them."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)

    def handle(self, message: dict[str, Any], exchange: Any) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        if message.get("method") == "server/discover":
            return {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {"supportedVersions": [MODERN], "capabilities": {}},
            }
        if self.replies:
            reply: dict[str, Any] = self.replies.pop(0)(message)
            return reply
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [], "ok": True}}


def test_an_answer_with_another_requests_id_is_an_error_and_the_client_goes_on() -> None:
    other = Answers(lambda m: {"jsonrpc": "2.0", "id": m["id"] + 100, "result": {}})
    with mt.Client.direct(other, protocol=MODERN) as client:
        with pytest.raises(mt.ProtocolError, match="another request's id") as error:
            client.request("tools/list")
        assert error.value.kind == "protocol"
        assert client.request("tools/list")["ok"] is True


@pytest.mark.parametrize("wrong", [True, "1", 1.0, None])
def test_an_id_of_another_type_is_not_the_same_id(wrong: object) -> None:
    server = Answers(lambda m: {"jsonrpc": "2.0", "id": wrong, "result": {}})
    with mt.Client.direct(server, protocol=MODERN) as client, pytest.raises(mt.McpError, match="another request's id"):
        client.request("ping")


@pytest.mark.parametrize("answered", [None, "server-error"])
def test_an_error_with_a_null_or_placeholder_id_is_that_requests_error(answered: object) -> None:
    """JSON-RPC's answer when the server could not read the request's id (null), and the official
    Python SDK's ("server-error", on HTTP 400s)."""
    error = {"code": -32600, "message": "Invalid Request"}
    with mt.Client.direct(
        Answers(lambda m: {"jsonrpc": "2.0", "id": answered, "error": error}), protocol=MODERN
    ) as client:
        with pytest.raises(mt.McpError) as raised:
            client.request("ping")
        assert raised.value.code == -32600


def test_a_task_id_holding_a_lone_surrogate_is_refused_when_decoded() -> None:
    task = {"resultType": "task", "taskId": "ab\ud800cd", "status": "working"}
    with mt.Client.direct(
        Answers(lambda m: {"jsonrpc": "2.0", "id": m["id"], "result": task}), protocol=MODERN
    ) as client:
        with pytest.raises(mt.ProtocolError, match="no wire can carry") as raised:
            mt.call_tool(client, "anything")
        assert raised.value.kind == "protocol"
        assert client.request("tools/list")["ok"] is True
    with pytest.raises(mt.InvalidStatus, match="taskId"):
        mt.Status.from_map({"taskId": "ab\udc00", "status": "working"})


def test_a_notification_repr_does_not_show_the_task_id() -> None:
    secret = "zJ3JNBBAORw4uOgJy7Rl93ZQYuUp0qUA13srtHs9SZc"
    note = mt.Notification("notifications/tasks", {"taskId": secret, "status": "working"})
    assert secret not in repr(note)
    assert "notifications/tasks" in repr(note) and f"taskId='{secret[:4]}…{secret[-4:]}'" in repr(note)
