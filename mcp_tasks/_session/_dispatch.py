"""Where a server's own messages go: every notification method and every kind of request has one
owner, named explicitly; nothing is guessed.

A server request reaches, in this order: the owner that claimed the pending request on whose
stream it arrived (a wait's own ``tasks/result``), then the owner of the related task it names in
``_meta`` (registered by the tasks code), and otherwise the client's `InputHandlers`. An owner
may decline (return None); the request then goes on to the client's handlers. Notifications go to
the owner of their method, and then (every one) to the client's ``on_notification`` callback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcp_tasks._input import InputHandlers, NoHandler, answer_all, kind_of
from mcp_tasks._session._turns import Until, waiting_until

__all__ = ["RELATED_TASK", "Dispatcher", "RequestOwner", "related_task"]

log = logging.getLogger("mcp_tasks")
server_log = logging.getLogger("mcp_tasks.server")

RELATED_TASK = "io.modelcontextprotocol/related-task"

Message = dict[str, Any]
RequestOwner = Callable[[Message], "Message | None"]
"""Answers a server request with the response message, or returns None to pass it on."""
NotificationOwner = Callable[[str, dict[str, Any]], object]

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_DEPRECATED_KINDS = {"sampling": "sampling/createMessage", "roots": "roots/list"}


def related_task(message: Message) -> str | None:
    """The task a server message names in its ``_meta`` (the related-task key), or None."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
    task_id = related.get("taskId") if isinstance(related, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None


def _no_deadline() -> BaseException:
    raise AssertionError("a deadline that never passes passed")


def error_response(message: Message, error: McpError) -> Message:
    """The JSON-RPC error response to a server request."""
    return {"jsonrpc": "2.0", "id": message.get("id"), "error": error.to_wire()}


class Dispatcher:
    """Routes what a server sends of its own accord (see the module docstring). Thread-safe: the
    transport's reader threads deliver while callers claim and release.
    """

    def __init__(
        self,
        handlers: InputHandlers,
        on_notification: NotificationOwner | None = None,
        ended: Callable[[], BaseException | None] | None = None,
    ) -> None:
        self._handlers = handlers
        self._ended = ended  # the error that ends an answer waiting its turn to ask (the client closing)
        self._on_notification = on_notification
        self._lock = threading.Lock()
        self._notifications: dict[str, NotificationOwner] = {}
        self._related: RequestOwner | None = None
        self._claims: dict[object, RequestOwner] = {}
        self._warned: set[str] = set()

    # -- owners -------------------------------------------------------------------------------

    def own_notifications(self, method: str, owner: NotificationOwner) -> None:
        """Make `owner` the one owner of notifications of `method`."""
        with self._lock:
            if method in self._notifications:
                raise ValueError(f"{method} notifications already have an owner")
            self._notifications[method] = owner

    def own_related_requests(self, owner: RequestOwner) -> None:
        """Make `owner` the one owner of server requests that name a related task."""
        with self._lock:
            if self._related is not None:
                raise ValueError("requests that name a task already have an owner")
            self._related = owner

    def claim(self, request_id: object, owner: RequestOwner) -> None:
        """Server requests that arrive on the stream of pending request `request_id` go to `owner`."""
        with self._lock:
            self._claims[request_id] = owner

    def release(self, request_id: object) -> None:
        """The pending request `request_id` is answered (or abandoned)."""
        with self._lock:
            self._claims.pop(request_id, None)

    # -- delivery -----------------------------------------------------------------------------

    def receive(self, message: Message, origin: object = None) -> Message | None:
        """Take a message the transport could not match to a pending request; the response for
        a server request, None for a notification.
        """
        method = message.get("method")
        if "id" not in message:
            params = message.get("params")
            self._notification(str(method), params if isinstance(params, dict) else {})
            return None
        if method == "ping":
            return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        kind = kind_of(message)
        if kind is None:
            log.warning("the server sent a request (%s) this client does not serve; refusing it", method)
            return error_response(message, McpError(METHOD_NOT_FOUND, f"Method not found: {method}"))
        self._warn_deprecated(kind)
        for owner in self._owners(message, origin):
            response = owner(message)
            if response is not None:
                return response
        return self._answer(message)

    def _owners(self, message: Message, origin: object) -> list[RequestOwner]:
        with self._lock:
            owners = []
            claimed = self._claims.get(origin) if origin is not None else None
            if claimed is not None:
                owners.append(claimed)
            if self._related is not None and related_task(message) is not None:
                owners.append(self._related)
            return owners

    def _answer(self, message: Message) -> Message:
        """The client's input handlers answer (with the same checks as an input_required round)."""
        try:
            with self._waiting():
                answered = answer_all(self._handlers, {"request": message}, message)
        except NoHandler as missing:
            log.warning("no input handler for the server's %s request; refusing it", missing.kind)
            return error_response(
                message, McpError(METHOD_NOT_FOUND, f"The client has no handler for {missing.kind} requests")
            )
        except McpError as exc:
            return error_response(message, McpError(INVALID_PARAMS, str(exc.message)))
        except Exception:
            log.exception("the input handler for a %s request failed", message.get("method"))
            return error_response(message, McpError(INTERNAL_ERROR, "The client's input handler failed"))
        return {"jsonrpc": "2.0", "id": message["id"], "result": answered["request"]}

    def _waiting(self) -> AbstractContextManager[None]:
        """A question waiting its turn to ask a person leaves when the client closes (no deadline)."""
        if self._ended is None:
            return nullcontext()
        return waiting_until(Until(Deadline.never(), _no_deadline, self._ended))

    def _warn_deprecated(self, kind: str) -> None:
        """SEP-2577 deprecates sampling and roots: still answered, with a warning once per client."""
        method = _DEPRECATED_KINDS.get(kind)
        if method is None or method in self._warned:
            return
        self._warned.add(method)
        log.warning("the server sent %s, which MCP deprecates (SEP-2577); answering it anyway", method)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            server_log.log(level, "%s", params.get("data"))
            return
        owner = self._notifications.get(method)
        if owner is not None:
            try:
                owner(method, params)
            except Exception:
                log.exception("the owner of %s notifications failed", method)
        callback = self._on_notification
        if callback is None:
            log.debug("server notification %s", method)
            return
        try:
            callback(method, params)
        except Exception:
            log.exception("the on_notification callback failed for %s", method)
