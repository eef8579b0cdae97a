"""The default authorization step: show the user the authorization URL (the browser, a link in a
notebook, a line on stderr) and catch the redirect on 127.0.0.1.

No thread: the listening socket is polled in the caller's thread, in slices, so Ctrl-C stops it.
"""

from __future__ import annotations

import logging
import socket
import sys
import time
import urllib.parse
import webbrowser
from collections.abc import Callable

from mcp_tasks._clock import SLICE
from mcp_tasks._errors import OAuthError

__all__ = ["LoopbackAuthorize", "free_loopback_redirect_uri"]

log = logging.getLogger("mcp_tasks")

DEFAULT_AUTHORIZE_TIMEOUT = 300.0
CALLBACK_PATH = "/callback"
_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcp_tasks</title>"
    b"<p>Authorization finished. You can close this tab and return to your program.</p>"
)


def free_loopback_redirect_uri() -> str:
    """``http://127.0.0.1:<a free port>/callback`` (the port is free now; it is bound again later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    instance = get() if callable(get) else None
    return instance is not None and type(instance).__name__ == "ZMQInteractiveShell"


def show_link(url: str) -> None:
    """Put the authorization URL in front of the user: a link in a notebook, else the browser and
    a line on stderr (for a terminal without a browser).
    """
    if _in_notebook():
        from IPython.display import HTML, display

        escaped = url.replace("&", "&amp;").replace('"', "&quot;")
        display(HTML(f'<a href="{escaped}" target="_blank">Authorize mcp_tasks</a>'))
        return
    print(f"Open this URL to authorize mcp_tasks:\n  {url}", file=sys.stderr, flush=True)
    try:
        webbrowser.open(url)
    except Exception as exc:  # no browser here: the printed link is enough
        log.debug("could not open a browser: %r", exc)


class LoopbackAuthorize:
    """``authorize(url) -> redirect URL``: shows `url`, then waits up to `timeout` seconds for the
    browser to come back to `redirect_uri` (an ``http://127.0.0.1`` or ``localhost`` URL).
    """

    def __init__(self, *, timeout: float = DEFAULT_AUTHORIZE_TIMEOUT, show: Callable[[str], None] = show_link) -> None:
        self.timeout = timeout
        self.show = show
        self.redirect_uri: str | None = None

    def __call__(self, url: str) -> str:
        """Show the authorization URL and return the URL the browser was redirected to."""
        redirect = urllib.parse.urlsplit(self.redirect_uri or "")
        if redirect.scheme != "http" or redirect.hostname not in ("127.0.0.1", "localhost") or not redirect.port:
            raise OAuthError(
                f"the default authorization step needs an http://127.0.0.1:PORT redirect URI, not {self.redirect_uri!r}"
            )
        path = redirect.path or "/"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", redirect.port))
            listener.listen(8)
            listener.settimeout(SLICE)
            self.show(url)
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    continue
                with connection:
                    target = _serve_one(connection, path)
                if target is not None:
                    return f"http://{redirect.netloc}{target}"
        raise OAuthError(f"no authorization came back to {self.redirect_uri} within {self.timeout:.0f}s")

    def __repr__(self) -> str:
        return f"<LoopbackAuthorize redirect_uri={self.redirect_uri!r}>"


def _serve_one(connection: socket.socket, path: str) -> str | None:
    """Read one request; answer it; its target when it is the redirect (`path` with a query)."""
    connection.settimeout(5.0)
    data = b""
    try:
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    words = data.split(b"\r\n", 1)[0].split()
    target = words[1].decode("latin-1") if len(words) >= 2 and words[0] == b"GET" else ""
    hit = urllib.parse.urlsplit(target).path == path and "?" in target
    body = _PAGE if hit else b"not found"
    status = b"200 OK" if hit else b"404 Not Found"
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
    try:
        connection.sendall(head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    except OSError:
        pass
    return target if hit else None
