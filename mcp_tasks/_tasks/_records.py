"""Where a client's task records live, and what the tasks code records outside a wait: each task
created and each status read (best effort, an end with more patience), and how a traced wait finds
what was kept of its task. Without a store every call here does nothing.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from mcp_tasks._clock import Deadline
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store import (
    Renewer,
    StoreError,
    TaskRef,
    TaskStore,
    best_effort,
    fences_statuses,
    store_deadline,
)

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel

__all__ = [
    "RESUMING",
    "created_ref",
    "endpoint_of",
    "fenced",
    "record_created",
    "record_status",
    "renewer_of",
    "saved_ref",
    "store_of",
    "try_keep",
]

log = logging.getLogger("mcp_tasks")


def store_of(client: Client, given: object = UNSET) -> TaskStore | None:
    """The store a call records into: `given` (a wait's ``store`` option) or the client's."""
    if given is not UNSET:
        return given  # type: ignore[return-value]
    store: TaskStore | None = client.channel.settings.store
    return store


def renewer_of(channel: Channel) -> Renewer:
    """The client's lease renewer: one thread renewing the leases its waits hold, which ends
    with the client's closing signal (and is joined by its close).
    """
    return channel.attachment(Renewer, lambda opened: Renewer(opened.closing))


def endpoint_of(channel: Channel) -> str:
    """Where the channel's tasks run: the URL (HTTP), the command line (stdio), or
    ``direct:<server name>`` (a server in this process).
    """
    transport = channel.transport
    url = getattr(transport, "url", None)
    if isinstance(url, str) and url:
        return url
    argv = getattr(transport, "argv", None)
    if isinstance(argv, tuple) and argv:
        return shlex.join(argv)
    agreed = channel.agreed
    name = agreed.server_info.get("name") if agreed is not None else None
    return f"direct:{name if isinstance(name, str) and name else 'server'}"


def try_keep(what: str, task_id: str, work: Callable[[], object]) -> bool:
    """Whether `work` recorded `what` (a store that failed is said, and the task goes on)."""
    try:
        work()
    except StoreError as exc:  # the task itself is fine: say so, and go on without the record
        log.warning("task %s: could not record %s: %s", short_id(task_id), what, exc)
        return False
    return True


def created_ref(client: Client, status: Status, tool: str, arguments: Mapping[str, Any] | None) -> TaskRef:
    """What the store keeps of a task the client just created: where, its call, its trace."""
    traced = client.channel.tracing.creation_context(status.task_id)  # None unless the client traces
    return TaskRef(
        endpoint_of(client.channel), status.task_id, status.era, tool, time.time(), status, traced, arguments=arguments
    )


def record_created(
    client: Client,
    status: Status,
    tool: str,
    store: TaskStore | None,
    deadline: Deadline | None = None,
    arguments: Mapping[str, Any] | None = None,
) -> None:
    """Keep a task the client just created (a busy store is retried until the call's `deadline`)."""
    if store is not None:
        ref = created_ref(client, status, tool, arguments)
        with store_deadline(deadline.at if deadline is not None else None):
            try_keep("its creation", status.task_id, lambda: store.record(ref))


RESUMING: ContextVar[TaskRef | None] = ContextVar("mcp_tasks_resuming", default=None)
"""The ref `resume` waits for: what a traced wait links to, with or without a store to find it in."""


def saved_ref(client: Client, task_id: str, given: object, timeout: float | None) -> Callable[[], TaskRef | None]:
    """How a traced wait finds what was kept of `task_id` (the ref being resumed, else the store's
    record, read within `timeout`): called only when the client traces, so an untraced wait reads
    nothing more than before. A store that fails leaves the wait unlinked, not failed.
    """

    def find() -> TaskRef | None:
        resuming = RESUMING.get()
        if resuming is not None and resuming.task_id == task_id:
            return resuming
        store = store_of(client, given)
        if store is None:
            return None
        try:
            with store_deadline(time.monotonic() + timeout if timeout is not None else None):
                return store.get(task_id)
        except StoreError as exc:
            log.warning("task %s: could not read its record to link its trace: %s", short_id(task_id), exc)
            return None

    return find


_UNFENCED: set[type] = set()  # the store classes already said to lack ``update(..., holder=)``
_UNFENCED_LOCK = threading.Lock()


def fenced(store: TaskStore) -> bool:
    """Whether `store` fences statuses by their writer's lease (`fences_statuses`); a store of
    one's own that does not is said once per class: a wait whose lease lapsed since its last
    renewal may still write a status there (records still only move forward, if it keeps that).
    """
    if fences_statuses(store):
        return True
    kind = type(store)
    with _UNFENCED_LOCK:
        said = kind in _UNFENCED
        _UNFENCED.add(kind)
    if not said:
        log.warning(
            "the task store %s has no update(task_id, status, *, holder=None): a wait that lost its task's lease "
            "since its last renewal may still record a status there (give update a holder= keyword, fenced as "
            "write_answers is, for the guarantee)",
            kind.__name__,
        )
    return False


def record_status(
    status: Status, store: TaskStore | None, deadline: Deadline | None = None, holder: str | None = None
) -> bool:
    """Make `status` its task's last status in the store (which keeps it only if it moves the
    record forward): best effort, a busy store is given `STATUS_BUDGET` seconds (`END_BUDGET` for
    a task's end, which a fleet must not lose; less, to the call's `deadline`), then the status
    goes unrecorded, with a warning (False). With `holder`, fenced by its lease where the store
    can (nothing written once another holds it).
    """
    if store is None:
        return True
    fence = holder is not None and fenced(store)

    def update() -> None:
        if fence:
            store.update(status.task_id, status, holder=holder)
        else:  # a store of one's own may take no holder=
            store.update(status.task_id, status)

    with store_deadline(deadline.at if deadline is not None else None), best_effort(end=status.terminal):
        return try_keep("its end" if status.terminal else "its status", status.task_id, update)
