"""The plain path's own header reader (transports/_head.py) means what http.client's does: each
answer below, sent by a socket-level server on 127.0.0.1, is read by both over real sockets and
every field compared; and the plain path keeps or drops its connection, and reads chunked,
HTTP/1.0 and duplicate-header answers, as before.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks._clock import Deadline
from mcp_tasks.transports._head import LeanResponse
from mcp_tasks.transports.http import HttpTransport
from tests.foreign.sockets import SocketServer, read_headers

BODY = b'{"ok": true}'
PLAIN = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n" + BODY

ANSWERS: dict[str, bytes] = {
    "plain": PLAIN,
    "duplicates": (
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Twice: one\r\nset-cookie: b=2\r\nX-TWICE: two\r\n"
        b"Content-Length: 12\r\n\r\n" + BODY
    ),
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\nContent-Length: 12\r\n\r\n" + BODY,
    "folded first line": b"HTTP/1.1 200 OK\r\n X-Lead: x\r\nContent-Length: 12\r\n\r\n" + BODY,
    "name with a space": b"HTTP/1.1 200 OK\r\nX Bad: x\r\nContent-Length: 12\r\n\r\n" + BODY,
    "empty name": b"HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 12\r\n\r\n" + BODY,
    "stray CR": b"HTTP/1.1 200 OK\r\nX-Cr: a\rb\r\nContent-Length: 12\r\n\r\n" + BODY,
    "blanks around values": b"HTTP/1.1 200 OK\r\nX-Pad:\t  padded  \r\nX-Empty:\r\nContent-Length: 12\r\n\r\n" + BODY,
    "bare LF": b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 12\n\n" + BODY,
    "chunked over Content-Length": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: Chunked\r\n\r\n"
        b"5\r\n" + BODY[:5] + b"\r\n7\r\n" + BODY[5:] + b"\r\n0\r\n\r\n"
    ),
    "Connection: close": b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 12\r\n\r\n" + BODY,
    "HTTP/1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 12\r\n\r\n" + BODY,
    "HTTP/1.0 keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 12\r\n\r\n" + BODY,
    "HTTP/1.0 Keep-Alive header": b"HTTP/1.0 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 12\r\n\r\n" + BODY,
    "no length": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY,
    "bad length": b"HTTP/1.1 200 OK\r\nContent-Length: twelve\r\n\r\n" + BODY,
    "negative length": b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n" + BODY,
    "204": b"HTTP/1.1 204 No Content\r\nContent-Length: 12\r\n\r\n",
    "100 then 200": b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n" + PLAIN,
    "no reason": b"HTTP/1.1 200\r\nContent-Length: 12\r\n\r\n" + BODY,
    "latin-1 value": b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 12\r\n\r\n" + BODY,
    "headers cut by the close": b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX-Cut: y",
}


class Canned(SocketServer):
    """Answers each request on a connection with `answer` (or what it makes of the request's id),
    then closes when `close_after`."""

    def __init__(self, answer: bytes | Callable[[object], bytes], *, close_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        super().__init__("canned-http")

    def serve(self, sock: socket.socket, reader: Any) -> None:
        with self.lock:
            self.connections += 1
        while True:
            headers = read_headers(reader)
            if not headers:
                return
            request = json.loads(reader.read(int(headers["content-length"])))
            answer = self.answer
            sock.sendall(answer if isinstance(answer, bytes) else answer(request.get("id")))
            if self.close_after:
                return


NAMES = ("set-cookie", "X-TWICE", "x-twice", "content-type", "Content-Length", "x-none", "X-Pad", "x-empty")


def lookups(headers: http.client.HTTPMessage) -> list[Any]:
    """What ``get`` and ``in`` answer, before and after each way of editing the fields (an
    index kept beside them must follow every one)."""
    seen: list[Any] = [[(headers.get(name, "-"), name in headers) for name in NAMES]]
    edits = [
        lambda: headers.replace_header("content-length", "7") if "content-length" in headers else None,
        lambda: headers.__setitem__("X-Added", "1"),
        lambda: headers.add_header("x-twice", "three"),
        lambda: headers.replace_header("X-Added", "2") if "X-Added" in headers else None,
        lambda: headers.set_raw("Content-Type", "text/plain"),
        lambda: headers.__delitem__("x-twice"),
        lambda: headers.set_param("charset", "utf-8"),
    ]
    for edit in edits:
        edit()
        seen.append([(headers.get(name, "-"), name in headers) for name in (*NAMES, "x-added")])
    return seen


def read_with(kind: type[http.client.HTTPResponse], port: int) -> dict[str, Any]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        response = kind(sock, method="POST")
        try:
            response.begin()
        except http.client.HTTPException as exc:
            return {"error": type(exc).__name__}
        headers = response.headers
        seen = {
            "status": response.status,
            "reason": response.reason,
            "version": response.version,
            "items": headers.items(),
            "get_all": {name: headers.get_all(name) for name in ("set-cookie", "X-TWICE", "x-folded", "x-none")},
            "content-length": headers.get("CONTENT-LENGTH"),
            "lookups": lookups(headers),
            "chunked": response.chunked,
            "length": response.length,
            "will_close": response.will_close,
            "payload": headers.get_payload(),
        }
        try:
            seen["body"] = response.read()
        except http.client.HTTPException as exc:
            seen["body"] = type(exc).__name__
        response.close()
        return seen
    finally:
        sock.close()


@pytest.mark.parametrize("case", list(ANSWERS))
def test_each_answer_reads_as_http_client_reads_it(case: str) -> None:
    with Canned(ANSWERS[case], close_after=True) as server:
        assert read_with(LeanResponse, server.port) == read_with(http.client.HTTPResponse, server.port)


def test_a_header_line_too_long_is_refused_as_http_client_refuses_it() -> None:
    answer = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n"
    with Canned(answer, close_after=True) as server:
        assert read_with(LeanResponse, server.port) == {"error": "LineTooLong"}
        assert read_with(http.client.HTTPResponse, server.port) == {"error": "LineTooLong"}


def framed(head: bytes, *, chunked: bool = False) -> Callable[[object], bytes]:
    """An answer to each request: `head`, then its result, chunked or with its length."""

    def answer(request_id: object) -> bytes:
        result = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}).encode()
        if chunked:
            return head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(result), result)
        return head + b"Content-Length: %d\r\n\r\n" % len(result) + result

    return answer


@pytest.mark.parametrize(
    ("head", "chunked", "kept"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", False, True),
        (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n", True, True),
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n", False, False),
        (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n", False, False),
        (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n", False, True),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCONTENT-TYPE: application/json\r\n", False, True),
        (b"HTTP/1.1 200 OK\r\nContent-Type:\r\n application/json\r\n", False, True),
    ],
)
def test_the_plain_path_reads_answers_and_keeps_connections_as_their_headers_say(
    head: bytes, chunked: bool, kept: bool
) -> None:
    closes = not kept and b"HTTP/1.0" in head  # an HTTP/1.0 server closes after its answer
    with Canned(framed(head, chunked=chunked), close_after=closes) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/mcp")
        try:
            for number in range(3):
                answer = transport.request({"jsonrpc": "2.0", "id": number, "method": "ping"}, Deadline(10))
                assert answer == {"jsonrpc": "2.0", "id": number, "result": {}}
        finally:
            transport.close()
        assert server.connections == (1 if kept else 3)
