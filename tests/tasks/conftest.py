"""Fixtures of the tasks tests: the foreign listen server (tests/foreign/listen_tasks.py), made on demand."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.foreign.listen_tasks import ListenTasksServer


@pytest.fixture
def listen_server() -> Iterator[Callable[..., ListenTasksServer]]:
    """Makes `ListenTasksServer`s with the options given, started; closes them after the test."""
    made: list[ListenTasksServer] = []

    def make(**options: Any) -> ListenTasksServer:
        server = ListenTasksServer(**options)
        server.start()
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()
