"""A 2025-11-25 Streamable HTTP server with the era's experimental tasks, written at the socket
level (standard library only, no mcp_tasks code), with the habits of mcp 1.30 and
server-everything (see the shared reference peers.md, Part C):

- ``initialize`` starts a session: its id (32 hex, as mcp 1.30 mints them) comes back in the
  ``Mcp-Session-Id`` header of the answer; every later request must carry it (400 "Missing
  session ID" without one, with a throwaway ``mcp-session-id`` header as mcp 1.30 sends; 404
  "Session not found" for an id the server does not know or has ended);
- an ``MCP-Protocol-Version`` header naming a revision it does not speak is 400; none is tolerated;
- every POST that carries a request is answered as SSE (a priming event, then the messages);
  notifications and the client's responses get 202; a request of a session that has not sent
  ``notifications/initialized`` yet is refused (-32600), as mcp 1.30's session refuses it;
- the server's own requests (``elicitation/create``) travel inside the POST answer they belong to
  (``tools/call`` of ``ask_plain``; ``tasks/result`` of an ``ask_task`` task), and the client
  answers them with POSTs of their own;
- a GET opens the session's stream (one per session: a second GET is 409, as in mcp 1.30), where
  ``notifications/tasks/status`` go; DELETE ends the session (its tasks stay in the store);
- with ``bind_tasks`` (the default, as mcp 1.30 does) a task is visible only to the session that
  created it: -32602 "Task not found" from any other.

Options: ``init_delay`` and ``get_delay`` (seconds before answering ``initialize`` and each
``tasks/get``), ``fail_first_initialized`` (answer the first ``notifications/initialized`` with
HTTP 500: ``"json"`` with a JSON-RPC error body, as mcp 1.30's transport answers a POST it failed
to handle; ``"text"`` with Starlette's plain "Internal Server Error"; the session stays
uninitialized), ``hold_first_initialized`` (hold the first
``notifications/initialized`` until a request of the same session arrives, or one second passes:
a request that arrives in that window was sent before the handshake was complete),
``tasks_capability``, ``bind_tasks``.

`SocketHttpServer` is the HTTP/1.1 plumbing, shared with tests/foreign/modern_http_tasks.py.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from typing import Any

from tests.foreign.legacy_tasks_core import VERSIONS, Journal, LegacyTasks, Reply, Session, obj

HOLD_WINDOW = 1.0


class HttpRequest:
    def __init__(self, verb: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.verb = verb
        self.path = path
        self.headers = headers  # lower-case names
        self.body = body
        try:
            self.json: Any = json.loads(body) if body else None
        except ValueError:
            self.json = None


class HttpConn:
    """The server's side of one connection: HTTP answers, and SSE events (writes are locked:
    a session's GET stream is written by the threads that push to it).
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self.sse_open = False

    def send(self, data: bytes) -> None:
        with self._lock:
            self.sock.sendall(data)

    def respond(
        self, status: str, body: bytes = b"", headers: dict[str, str] | None = None, content_type: str = ""
    ) -> None:
        head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}"]
        if content_type:
            head.append(f"Content-Type: {content_type}")
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def json(self, status: str, message: Any, headers: dict[str, str] | None = None) -> None:
        self.respond(status, json.dumps(message).encode(), headers, "application/json")

    def open_sse(self, headers: dict[str, str] | None = None, priming: bool = True) -> None:
        """Start an SSE answer delimited by the connection's close (a priming event first, as
        servers with an event store send).
        """
        head = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache", "Connection: close"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        data = ("\r\n".join(head) + "\r\n\r\n").encode()
        if priming:
            data += f"id: {uuid.uuid4()}\ndata: \n\n".encode()
        self.send(data)
        self.sse_open = True

    def event(self, message: dict[str, Any]) -> None:
        self.send(f"event: message\nid: {uuid.uuid4()}\ndata: {json.dumps(message)}\n\n".encode())


