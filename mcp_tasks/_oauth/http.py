"""The OAuth client's own HTTP: JSON documents and form posts to authorization servers and
metadata endpoints, each bounded by the flow's deadline. Never the MCP server's auth object: these
requests carry no bearer token, and nothing of their bodies is logged.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import requests

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError, RequestTimeout

__all__ = ["OAuthHttp", "loggable"]

log = logging.getLogger("mcp_tasks")

_MAX_DOCUMENT = 1 << 20


class OAuthHttp:
    """GETs and POSTs for the flow over one `requests.Session` (TLS verified unless told)."""

    def __init__(self, session: requests.Session | None = None, *, verify: bool | str = True) -> None:
        self.session = session
        self.verify = verify

    def close(self) -> None:
        """Nothing stays open between requests (a flow is rare; its connections are not kept)."""

    def get_json(self, url: str, deadline: Deadline) -> dict[str, Any] | None:
        """A JSON object from `url`; None when there is none there (an error status, not JSON)."""
        response = self._send("GET", url, deadline, headers={"Accept": "application/json"})
        try:
            if response.status_code != 200:
                log.debug("oauth: GET %s -> HTTP %s", loggable(url), response.status_code)
                return None
            document = _json(response)
            return document if isinstance(document, dict) else None
        finally:
            response.close()

    def post(
        self,
        url: str,
        deadline: Deadline,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        auth: tuple[str, str] | None = None,
    ) -> tuple[int, dict[str, Any] | None]:
        """POST a form (or a JSON `body`); the status and the JSON object answered (or None)."""
        status, document, _ = self.post_with_headers(url, deadline, form=form, body=body, auth=auth)
        return status, document

    def post_with_headers(
        self,
        url: str,
        deadline: Deadline,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        auth: tuple[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, Any] | None, Mapping[str, str]]:
        """`post` with extra request `headers` (a DPoP proof), answering the response's headers too."""
        extra = headers
        headers = {"Accept": "application/json", **(extra or {})}
        kwargs: dict[str, Any] = {"headers": headers, "allow_redirects": False}
        if form is not None:
            kwargs["data"] = dict(form)
        if body is not None:
            kwargs["data"] = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if auth is not None:
            kwargs["auth"] = requests.auth.HTTPBasicAuth(*auth)
        response = self._send("POST", url, deadline, **kwargs)
        try:
            document = _json(response)
            log.debug("oauth: POST %s -> HTTP %s", loggable(url), response.status_code)
            return response.status_code, document if isinstance(document, dict) else None, response.headers
        finally:
            response.close()

    def _send(self, method: str, url: str, deadline: Deadline, **kwargs: Any) -> requests.Response:
        if not url.startswith(("https://", "http://")):
            raise OAuthError(f"the authorization metadata names a URL that is not http(s): {url!r}")
        left = deadline.remaining()
        if left is not None and left <= 0:
            raise RequestTimeout(deadline_timeout(deadline), "Authorization timed out")
        session = self.session if self.session is not None else requests.Session()
        try:
            response = session.request(method, url, timeout=left, verify=self.verify, stream=True, **kwargs)
            if self.session is None:
                response.close = _closing(response, session)  # type: ignore[method-assign]
            return response
        except requests.Timeout as exc:
            raise RequestTimeout(
                deadline_timeout(deadline), f"Authorization timed out talking to {loggable(url)}"
            ) from exc
        except requests.RequestException as exc:
            raise OAuthError(f"could not reach {loggable(url)}: {type(exc).__name__}") from exc
        finally:
            if self.session is None and "response" not in locals():
                session.close()


def _closing(response: requests.Response, session: requests.Session) -> Callable[[], None]:
    """`response.close` that also closes the one-request session it came from."""
    close = response.close

    def both() -> None:
        close()
        session.close()

    return both


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
