"""psycopg's warnings about a connection our deadline cut are dropped only for the call whose cut
fired, and only those two warnings: a connection the server ended, or any other record, is still
logged as psycopg logs it.
"""

from __future__ import annotations

import logging

import attrs
import pytest

from mcp_tasks._store._pg_cut_logs import calls_cut, quiet_cut_warnings

PIPELINE = "error ignored terminating <psycopg.Pipeline [BAD] at 0x1>: the connection is lost"


@attrs.define
class Call:
    fired: bool = False


def _said(caplog: pytest.LogCaptureFixture, call: Call | None, name: str, text: str) -> bool:
    quiet_cut_warnings()
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        if call is None:
            logging.getLogger(name).warning(text)
        else:
            with calls_cut(call):
                logging.getLogger(name).warning(text)
    return any(record.getMessage() == text for record in caplog.records)


def test_only_the_warnings_of_a_call_we_cut_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    assert not _said(caplog, Call(fired=True), "psycopg", PIPELINE)
    assert not _said(caplog, Call(fired=True), "psycopg.pool", "discarding closed connection: <c>")
    assert _said(caplog, Call(fired=False), "psycopg", PIPELINE)  # the server ended it: said
    assert _said(caplog, None, "psycopg", PIPELINE)  # not a call of ours
    assert _said(caplog, Call(fired=True), "psycopg", "some other trouble")
    assert _said(caplog, Call(fired=True), "psycopg.pool", "error connecting in 'pool-1'")
