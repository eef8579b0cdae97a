"""A 2025-11-25 MCP server over stdio with the era's experimental tasks, written from scratch
(standard library only, no mcp_tasks code), with the habits of mcp 1.30: see
tests/foreign/legacy_tasks_core.py for its tools and tasks.

    python -m tests.foreign.legacy_stdio_tasks [options]        (from the repository root)

Options:
  --init-delay S          answer ``initialize`` S seconds late (a slow handshake)
  --get-delay S           answer each ``tasks/get`` S seconds late
  --seed-completed ID     start with a completed task ID (a server with a durable store); repeatable
  --no-tasks-capability   leave ``capabilities.tasks`` out of the ``initialize`` answer
  --report PORT           write what the server sees, one JSON line per event, to 127.0.0.1:PORT
                          (the tests' `Reports` listens there); the first is ``started`` with its pid
  --ignore-eof            keep running after stdin ends (as servers whose request threads keep
                          them alive do), until a signal ends it

Requests run on threads of their own (a blocked tool never stalls the reading of stdin); the
server ends when stdin ends. A request before ``notifications/initialized`` is refused (-32600),
as mcp 1.30 does; an unknown method is -32602.

`Reports` is the tests' side of ``--report``: it listens, and feeds every server's lines into one
`Journal`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from typing import Any

from tests.foreign.legacy_tasks_core import Journal, LegacyTasks, Reply, Session, obj


class _Reporter(Journal):
    """The server's journal: each event also goes, as a JSON line, to the tests' listener."""

    def __init__(self, port: int | None) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._sock = socket.create_connection(("127.0.0.1", port)) if port is not None else None

    def add(self, event: dict[str, Any]) -> None:
        super().add(event)
        if self._sock is None:
            return
        with self._lock:
            try:
                self._sock.sendall(json.dumps(event).encode() + b"\n")
            except OSError:
                self._sock = None


def _options(argv: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "init_delay": 0.0,
        "get_delay": 0.0,
        "seeds": [],
        "tasks": True,
        "report": None,
        "ignore_eof": False,
    }
    args = iter(argv)
    for arg in args:
        if arg == "--init-delay":
            options["init_delay"] = float(next(args))
        elif arg == "--get-delay":
            options["get_delay"] = float(next(args))
        elif arg == "--seed-completed":
            options["seeds"].append(next(args))
        elif arg == "--no-tasks-capability":
            options["tasks"] = False
        elif arg == "--report":
            options["report"] = int(next(args))
        elif arg == "--ignore-eof":
            options["ignore_eof"] = True
        else:
            raise SystemExit(f"unknown option {arg}")
    return options


def main(argv: list[str]) -> None:
    options = _options(argv)
    stdout = sys.stdout.buffer
    write_lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        with write_lock:
            stdout.write(json.dumps(message).encode() + b"\n")
            stdout.flush()

    journal = _Reporter(options["report"])
    journal.add({"event": "started", "pid": os.getpid()})
    core = LegacyTasks(journal, tasks_capability=options["tasks"], bind_tasks=False, get_delay=options["get_delay"])
    session = Session(uuid.uuid4().hex, send)
    core.register(session)
    for seed in options["seeds"]:
        core.seed_completed(seed, session.scope)
    reply = Reply(send)

    def work(message: dict[str, Any]) -> None:
        response = core.handle(message, session, reply)
        if response is not None:
            send(response)

    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        params = obj(message.get("params"))
        if method is None:
            core.take_answer(message)
            continue
        if "id" not in message:
            journal.add({"event": "notification", "method": method, "params": params})
            if method == "notifications/initialized":
                session.initialized = True
            elif method == "notifications/cancelled":
                core.cancel_request(params)
            continue
        if method == "initialize":
            journal.add({"event": "initialize", "params": params})
            time.sleep(options["init_delay"])
            send({"jsonrpc": "2.0", "id": message["id"], "result": core.initialize_result(session, params)})
            continue
        if not session.initialized and method not in ("ping", "server/discover"):
            journal.add({"event": "premature", "method": method, "id": message.get("id")})
            error = {"code": -32600, "message": "Received request before initialization was complete"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        threading.Thread(target=work, args=(message,), name="legacy-stdio-worker", daemon=True).start()
    journal.add({"event": "eof"})
    if options["ignore_eof"]:
        threading.Event().wait()
    core.stop()


class Reports:
    """The tests' listener for ``--report``: every server's events, in one `Journal`."""

    def __init__(self) -> None:
        self.journal = Journal()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, name="legacy-stdio-reports", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._read, args=(sock,), name="legacy-stdio-report", daemon=True)
            with self._lock:
                self._socks.append(sock)
                self._threads.append(thread)
            thread.start()

    def _read(self, sock: socket.socket) -> None:
        with sock.makefile("rb") as lines:
            try:
                for line in lines:
                    self.journal.add(json.loads(line))
            except (OSError, ValueError):
                return

    def close(self) -> None:
        self._closed = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        self._acceptor.join(5)
        with self._lock:
            socks, threads = list(self._socks), list(self._threads)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in threads:
            thread.join(5)


if __name__ == "__main__":
    main(sys.argv[1:])
