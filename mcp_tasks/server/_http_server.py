"""Serving Streamable HTTP in threads of this process: `HttpServer` puts a `Server` (through a
`McpWsgiApp`) or any WSGI app on the threaded gateway, and owns the threads that serve it.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from mcp_tasks._threads import join_all, start_thread
from mcp_tasks.server._server import Server
from mcp_tasks.server._wsgi_app import McpWsgiApp
from mcp_tasks.server._wsgi_gateway import ThreadedWsgiServer
from mcp_tasks.server._wsgi_types import WsgiApp

__all__ = ["HttpServer", "serve_forever", "serve_http"]


class HttpServer:
    """A `Server` on Streamable HTTP at ``http://host:port/mcp``, in threads of this process.

    `target` is a `Server` (served by a `McpWsgiApp` made with `app_opts`) or any WSGI app.
    Port 0 picks a free port; `url` says which. `close()` stops accepting, ends open streams,
    closes connections and joins every thread. A context manager.

    A WSGI app passed in is its owner's to close, before this server: a thread serving one of
    its streams ends only when the app ends the stream (a `McpWsgiApp` whose client went away
    notices at its next keep-alive), and `close()` waits for such threads 5 s at most.
    """

    def __init__(
        self,
        target: Server | WsgiApp,
        host: str = "127.0.0.1",
        port: int = 0,
        **app_opts: Any,
    ) -> None:
        self.app = McpWsgiApp(target, **app_opts) if isinstance(target, Server) else target
        self._httpd = ThreadedWsgiServer((host, port), self.app)
        self.host, self.port = self._httpd.server_address[0], self._httpd.server_address[1]
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        host = str(self.host)
        path = getattr(self.app, "path", "/mcp")
        return f"http://{host if ':' not in host else f'[{host}]'}:{self.port}{path}"

    def start(self) -> HttpServer:
        """Start accepting connections in a background thread."""
        if self._thread is None:
            self._thread = start_thread(f"server-http-accept-{self.port}", lambda: self._httpd.serve_forever(0.05))
        return self

    def close(self) -> None:
        """Stop the server and join its threads. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(5.0)
        close_app = getattr(self.app, "close", None)
        if close_app is not None:
            close_app()
        connections = self._httpd.close_connections()
        self._httpd.server_close()
        join_all(connections, 5.0)

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def serve_http(server: Server, host: str = "127.0.0.1", port: int = 0, **app_opts: Any) -> HttpServer:
    """Serve `server` over HTTP in background threads; returns the started `HttpServer`."""
    return HttpServer(server, host, port, **app_opts).start()


def serve_forever(server: Server, host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve over HTTP until interrupted (``python -m mcp_tasks.server … --http``)."""
    http_server = HttpServer(server, host, port)
    print(http_server.url, flush=True)
    http_server.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        http_server.close()
        server.close()
