"""Hostile answers on every decode path, on every transport (issue 9, item 10): a seeded fuzz.

Replay servers of our own (tests/fuzz/, sharing no code with mcp_tasks.server) send what
hypothesis draws: malformed JSON, nesting past every limit, wrong ids and types, lone surrogates,
NaN, garbage tasks, input requests and stream notifications. Each example calls a tool through the
tasks helpers and, when that gives a task, waits for it (polling or listening). Asserted: only
documented errors, the call returns (no hang past its deadline), the next request on the same client
still works (no dead reader thread), and nothing is left behind (the autouse thread check).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_tasks as mt
from tests.conftest import ROOT, Background
from tests.fuzz.answers import answers
from tests.fuzz.replay_http import ReplayDirect, ReplayHttp
from tests.fuzz.script import encode

DOCUMENTED = (mt.McpError, mt.InvalidStatus, mt.TaskCancelled, mt.InputRequired)
TIMEOUT = 0.3
EXAMPLES = {"direct": 200, "http": 80, "stdio": 80}


@pytest.fixture(params=["direct", "stdio", "http"])
def replay(request: pytest.FixtureRequest) -> Iterator[tuple[str, mt.Client]]:
    transport: str = request.param
    http = None
    if transport == "direct":
        client = mt.Client.direct(ReplayDirect(), timeout=TIMEOUT, retries=0)
    elif transport == "stdio":
        client = mt.Client.stdio(sys.executable, ["-m", "tests.fuzz.replay_stdio"], cwd=ROOT, timeout=TIMEOUT)
    else:
        http = ReplayHttp()
        client = mt.Client.http(http.url, timeout=TIMEOUT, retries=0)
    try:
        yield transport, client
    finally:
        client.close()
        if http is not None:
            http.close()


def exercise(client: mt.Client, lines: list[list[str]], listen: bool) -> None:
    """The calls one example makes; raises only what the test allows."""
    encoded = [[encode(line) for line in answer] for answer in lines]
    called = mt.call_tool(client, "replay", {"answers": encoded}, timeout=TIMEOUT)
    if isinstance(called, mt.Status):
        mt.wait_task(client, called, timeout=TIMEOUT, listen=listen, poll_interval=0.01, input="return")


def test_hostile_answers(replay: tuple[str, mt.Client]) -> None:
    transport, client = replay

    @settings(
        max_examples=EXAMPLES[transport],
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(lines=answers, listen=st.booleans())
    def example(lines: list[list[str]], listen: bool) -> None:
        outcome: list[Any] = []

        def run() -> None:
            try:
                exercise(client, lines, listen)
            except DOCUMENTED as exc:
                outcome.append(exc)

        Background(run).result(30)  # raises anything undocumented; fails on a hang
        # the reader (and every thread) still works: the next request on the same client answers
        assert client.call_tool("reset", timeout=5)["fine"] is True

    example()
