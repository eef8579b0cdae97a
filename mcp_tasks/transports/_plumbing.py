"""The one module that touches what requests, urllib3 and http.client do not document: every
such use is here, small, and tested at the declared floors (tests/transports/test_http_plumbing.py).

- `WatchedAdapter`, a `requests.adapters.HTTPAdapter` whose connections attach each socket they
  make (before TLS) or reuse to the calling thread's current `Watch` (see
  `transports._watchdog`). It uses urllib3's long-stable extension points: the pool manager's
  ``pool_classes_by_scheme``, a pool's ``ConnectionCls``, and the connection's ``_new_conn`` and
  ``_dns_host`` (the private names: where and to what the socket is made, in urllib3 1.26 and 2.x
  alike), so the socket is watched before it connects. Through an HTTP(S) proxy (``proxies=``,
  ``HTTP_PROXY``, ``HTTPS_PROXY``) the proxy manager's pools are ours too (requests' documented
  ``proxy_manager_for`` hook): the socket to the proxy is watched from before it connects, so
  the ``CONNECT`` of a tunnel, its answer, the TLS inside it and every byte after are under the
  watch. A SOCKS proxy's connections are its own package's, and not watched.
- `http_response`, the http.client response under a urllib3 one (``_fp``), whose ``read1``
  returns what one receive brings: an SSE event is handed on as soon as it arrives.
"""

from __future__ import annotations

import http.client
import socket
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.poolmanager import ProxyManager

from mcp_tasks.transports._watchdog import attach_current, connect

__all__ = ["WatchedAdapter", "http_response", "socket_of"]


def _new_conn(conn: Any) -> socket.socket:
    """urllib3's `_new_conn`, with the socket attached to the current watch before it connects
    (its ``_dns_host``, ``port``, ``timeout``, ``source_address`` and ``socket_options``, and its
    exceptions, as urllib3 1.26 and 2.x have them).
    """
    try:
        return connect((conn._dns_host, conn.port), conn.timeout, conn.source_address, conn.socket_options)
    except TimeoutError as exc:
        raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.") from exc
    except OSError as exc:
        raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc


class _WatchedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _new_conn(self)

    def putrequest(self, *args: Any, **kwargs: Any) -> None:
        attach_current(self.sock)  # a reused connection (a new one attaches as it connects)
        super().putrequest(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _new_conn(self)  # watched before the TLS handshake, which a server may trickle too

    def putrequest(self, *args: Any, **kwargs: Any) -> None:
        attach_current(self.sock)
        super().putrequest(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS: dict[str, type[HTTPConnectionPool]] = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class WatchedAdapter(HTTPAdapter):
    """An `HTTPAdapter` whose sockets a `Watch` can cut, through an HTTP(S) proxy too (not a SOCKS one)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """The stock pool manager, with connection pools whose connections attach their sockets."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_WATCHED_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        """The stock proxy manager for `proxy`, with our connection pools (an HTTP(S) proxy's:
        requests makes a SOCKS proxy's manager of another kind, left as it is).
        """
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if isinstance(manager, ProxyManager):
            manager.pool_classes_by_scheme = dict(_WATCHED_POOLS)
        return manager


def http_response(raw: Any) -> http.client.HTTPResponse:
    """The http.client response a urllib3 response reads from."""
    fp = raw._fp
    if not isinstance(fp, http.client.HTTPResponse):
        raise TypeError(f"not a urllib3 response over http.client: {type(raw).__name__}")
    return fp


def socket_of(fp: http.client.HTTPResponse) -> socket.socket | None:
    """The socket under an http.client response (its buffered reader's SocketIO), for a response
    whose connection was not made by `WatchedAdapter` (a user's own adapter). Taken from the
    response, not the connection: for a ``Connection: close`` answer http.client hands the socket
    to the response and the connection forgets it.
    """
    sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None