class SocketHttpServer:
    """HTTP/1.1 on 127.0.0.1, one thread per connection, keep-alive; `handle` answers a request
    and says whether the connection stays open. Threads are named ``<name>-...`` and joined by
    `close`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name=f"{name}-accept", daemon=True)

    def start(self) -> None:
        self._acceptor.start()

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def handle(self, request: HttpRequest, conn: HttpConn) -> bool:
        raise NotImplementedError

    def on_stop(self) -> None:
        """Wake whatever the handlers hold (called first thing in `close`)."""

    def close(self) -> None:
        self.stopping.set()
        self.on_stop()
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
        for thread in threads:
            thread.join(5)
        for sock in socks:
            sock.close()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(sock,), name=f"{self.name}-conn", daemon=True)
            with self._lock:
                self._socks.append(sock)
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        conn = HttpConn(sock)
        reader = sock.makefile("rb")
        try:
            while not self.stopping.is_set():
                line = reader.readline()
                if not line.strip():
                    return
                verb, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", "0") or 0))
                if not self.handle(HttpRequest(verb, path, headers, body), conn):
                    return
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _HttpSession(Session):
    def __init__(self, scope: str) -> None:
        super().__init__(scope, self._push)
        self.get_conn: HttpConn | None = None

    def _push(self, message: dict[str, Any]) -> None:
        conn = self.get_conn
        if conn is not None:
            conn.event(message)


class LegacyHttpTasksServer(SocketHttpServer):
    """The server. `journal` records every request (verb, JSON-RPC method, id, session, headers)
    and what the tasks saw; `deletes` holds the headers of each DELETE.
    """

    def __init__(
        self,
        *,
        init_delay: float = 0.0,
        get_delay: float = 0.0,
        fail_first_initialized: str | None = None,
        hold_first_initialized: bool = False,
        tasks_capability: bool = True,
        bind_tasks: bool = True,
    ) -> None:
        super().__init__("legacy-http-tasks")
        self.journal = Journal()
        self.core = LegacyTasks(
            self.journal, tasks_capability=tasks_capability, bind_tasks=bind_tasks, get_delay=get_delay
        )
        self.init_delay = init_delay
        self.fail_first_initialized = fail_first_initialized
        self.hold_first_initialized = hold_first_initialized
        self.sessions: dict[str, _HttpSession] = {}
        self.session_order: list[str] = []
        self.deletes: list[dict[str, str]] = []
        self._failed_once = False
        self._held: str | None = None  # the session whose initialized is held
        self._hold_over = threading.Event()
        self._state = threading.Lock()

    @property
    def initializes(self) -> int:
        return len(self.session_order)

    def on_stop(self) -> None:
        self.core.stop()
        self._hold_over.set()

    # -- HTTP -----------------------------------------------------------------------------------

    def handle(self, request: HttpRequest, conn: HttpConn) -> bool:
        headers = request.headers
        message = obj(request.json)
        self.journal.add(
            {
                "event": "http",
                "verb": request.verb,
                "rpc": message.get("method"),
                "id": message.get("id"),
                "session": headers.get("mcp-session-id"),
                "headers": dict(headers),
            }
        )
        if request.verb == "DELETE":
            return self._delete(headers, conn)
        if request.verb == "GET":
            return self._get(headers, conn)
        if request.verb != "POST":
            conn.respond("405 Method Not Allowed")
            return True
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            error = {"code": -32000, "message": "Not Acceptable: Client must accept both"}
            conn.json("406 Not Acceptable", {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return True
        if not message:
            error = {"code": -32700, "message": "Parse error"}
            conn.json("400 Bad Request", {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return True
        if message.get("method") == "initialize":
            return self._initialize(message, conn)
        session = self._session(headers, conn)
        if session is None:
            return True
        method = message.get("method")
        if method is None:
            self.core.take_answer(message)
            conn.respond("202 Accepted")
            return True
        if "id" not in message:
            return self._notification(session, method, message.get("params"), conn)
        if not session.initialized and method != "ping":
            self.journal.add({"event": "premature", "method": method, "session": session.scope})
            self._hold_over.set()
            conn.open_sse()
            error = {"code": -32600, "message": "Received request before initialization was complete"}
            conn.event({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return False
        if self._held == session.scope:
            self._hold_over.set()  # a request of the held session: the window is over
        response = self.core.handle(message, session, Reply(lambda sent: self._sse(conn, session, sent)))
        if response is not None:
            self._sse(conn, session, response)
        elif not conn.sse_open:
            conn.respond("202 Accepted")
            return True
        return False  # the SSE answer ends with the connection

    def _sse(self, conn: HttpConn, session: Session, message: dict[str, Any]) -> None:
        if not conn.sse_open:
            conn.open_sse({"mcp-session-id": session.scope})
        conn.event(message)

    def _session(self, headers: dict[str, str], conn: HttpConn) -> _HttpSession | None:
        """The live session the request names; None once a 400 or 404 was sent."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            error = {"code": -32600, "message": "Bad Request: Missing session ID"}
            throwaway = {"mcp-session-id": uuid.uuid4().hex}
            conn.json("400 Bad Request", {"jsonrpc": "2.0", "id": "server-error", "error": error}, throwaway)
            return None
        with self._state:
            session = self.sessions.get(session_id)
        if session is None:
            error = {"code": -32600, "message": "Session not found"}
            conn.json("404 Not Found", {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return None
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in VERSIONS:
            error = {"code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"}
            conn.json("400 Bad Request", {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return None
        return session

    def _initialize(self, message: dict[str, Any], conn: HttpConn) -> bool:
        session = _HttpSession(uuid.uuid4().hex)
        with self._state:
            self.sessions[session.scope] = session
            self.session_order.append(session.scope)
        self.core.register(session)
        params = obj(message.get("params"))
        self.journal.add({"event": "initialize", "session": session.scope, "params": params})
        self.stopping.wait(self.init_delay)
        result = self.core.initialize_result(session, params)
        conn.open_sse({"mcp-session-id": session.scope})
        conn.event({"jsonrpc": "2.0", "id": message.get("id"), "result": result})
        return False

    def _notification(self, session: _HttpSession, method: str, params: object, conn: HttpConn) -> bool:
        if method == "notifications/initialized":
            with self._state:
                fail = self.fail_first_initialized is not None and not self._failed_once
                self._failed_once = self._failed_once or fail
                hold = self.hold_first_initialized and self._held is None
                if hold:
                    self._held = session.scope
            if fail:
                self.journal.add({"event": "initialized_failed", "session": session.scope})
                if self.fail_first_initialized == "text":
                    body = b"Internal Server Error"
                    conn.respond("500 Internal Server Error", body, None, "text/plain; charset=utf-8")
                else:
                    error = {"code": -32603, "message": "Error handling POST request: the session store is busy"}
                    conn.json("500 Internal Server Error", {"jsonrpc": "2.0", "id": "server-error", "error": error})
                return True
            if hold:
                self.journal.add({"event": "initialized_held", "session": session.scope})
                self._hold_over.wait(HOLD_WINDOW)
            session.initialized = True
            self.journal.add({"event": "initialized", "session": session.scope})
        elif method == "notifications/cancelled":
            self.core.cancel_request(params)
        conn.respond("202 Accepted")
        return True

    def _get(self, headers: dict[str, str], conn: HttpConn) -> bool:
        if "text/event-stream" not in headers.get("accept", ""):
            conn.respond("406 Not Acceptable")
            return True
        session = self._session(headers, conn)
        if session is None:
            return True
        with self._state:
            taken = session.get_conn is not None
            if not taken:
                session.get_conn = conn
        if taken:
            error = {"code": -32000, "message": "Conflict: Only one SSE stream is allowed per session"}
            conn.json("409 Conflict", {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return True
        self.journal.add({"event": "get_stream", "session": session.scope})
        try:
            conn.open_sse({"mcp-session-id": session.scope}, priming=False)
            conn.sock.settimeout(0.2)
            while not self.stopping.is_set():
                try:
                    if conn.sock.recv(1) == b"":
                        return False  # the client hung up
                except TimeoutError:
                    continue
        except OSError:
            return False
        finally:
            with self._state:
                if session.get_conn is conn:
                    session.get_conn = None
        return False

    def _delete(self, headers: dict[str, str], conn: HttpConn) -> bool:
        self.deletes.append(dict(headers))
        session_id = headers.get("mcp-session-id")
        with self._state:
            session = self.sessions.pop(session_id, None) if session_id is not None else None
        if session is None:
            conn.respond("404 Not Found")
            return True
        self.core.forget(session.scope)
        get_conn = session.get_conn
        if get_conn is not None:
            try:
                get_conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        conn.respond("200 OK")
        return True

    # -- for the tests --------------------------------------------------------------------------

    def requests_of(self, rpc: str, after: int = 0) -> list[dict[str, Any]]:
        """The journal's HTTP entries for JSON-RPC method `rpc`."""
        return self.journal.events(lambda e: e["event"] == "http" and e["rpc"] == rpc, after)
