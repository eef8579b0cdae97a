"""Every thread this library starts: named ``mcp_tasks-…``, a daemon, joined with a bound."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

__all__ = ["PREFIX", "join_all", "start_thread"]

PREFIX = "mcp_tasks-"

log = logging.getLogger("mcp_tasks")


def start_thread(name: str, target: Callable[[], object]) -> threading.Thread:
    """Start a daemon thread named ``mcp_tasks-<name>``."""
    thread = threading.Thread(target=target, name=PREFIX + name, daemon=True)
    thread.start()
    return thread


def join_all(threads: Iterable[threading.Thread], timeout: float) -> bool:
    """Join threads within one overall `timeout`; False (and a warning) if any is still alive."""
    deadline = time.monotonic() + timeout
    stuck = []
    for thread in threads:
        if thread is threading.current_thread():
            continue
        thread.join(max(deadline - time.monotonic(), 0.0))
        if thread.is_alive():
            stuck.append(thread.name)
    if stuck:
        log.warning("threads still running after %.1fs: %s", timeout, ", ".join(stuck))
    return not stuck
