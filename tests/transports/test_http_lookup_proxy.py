"""The edges of the one deadline (issue 27): a name lookup, and every byte through an HTTP proxy.

A resolver that hangs cannot be made real here (the system's resolver configuration is not the
tests' to change), so a resolver stand-in takes the place of ``socket.getaddrinfo`` for the names
the tests own (``*.test``): it hangs until the test releases it, or fails at once; every other
lookup goes to the real one. The proxy is a socket-level one of the tests' own
(`tests.foreign.trickling_proxy`), found through ``HTTP_PROXY``/``HTTPS_PROXY`` as a user's would
be, or given as ``proxies=``.

Each stall lasts until the test ends it, after the call raised: a call that waits for the stall
cannot raise at all (on main: "the call did not return"). No timing bound is asserted;
bench/deadline_margin.py reports how far past its timeout each call raised.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import Background
from tests.foreign.trickling_proxy import TricklingProxy

PATIENT = 30.0  # a hang detector: what a test waits for comes long before, or the test fails
HOLD = 4 * PATIENT  # how long a hanging lookup lasts unless released: longer than any hang detector
HANGS = "hangs.test"
MISSING = "missing.test"


class HangingResolver:
    """A stand-in for ``socket.getaddrinfo``: `HANGS` hangs until `release`, `MISSING` fails at
    once, every other name goes to the real resolver. `asked` counts the lookups of each name.
    """

    def __init__(self) -> None:
        self.real = socket.getaddrinfo
        self.called = threading.Event()
        self.released = threading.Event()
        self.asked: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in (HANGS, MISSING):
            with self.lock:
                self.asked[host] = self.asked.get(host, 0) + 1
            if host == MISSING:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            self.called.set()
            self.released.wait(HOLD)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return self.real(host, *args, **kwargs)

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HangingResolver]:
    standin = HangingResolver()
    monkeypatch.setattr(socket, "getaddrinfo", standin)
    try:
        yield standin
    finally:
        standin.release()


def test_a_hanging_name_lookup_cannot_hold_a_call(resolver: HangingResolver) -> None:
    with mt.Client.http(f"http://{HANGS}/mcp", retries=0, protocol="2026-07-28") as client:
        try:
            caller = Background(lambda: client.request("tools/list", timeout=0.5))
            with pytest.raises(mt.RequestTimeout):
                caller.result(PATIENT)  # raised while the lookup still hangs
            assert resolver.called.is_set() and not resolver.released.is_set()
        finally:
            resolver.release()


def test_calls_that_want_the_same_hanging_name_share_one_lookup(resolver: HangingResolver) -> None:
    with mt.Client.http(f"http://{HANGS}/mcp", retries=0, protocol="2026-07-28") as client:
        try:
            callers = [Background(lambda: client.request("tools/list", timeout=0.5)) for _ in range(3)]
            for caller in callers:
                with pytest.raises(mt.RequestTimeout):
                    caller.result(PATIENT)
            assert resolver.asked[HANGS] == 1  # one helper thread for the name, however many callers
        finally:
            resolver.release()


def test_a_name_that_does_not_resolve_fails_at_once_as_a_transport_error(resolver: HangingResolver) -> None:
    client = mt.Client.http(f"http://{MISSING}/mcp", retries=0, protocol="2026-07-28")
    with client, pytest.raises(mt.TransportError, match="gaierror") as raised:
        client.request("tools/list", timeout=PATIENT)
    assert not isinstance(raised.value, mt.RequestTimeout)


def test_close_ends_a_call_waiting_for_a_hanging_lookup(resolver: HangingResolver) -> None:
    client = mt.Client.http(f"http://{HANGS}/mcp", retries=0, protocol="2026-07-28")
    caller = Background(lambda: client.request("tools/list", timeout=PATIENT))
    closer: Background | None = None
    try:
        assert resolver.called.wait(PATIENT)
        closer = Background(client.close)
        with pytest.raises(mt.TransportError):
            caller.result(PATIENT)  # ended by close, though the lookup still hangs
        assert not resolver.released.is_set()
    finally:
        resolver.release()
        if closer is not None:
            closer.result(PATIENT)
        client.close()


# -- proxies ----------------------------------------------------------------------------------


@pytest.fixture
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("variable", "url", "line"),
    [
        ("HTTP_PROXY", "http://mcp.example.test/mcp", "POST http://mcp.example.test/mcp"),
        ("HTTPS_PROXY", "https://mcp.example.test/mcp", "CONNECT mcp.example.test:443"),
    ],
)
def test_a_trickling_proxy_cannot_hold_a_call(
    variable: str, url: str, line: str, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    with TricklingProxy() as proxy:
        clean_proxy_env.setenv(variable, proxy.url)
        with mt.Client.http(url, retries=0, protocol="2026-07-28") as client:
            caller = Background(lambda: client.request("tools/list", timeout=0.5))
            with pytest.raises(mt.RequestTimeout):
                caller.result(PATIENT)  # raised while the proxy still trickles
            assert not proxy.stop.is_set()
        assert proxy.lines[0].rpartition(" ")[0] == line  # (the HTTP version: http.client's)


def test_a_request_goes_through_a_proxy_given_as_proxies(clean_proxy_env: pytest.MonkeyPatch) -> None:
    with TricklingProxy("answer") as proxy:
        url = "http://mcp.example.test/mcp"
        with mt.Client.http(url, retries=0, protocol="2026-07-28", proxies={"http": proxy.url}) as client:
            assert client.request("tools/list", timeout=PATIENT) == {"via": "proxy"}
        assert proxy.lines == ["POST http://mcp.example.test/mcp HTTP/1.1"]
