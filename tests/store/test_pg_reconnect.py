"""After an outage the PostgreSQL store's pool reconnects promptly: psycopg_pool doubles its pause
after each failed attempt (1, 2, 4, 8 s...), so after a 10 s outage the first store call waited
seconds more for a connection, and leases lapsed that a prompt reconnection would have kept
(issue 33's bench: 35 tasks delivered twice). The pauses are read where the pool schedules them.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

from mcp_tasks._store._pg_pool import Pools


def test_a_pool_whose_server_is_gone_tries_again_within_half_a_second() -> None:
    with socket.socket() as probe:  # a port nobody listens on: every connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pools = Pools(f"host=127.0.0.1 port={port} dbname=x user=x", size=1, connect_timeout=1, busy_timeout=1)
    pauses: list[float] = []
    seen = threading.Event()
    try:
        pool: Any = pools.get()
        enter = pool._sched.enter

        def noted(delay: float, action: Any) -> Any:
            if type(getattr(action, "__self__", None)).__name__ == "AddConnection":
                pauses.append(delay)
                if len(pauses) >= 3:
                    seen.set()
            return enter(delay, action)

        pool._sched.enter = noted
        assert seen.wait(60)
    finally:
        pools.close()
    assert max(pauses) <= 0.5, pauses  # the old pool: 2, 4, 8...
