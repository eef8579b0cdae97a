"""How an HTTP request reaches the server, for `HttpTransport`: the path a message takes, and the
user's `requests.Session` as it is.

It is a module of its own because it is a job of its own, with its own state (the requests
session, our adapter, the direct pool, the cookie lock): `transports.http` decides what a message
carries and what an answer means; this only gets the bytes there and hands back the `Response`.

**Bodies and the pool.** Requests keep the session's ``Accept-Encoding`` (requests asks for
``gzip, deflate``): answers can be large task results, worth compressing off loopback, and
`transports._body` decodes them incrementally under the size cap (so a compression bomb is
refused). A listen stream asks for ``identity`` (`transports._headers`): a compressing server or
proxy buffers its output, which would hold notifications back, and the stream carries small
messages anyway; one that compresses regardless is still decoded. The pool is our own adapter's (a
user's session keeps its adapters for what else it does, and cannot evict it); it does not block
and keeps up to `AUTO_POOL_SIZE` idle connections, so every thread sharing the client gets one and
hands it back.

**Speed, and the user's session.** With a plain `requests.Session` (no auth, no response hooks,
no cookies, the stock adapter, no proxy for the URL), a message goes straight to our pool, with
the session's headers, verify and cert as they were when the client was made. Otherwise it goes
through `Session.request` (`Sender.post_through_session`, the one place), so auth objects
(and their 401 response hooks, as `requests.auth.HTTPDigestAuth` uses), hooks, cookies, proxies,
verify and cert act exactly as they do for any requests call; a stock adapter the user's session
has for the URL is swapped for ours in a view of the session, one the user mounted is used as it
is. Redirects are not followed on either path.
"""

from __future__ import annotations

import collections
import functools
import http.client
import logging
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from requests.cookies import MockRequest
from requests.utils import select_proxy

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError
from mcp_tasks._redact import shown_endpoint
from mcp_tasks.transports._auth_flow import send_through_auth
from mcp_tasks.transports._base import Sent
from mcp_tasks.transports._body import Response
from mcp_tasks.transports._direct import DirectPool
from mcp_tasks.transports._failures import failure
from mcp_tasks.transports._headers import canonical
from mcp_tasks.transports._plumbing import WatchedAdapter
from mcp_tasks.transports._watchdog import Watch, Watchdog, watching

__all__ = ["AUTO_POOL_SIZE", "Sender"]

log = logging.getLogger("mcp_tasks")

AUTO_POOL_SIZE: Final = 4096
"""Idle connections a pool made here keeps (it opens only as many as requests run at once)."""

