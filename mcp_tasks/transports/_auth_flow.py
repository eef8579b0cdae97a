"""Sending one HTTP request through an auth object under the call's deadline.

A plain `requests` auth object runs its extra exchanges (a token endpoint, a re-send after a 401)
inside a response hook, with whatever timeout it picks. An auth object with an
``auth_flow(request, deadline)`` generator (in the manner of httpx's ``Auth.auth_flow``) says what
to send next instead, and this module sends it: every request of the flow goes through the
session with the time left of the one deadline, so a timeout stays a total. It knows nothing of
OAuth: any object with that method will do.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Protocol, runtime_checkable

import requests

from mcp_tasks._clock import Deadline

__all__ = ["FlowAuth", "send_through_auth"]


@runtime_checkable
class FlowAuth(Protocol):
    """An auth object that drives its own exchanges: the generator yields each request to send
    and receives its response; the response it stops at is the one the caller gets.
    """

    def auth_flow(
        self, request: requests.PreparedRequest, deadline: Deadline
    ) -> Generator[requests.PreparedRequest, requests.Response, None]:
        """Yield `request` (with credentials), then any re-sends the responses call for."""


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
) -> requests.Response:
    """Send `method url` through `session` with `auth`; its response, body unread (streamed).

    An auth object with ``auth_flow`` has each of its requests sent with the time left of
    `deadline`; any other auth (or none) goes through ``Session.request`` with that time.
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
    try:
        outgoing = next(flow)
        while True:
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
            response.close()  # superseded: the flow read what it needed of it
            history.append(response)
    finally:
        flow.close()
