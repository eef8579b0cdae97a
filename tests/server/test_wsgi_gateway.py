"""The reference server's HTTP server as a PEP 3333 gateway: any WSGI app, checked by
`wsgiref.validate` on both sides (the validator raises inside the app when either side errs)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.validate import validator

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks.server import HttpServer, McpWsgiApp
from tests.fixtures.servers import make_server

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@pytest.fixture
def serve() -> Iterator[Callable[[App], str]]:
    servers: list[HttpServer] = []

    def start(app: App) -> str:
        http = HttpServer(app).start()
        servers.append(http)
        return f"http://127.0.0.1:{http.port}/"

    yield start
    for http in servers:
        http.close()


def fetch(url: str, **kwargs: Any) -> requests.Response:
    with requests.Session() as session:
        return session.post(url, timeout=30, **kwargs) if "data" in kwargs else session.get(url, timeout=30)


def generator_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
    # start_response is called only once the server starts iterating.
    start_response("200 OK", [("Content-Type", "text/plain")])
    yield b"hello, "
    yield b""
    yield environ["PATH_INFO"].encode()


def write_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    write = start_response("200 OK", [("Content-Type", "text/plain")])
    write(b"written, ")
    return [b"then returned"]


def failing_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    try:
        raise RuntimeError("the app changed its mind")
    except RuntimeError:
        start_response("503 Service Unavailable", [("Content-Type", "text/plain")], sys.exc_info())
    return [b"try later"]


def crashing_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    raise RuntimeError("boom")


def echo_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"] or 0))
    reply = b"%s %s %s" % (environ["REQUEST_METHOD"].encode(), environ.get("HTTP_X_TWICE", "").encode(), body)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(reply)))])
    return [reply]


@pytest.mark.parametrize("wrap", [lambda app: app, validator], ids=["plain", "validated"])
def test_a_generator_app(serve: Callable[[App], str], wrap: Callable[[App], App]) -> None:
    response = fetch(serve(wrap(generator_app)) + "path")
    assert (response.status_code, response.text) == (200, "hello, /path")


@pytest.mark.parametrize("wrap", [lambda app: app, validator], ids=["plain", "validated"])
def test_an_app_that_uses_write(serve: Callable[[App], str], wrap: Callable[[App], App]) -> None:
    response = fetch(serve(wrap(write_app)))
    assert (response.status_code, response.text) == (200, "written, then returned")


@pytest.mark.parametrize("wrap", [lambda app: app, validator], ids=["plain", "validated"])
def test_an_app_that_replaces_its_status_with_exc_info(serve: Callable[[App], str], wrap: Callable[[App], App]) -> None:
    response = fetch(serve(wrap(failing_app)))
    assert (response.status_code, response.text) == (503, "try later")


def test_an_app_that_crashes_is_a_500_and_the_server_goes_on(serve: Callable[[App], str]) -> None:
    url = serve(crashing_app)
    assert fetch(url).status_code == 500
    assert fetch(url).status_code == 500


def test_the_environ_and_the_body(serve: Callable[[App], str]) -> None:
    url = serve(validator(echo_app))
    with requests.Session() as session:
        response = session.post(url, data=b"payload", headers={"X-Twice": "a"}, timeout=30)
    assert response.text == "POST a payload"


def test_the_mcp_app_passes_the_validator_on_every_kind_of_answer() -> None:
    server = make_server()
    app = McpWsgiApp(server)
    with HttpServer(validator(app)) as http:
        try:
            url = f"http://127.0.0.1:{http.port}/mcp"
            with mt.Client.http(url) as client:
                assert client.call_tool("greet", {"name": "wsgi"})["content"][0]["text"] == "Hello, wsgi!"
                task = mt.call_tool(client, "slow_compute", {})
                assert isinstance(task, mt.Status)
                assert mt.wait_task(client, task, listen=True, timeout=30).status == "completed"  # an SSE stream
                with pytest.raises(mt.McpError):
                    client.call_tool("no-such-tool")
        finally:
            # The app is behind the validator, out of the HttpServer's reach: closed here, before
            # the server, it ends the listen stream the client left. (Closed after, that stream's
            # thread would end only at its next keep-alive, 5 s on, racing the server's 5 s join.)
            app.close()
    server.close()
