"""Sending one HTTP request through an auth object under the call's deadline.

A plain `requests` auth object runs its extra exchanges (a token endpoint, a re-send after a 401)
inside a response hook, with whatever timeout it picks. An auth object with an
``auth_flow(request, deadline)`` generator (in the manner of httpx's ``Auth.auth_flow``) says what
to send next instead, and this module sends it: every request of the flow goes through the
session with the time left of the one deadline, so a timeout stays a total. It knows nothing of
OAuth: any object with that method will do.

The flow may also yield requests of its own (to an authorization server, say) as ``(request,
deadline, verify)``: each is sent on the same session under a watch of its own (the transport's
watchdog cuts its sockets at that `deadline`, the flow's own bound within the call's), with the
proxies for its URL and the flow's TLS verification (no client certificate: that is the MCP
server's); the flow gets the response with its body unread and reads it before it yields again,
still under that watch. A request that fails is thrown into the flow, which reports it in its own
words (or lets it go up).
"""

from __future__ import annotations

import http.client
from collections.abc import Generator, Mapping
from typing import Any, Protocol, runtime_checkable

import requests
import urllib3

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import TransportError
from mcp_tasks.transports._watchdog import Watchdog, watching

__all__ = ["FlowAuth", "Outgoing", "send_through_auth"]

Outgoing = tuple[requests.PreparedRequest, Deadline, bool | str]
"""A request of the flow's own: the request, its deadline, and its TLS verification."""

_FAILED = (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


@runtime_checkable
class FlowAuth(Protocol):
    """An auth object that drives its own exchanges: the generator yields each request to send
    and receives its response; the response it stops at is the one the caller gets.
    """

    def auth_flow(
        self, request: requests.PreparedRequest, deadline: Deadline
    ) -> Generator[requests.PreparedRequest | Outgoing, requests.Response, None]:
        """Yield `request` (with credentials), then any re-sends the responses call for, and any
        requests of its own as `Outgoing`.
        """


def _unchanged(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """An auth that adds nothing (so the session's own ``auth`` is not applied on top of the flow)."""
    return request


def send_through_auth(
    session: requests.Session,
    method: str,
    url: str,
    deadline: Deadline,
    *,
    auth: Any,
    data: bytes,
    headers: Mapping[str, str],
    verify: bool | str | None,
    cert: Any,
    proxies: Mapping[str, str] | None,
    watchdog: Watchdog,
) -> requests.Response:
    """Send `method url` through `session` with `auth`; its response, body unread (streamed).

    An auth object with ``auth_flow`` has each of its requests sent with the time left of
    `deadline` (its own ones under watches of `watchdog`); any other auth (or none) goes through
    ``Session.request`` with that time.
    """
    if not isinstance(auth, FlowAuth):
        step = deadline.step()
        return session.request(
            method,
            url,
            data=data,
            headers=dict(headers),
            auth=auth,
            # (connect, read) rather than a urllib3 Timeout: an auth hook that re-sends passes
            # the same timeout on, and a started Timeout cannot be used twice.
            timeout=(step, step),
            stream=True,
            allow_redirects=False,
            verify=verify,
            cert=cert,
            proxies=dict(proxies) if proxies else None,
        )
    prepared = session.prepare_request(requests.Request(method, url, data=data, headers=dict(headers), auth=_unchanged))
    settings = session.merge_environment_settings(prepared.url, dict(proxies) if proxies else {}, True, verify, cert)
    flow = auth.auth_flow(prepared, deadline)
    history: list[requests.Response] = []
    last: requests.Response | None = None  # the server's latest answer: the caller's, if the flow stops
    try:
        outgoing = next(flow)
        while True:
            if isinstance(outgoing, tuple):
                try:
                    outgoing = _own_request(session, flow, outgoing, proxies, watchdog)
                except StopIteration:
                    if last is None:
                        raise TransportError("the auth object's flow ended before it sent the request") from None
                    last.history = history
                    return last
                continue
            if last is not None:
                last.close()  # superseded: the flow read what it needed of it
                history.append(last)
                last = None
            step = deadline.step()
            response = session.send(outgoing, timeout=(step, step), allow_redirects=False, **settings)
            try:
                outgoing = flow.send(response)
            except StopIteration:
                response.history = history
                return response
            except BaseException:
                response.close()  # the flow failed (a token endpoint, a deadline): nobody reads it
                raise
            last = response
    except BaseException:
        if last is not None:
            last.close()
        raise
    finally:
        flow.close()


def _own_request(
    session: requests.Session,
    flow: Generator[requests.PreparedRequest | Outgoing, requests.Response, None],
    outgoing: Outgoing,
    proxies: Mapping[str, str] | None,
    watchdog: Watchdog,
) -> requests.PreparedRequest | Outgoing:
    """Send a request of the flow's own under a watch with its deadline; what the flow sends next.
    The watch stays on while the flow reads the answer, and its connection is closed after.
    """
    request, bound, verify = outgoing
    watch = watchdog.watch(bound)
    try:
        with watching(watch):
            try:
                step = bound.step()
                settings = session.merge_environment_settings(
                    request.url, dict(proxies) if proxies else {}, True, verify, None
                )
                response = session.send(request, timeout=(step, step), allow_redirects=False, **settings)
            except _FAILED as exc:
                return flow.throw(exc)
            try:
                return flow.send(response)
            finally:
                response.close()
    finally:
        watch.close()