FAILURES: Final = (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
"""What an exchange with the server may raise on its way (made an `McpError` by `failure`)."""


class Sender:
    """Sends one HTTP request to one endpoint, on the path it may take (see the module's
    docstring), under the caller's watch; the `Response`, its body unread.

    A `session` passed in is used as it is and never closed here; otherwise one is made with our
    adapter, whose pool keeps `pool_size` connections (None: `AUTO_POOL_SIZE`).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None,
        auth: AuthBase | tuple[str, str] | None,
        session: requests.Session | None,
        verify: bool | str | None,
        cert: str | tuple[str, str] | None,
        proxies: Mapping[str, str] | None,
        pool_size: int | None,
        watchdog: Watchdog,
    ) -> None:
        self._own_session = session is None
        # Our own adapter, whose sockets the watchdog can cut, and whose pool no other origin
        # evicts: a user's session keeps its adapters for everything else it does.
        self._adapter = WatchedAdapter(pool_connections=4, pool_maxsize=pool_size or AUTO_POOL_SIZE, pool_block=False)
        if session is None:
            session = requests.Session()
            session.mount("http://", self._adapter)
            session.mount("https://", self._adapter)
        self._session = session
        template = session.prepare_request(requests.Request("POST", url))
        assert template.url is not None
        self.url: str = template.url
        """The endpoint, as requests prepared it."""
        self.where = shown_endpoint(self.url)
        """The endpoint as an error or a log line shows it."""
        parts = urllib.parse.urlsplit(self.url)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        fixed = requests.structures.CaseInsensitiveDict(dict(headers or {}))
        fixed["Content-Type"] = "application/json"
        fixed["Accept"] = "application/json, text/event-stream"
        self.fixed = dict(fixed.items())
        """The headers every message carries (``Content-Type``, ``Accept``, the client's own)."""
        merged = requests.structures.CaseInsensitiveDict(template.headers)
        merged.update(fixed)
        merged.pop("Cookie", None)
        merged.pop("Content-Length", None)  # each body's own is set as it is sent
        self._plain_headers = canonical(dict(merged.items()))
        self._auth: Any = auth
        self._verify, self._cert = verify, cert
        self._proxies = dict(proxies) if proxies else None
        settings = session.merge_environment_settings(self.url, dict(proxies or {}), True, verify, cert)
        self._prefix = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
        self._stock = self._own_session or type(session.get_adapter(self.url)) is HTTPAdapter
        self._snapshot = (session.verify, session.cert, dict(session.proxies))
        self._pool = self._direct_pool(settings, pool_size)
        self._cookie_lock = threading.Lock()
        self._watchdog = watchdog

    def _direct_pool(self, settings: Any, pool_size: int | None) -> DirectPool | None:
        """Kept connections for the plain path, when messages may skip requests (the session is a
        plain `requests.Session` whose adapter for the URL is the stock one, and no proxy).
        """
        if not self._stock or type(self._session) is not requests.Session:
            return None
        if select_proxy(self.url, settings["proxies"]):
            return None
        parts = urllib.parse.urlsplit(self.url)
        return DirectPool(
            parts.scheme,
            parts.hostname or "",
            parts.port,
            verify=settings["verify"],
            cert=settings["cert"],
            max_idle=pool_size or AUTO_POOL_SIZE,
            headers=self._plain_headers,
        )

    def _via(self) -> requests.Session:
        """The session a message goes through when it takes `Session.request`: ours, or a view of
        the user's session (its headers, cookies, auth, hooks, all shared) whose stock adapters
        are ours, so the watchdog can cut every socket, an auth object's re-sends and its own
        requests (an authorization server's) included; an adapter the user mounted is used as it is.
        """
        session = self._session
        if self._own_session:
            return session
        view = object.__new__(type(session))
        view.__dict__.update(session.__dict__)
        # Every stock adapter is ours in the view: an auth flow's own requests (an authorization
        # server's) are watched too. One the user mounted is used as it is.
        view.adapters = collections.OrderedDict(
            (prefix, self._adapter if type(adapter) is HTTPAdapter else adapter)
            for prefix, adapter in session.adapters.items()
        )
        if self._stock:
            view.mount(self._prefix, self._adapter)
        return view

    def _plain(self) -> bool:
        """Whether this message may skip `Session.request` (nothing it would do applies)."""
        session = self._session
        return (
            self._pool is not None
            and self._auth is None
            and session.auth is None
            and not session.hooks.get("response")
            and not session.cookies
            and (session.verify, session.cert, session.proxies) == self._snapshot
        )

    def post(
        self, body: bytes, headers: dict[str, str], deadline: Deadline, watch: Watch, sent: Sent | None
    ) -> Response:
        """POST `body` with the message's own `headers` (the fixed ones are added here) within
        `deadline`, under `watch` (this thread's current one). A failure on the way is an
        `McpError`; `sent` learns it reached the server when it went straight to a connected one.
        """
        step = deadline.step()
        plain = self._plain()
        try:
            if plain:
                return self._post_direct(body, headers, step, watch)
            return self.post_through_session(body, {**self.fixed, **headers}, deadline, watch)
        except McpError:
            raise  # an auth flow's own (a token endpoint that timed out, refused, or was not reached)
        except FAILURES as exc:
            raise failure(exc, deadline, self.where, watch) from exc
        finally:
            if sent is not None and plain and watch.attached:
                sent.reached = True  # straight to a connected server: it may have the request

    def _post_direct(self, body: bytes, headers: dict[str, str], step: float | None, watch: Watch) -> Response:
        """POST straight to a kept connection (see `_plain` and `transports._direct`)."""
        assert self._pool is not None
        fp, conn = self._pool.post(self._path, body, headers, step)
        if "set-cookie" in fp.headers:
            self._keep_cookies({**self.fixed, **headers}, body, fp)
        return Response(fp, self.where, watch, functools.partial(self._pool.release, conn))

    def post_through_session(self, body: bytes, headers: dict[str, str], deadline: Deadline, watch: Watch) -> Response:
        """POST through `Session.request`, where the user's auth object (and its re-sends, as a
        401 response hook makes, or as its ``auth_flow`` asks: see `_auth_flow`), hooks, cookies,
        proxies and adapters act: the one place a message goes that way. The sockets it uses are
        attached to the caller's watch (see `_via`), so the call's deadline bounds every exchange
        made here.
        """
        raw = send_through_auth(
            self._via(),
            "POST",
            self.url,
            deadline,
            auth=self._auth,
            data=body,
            headers=headers,
            verify=self._verify,
            cert=self._cert,
            proxies=self._proxies,
            watchdog=self._watchdog,
        ).raw
        return Response.of(raw, self.where, watch)

    def _keep_cookies(self, headers: dict[str, str], body: bytes, fp: http.client.HTTPResponse) -> None:
        prepared = requests.PreparedRequest()
        prepared.prepare(method="POST", url=self.url, headers=headers, data=body)
        with self._cookie_lock:
            self._session.cookies.extract_cookies(fp, MockRequest(prepared))  # type: ignore[arg-type]

    def get(self, headers: dict[str, str], watch: Watch, connect_timeout: float) -> Response:
        """GET the endpoint's stream with `headers` (all of them: the fixed ones are not added)
        under `watch`; its `Response`, body unread and without a read timeout (its reader sets one).
        """
        try:
            with watching(watch):
                raw = (
                    self._via()
                    .get(
                        self.url,
                        headers=headers,
                        stream=True,
                        timeout=(connect_timeout, None),
                        verify=self._verify,
                        cert=self._cert,
                        proxies=self._proxies,
                        auth=self._auth,
                        allow_redirects=False,
                    )
                    .raw
                )
        except FAILURES as exc:
            raise failure(exc, Deadline(None), self.where, watch) from exc
        return Response.of(raw, self.where, watch)

    def delete(self, headers: dict[str, str], timeout: float) -> None:
        """DELETE the endpoint with `headers` over the fixed ones, within `timeout` (under a watch of
        its own), best effort: a failure is logged.
        """
        watch = self._watchdog.watch(Deadline(timeout))
        try:
            with watching(watch):
                self._via().delete(
                    self.url,
                    headers={**self.fixed, **headers},
                    timeout=timeout,
                    verify=self._verify,
                    cert=self._cert,
                    proxies=self._proxies,
                    auth=self._auth,
                ).close()
        except (requests.RequestException, http.client.HTTPException, OSError) as exc:
            log.debug("DELETE of the session failed: %s", type(exc).__name__)
        finally:
            watch.close()

    def close(self) -> None:
        """Close the kept connections, and the requests session unless it was passed in."""
        if self._pool is not None:
            self._pool.close()
        if self._own_session:
            self._session.close()
        else:
            self._adapter.close()
