"""The OAuth client's own HTTP: JSON documents and form posts to authorization servers and
metadata endpoints, each bounded by the flow's deadline. Never the MCP server's auth object: these
requests carry no bearer token, and nothing of their bodies is logged.

The parts of the flow that talk to an authorization server are generators (`Exchanges`), in the
manner of httpx's ``Auth.auth_flow``: each yields the requests of its own as ``(request,
deadline, verify)`` and gets each one's response back (its body unread: the flow reads it, at most
1 MiB), so whoever drives them decides how a request goes out. The MCP client's HTTP transport
sends them on its own watched connections, where the deadline bounds every byte (the name lookup,
connect, TLS, status line, headers, body); `OAuthHttp.run` sends them itself for plain `requests`
users, and for an `OAuth` given a `session` of its own, where the deadline bounds each read.

A failed request is raised into the flow where it asked for it (a driver throws it there), and
reported here as the flow's: `RequestTimeout` ("Authorization timed out talking to <url>") once
the deadline passed, else `OAuthError` ("could not reach <url>").
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.parse
from collections.abc import Generator, Mapping
from typing import Any, TypeVar

import requests
import urllib3
from requests.utils import default_headers

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, OAuthError, RequestTimeout

__all__ = ["Exchanges", "OAuthHttp", "Outgoing", "deadline_timeout", "loggable"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")

Outgoing = tuple[requests.PreparedRequest, Deadline, bool | str]
"""A request of the flow's own: the request, the deadline every byte of it is under, and the TLS
verification it asks for (True, False, or a CA bundle's path)."""

Exchanges = Generator[Outgoing, requests.Response, T]
"""A part of the flow that talks to authorization servers: it yields each `Outgoing` request and
receives its response; what it returns is the part's result."""

_MAX_DOCUMENT = 1 << 20
_FAILED = (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
_TIMED_OUT = (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)


class OAuthHttp:
    """GETs and POSTs for the flow (TLS verified unless told), as `Exchanges`; `session` is the
    one the `OAuth` was given for them (None: the driver's connections, or a fresh session each).
    """

    def __init__(self, session: requests.Session | None = None, *, verify: bool | str = True) -> None:
        self.session = session
        self.verify = verify

    def close(self) -> None:
        """Nothing stays open between requests (a flow is rare; its connections are not kept)."""

    def get_json(self, url: str, deadline: Deadline) -> Exchanges[dict[str, Any] | None]:
        """A JSON object from `url`; None when there is none there (an error status, not JSON)."""
        status, _, document = yield from self._exchange("GET", url, deadline, {"Accept": "application/json"})
        if status != 200:
            log.debug("oauth: GET %s -> HTTP %s", loggable(url), status)
            return None
        return document if isinstance(document, dict) else None

    def post(
        self,
        url: str,
        deadline: Deadline,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        auth: tuple[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Exchanges[tuple[int, dict[str, Any] | None, Mapping[str, str]]]:
        """POST a form (or a JSON `body`) with extra `headers` (a DPoP proof); the status, the JSON
        object answered (or None) and the response's headers.
        """
        sent = {"Accept": "application/json", **(headers or {})}
        data: Any = None
        if form is not None:
            data = dict(form)
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        basic = requests.auth.HTTPBasicAuth(*auth) if auth is not None else None
        status, answered, document = yield from self._exchange("POST", url, deadline, sent, data, basic)
        log.debug("oauth: POST %s -> HTTP %s", loggable(url), status)
        return status, document if isinstance(document, dict) else None, answered

    def through(self, exchanges: Exchanges[T]) -> Exchanges[T]:
        """`exchanges` for a driver to send: as they are, or, when this object has a session of
        its own, sent here (`run`) with nothing left for the driver.
        """
        if self.session is not None:
            return self.run(exchanges)
        return (yield from exchanges)

    def run(self, exchanges: Exchanges[T]) -> T:
        """Send the requests of `exchanges` here (on this object's session, or on one made for
        them and closed after), each with the time left of its deadline as its timeout: a bound
        on each read (the MCP client's transport bounds every byte instead).
        """
        session = self.session if self.session is not None else requests.Session()
        try:
            outgoing = next(exchanges)
            while True:
                request, deadline, verify = outgoing
                if self.session is not None:
                    request = _merged(session, request)
                try:
                    settings = session.merge_environment_settings(request.url, {}, True, verify, None)
                    response = session.send(request, timeout=deadline.step(), allow_redirects=False, **settings)
                except _FAILED as exc:
                    outgoing = exchanges.throw(exc)
                    continue
                try:
                    outgoing = exchanges.send(response)
                finally:
                    response.close()
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            exchanges.close()
            if self.session is None:
                session.close()

    def _exchange(
        self,
        method: str,
        url: str,
        deadline: Deadline,
        headers: Mapping[str, str],
        data: Any = None,
        auth: requests.auth.AuthBase | None = None,
    ) -> Exchanges[tuple[int, Mapping[str, str], Any]]:
        """One request of the flow: its status, headers and body (JSON, or None)."""
        if not url.startswith(("https://", "http://")):
            raise OAuthError(f"the authorization metadata names a URL that is not http(s): {url!r}")
        if deadline.expired():
            raise RequestTimeout(deadline_timeout(deadline), "Authorization timed out")
        request = requests.Request(method, url, headers={**default_headers(), **headers}, data=data, auth=auth)
        try:
            response = yield (request.prepare(), deadline, self.verify)
            try:
                document = _json(response)
            finally:
                response.close()
        except McpError:
            raise
        except _FAILED as exc:
            if deadline.expired() or isinstance(exc, _TIMED_OUT):
                raise _timed_out(deadline, url) from exc
            raise OAuthError(f"could not reach {loggable(url)}: {type(exc).__name__}") from exc
        if document is None and deadline.expired():
            raise _timed_out(deadline, url)  # the body was cut short at the deadline
        return response.status_code, response.headers, document


def _merged(session: requests.Session, request: requests.PreparedRequest) -> requests.PreparedRequest:
    """`request` with what a session of the user's adds (its headers, under the request's own,
    and its cookies); its client authentication stays the flow's.
    """
    again = requests.Request(
        str(request.method), str(request.url), headers=dict(request.headers), data=request.body, auth=_as_is
    )
    return session.prepare_request(again)


def _as_is(request: requests.PreparedRequest) -> requests.PreparedRequest:
    return request


def _timed_out(deadline: Deadline, url: str) -> RequestTimeout:
    return RequestTimeout(deadline_timeout(deadline), f"Authorization timed out talking to {loggable(url)}")


def loggable(url: str) -> str:
    """`url` for log lines and messages: no user info, query or fragment (they may carry a code or
    a key).
    """
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def deadline_timeout(deadline: Deadline) -> float:
    """The timeout a deadline was made with, for `RequestTimeout` (its data in milliseconds)."""
    return deadline.timeout or 0.0


def _json(response: requests.Response) -> Any:
    raw = response.raw.read(_MAX_DOCUMENT + 1, decode_content=True) if response.raw is not None else b""
    if len(raw) > _MAX_DOCUMENT:
        return None
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
