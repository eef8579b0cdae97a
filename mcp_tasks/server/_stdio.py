"""Serving over stdio: newline-delimited JSON on stdin and stdout, each request in its own thread.

``notifications/cancelled`` cancels the request it names (and ends a listen stream); at the end of
stdin every request still running is cancelled and the server closed.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from typing import IO, Any

from mcp_tasks._errors import PARSE_ERROR, McpError
from mcp_tasks._exchange import Exchange
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads, valid_id
from mcp_tasks.server._server import Server

__all__ = ["serve_stdio"]

log = logging.getLogger("mcp_tasks.server")


def serve_stdio(server: Server, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """Serve `server` on stdin and stdout until stdin ends."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    write_lock = threading.Lock()
    inflight: dict[Any, Exchange] = {}
    workers: list[threading.Thread] = []
    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        data = dumps(message) + b"\n"
        with write_lock:
            sink.write(data)
            sink.flush()

    def run(message: dict[str, Any], exchange: Exchange) -> None:
        key = message["id"]
        try:
            response = server.handle(message, exchange)
            if response is not None and not exchange.cancelled.is_set():
                send(response)
        except (OSError, ValueError) as exc:
            log.debug("could not send a response: %r", exc)
        finally:
            with lock:
                if inflight.get(key) is exchange:
                    del inflight[key]
                workers.remove(threading.current_thread())

    for line in source:
        line = line.strip()
        if not line:
            continue
        try:
            message = loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deep: the server goes on
            send({"jsonrpc": "2.0", "id": None, "error": McpError(PARSE_ERROR, "Parse error").to_wire()})
            continue
        if isinstance(message, dict) and "id" in message and "method" in message and valid_id(message["id"]):
            exchange = Exchange(send)
            with lock:
                inflight[message["id"]] = exchange
                workers.append(
                    start_thread(f"server-request-{message['id']}", functools.partial(run, message, exchange))
                )
        elif isinstance(message, dict) and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            key = params.get("requestId") if isinstance(params, dict) else None
            with lock:
                target = inflight.get(key) if valid_id(key) else None
            if target is not None:
                target.cancel()
        elif isinstance(message, dict) and "method" in message:
            server.handle(message, Exchange())
        else:
            response = server.handle(message, Exchange())
            if response is not None:
                send(response)
    with lock:
        pending = list(inflight.values())
        running = list(workers)
    for exchange in pending:
        exchange.cancel()
    server.close()
    join_all(running, 5.0)
