"""One run of the registered Celery task: start the call (or find the one its key already
started), read the task once, and either put its outcome in the result or send the next check
of the same Celery id and let this run go (`Ignore`), so that no worker slot is held while the
MCP task runs. The decision is `_step.decide`; this module does its I/O.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
from celery import Task
from celery.exceptions import Ignore

from mcp_tasks._client import Client
from mcp_tasks._errors import McpError, TaskTimeout, TransportError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status, TaskState
from mcp_tasks._store import StoreError, TaskStore
from mcp_tasks._tasks import call_tool, cancel_task, get_task, wait_task
from mcp_tasks._tasks._wait import checked
from mcp_tasks.celery._chain import Chain, forget_record, keeps_keys, late_by, quiet_after, write_record
from mcp_tasks.celery._clients import Clients
from mcp_tasks.celery._durations import Durations
from mcp_tasks.celery._error import TaskError, failure_of
from mcp_tasks.celery._inputs import input_meta, pending_answers
from mcp_tasks.celery._outcome import REVOKED_REASON, result_ready, verdict
from mcp_tasks.celery._revoke import CANCEL_TIMEOUT
from mcp_tasks.celery._step import MIN_CHECK, Check, Finish, Revoked, TimedOut, decide

if TYPE_CHECKING:
    from mcp_tasks.celery._waker import Waker

__all__ = ["ANSWER_HOLD", "CANCEL_TIMEOUT", "Call", "move_answers", "run", "send_check"]

log = logging.getLogger("mcp_tasks")

ANSWER_HOLD = 1.0
"""Seconds a check may hold its worker to answer input (the handlers', or answers left by
`McpTasks.answer`) and see the answer taken."""
START_TIMEOUT = 30.0
"""Seconds for the ``tools/call`` that starts the task (and for each check's ``tasks/get``)."""


@attrs.frozen
class Call:
    """The keywords of one call, as its Celery message carries them (JSON)."""

    endpoint: str
    tool: str
    arguments: dict[str, Any] | None
    timeout: float | None
    cancel_on_timeout: bool
    raise_on_error: bool
    key: str | None

    def __attrs_post_init__(self) -> None:
        for name in ("endpoint", "tool"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string")
        if self.arguments is not None and not isinstance(self.arguments, Mapping):
            raise TypeError(f"arguments must be a JSON object or None, got {type(self.arguments).__name__}")
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))):
            raise TypeError(f"timeout must be a number of seconds or None, got {type(self.timeout).__name__}")
        for name in ("cancel_on_timeout", "raise_on_error"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False")

    def keywords(self, shown: str) -> dict[str, Any]:
        """The keywords of the next check's message (`shown`: the state the result shows)."""
        return {
            "timeout": self.timeout,
            "cancel_on_timeout": self.cancel_on_timeout,
            "raise_on_error": self.raise_on_error,
            "key": self.key,
            "_shown": shown,
        }


def run(
    task: Task,
    clients: Clients,
    check_every: float,
    call: Call,
    shown: str | None,
    holder: str | None,
    described: bool = True,
    *,
    check_queue: str | None = None,
    durations: Durations | None = None,
    waker: Waker | None = None,
) -> dict[str, Any]:
    """One run for `call`; `shown` is None for the first (the message `delay` sent), else the
    state the result shows; `holder` is the chain's token (`_chain`), None in the first message;
    `described` False when the chain's record could not be written yet (this run writes it);
    `check_queue` the queue of the checks (None: the one this run's message came from);
    `durations` the process's memory of how long the tool's tasks ran (`_durations`); `waker`
    the process's `Waker`, which follows a working task on a listening server (None: checks only).
    Returns the CallToolResult, raises `TaskError`, or `Ignore` after sending the next check (or
    when another chain of checks follows the call).
    """
    celery_id: str = task.request.id
    task_id: str | None = None
    chain: Chain | None = None
    try:
        client = clients.client(call.endpoint)
        store = clients.store()
        if holder is not None:
            chain = Chain(store, celery_id, holder, quiet_after(check_every))
            if not chain.begin():
                raise Ignore()
            if not chain.renewed and result_ready(task.backend, celery_id):  # a waker stored it
                chain.end()
                raise Ignore()
        called = _called(client, call, celery_id, first=chain is None)
        if isinstance(called, dict):
            _end(task, chain, None)
            return checked(called, call.raise_on_error, None, call.tool)
        task_id = called.task_id
        if chain is None or not described:  # the task's id is recorded: a sweeper may restart its chain
            described = _describe(task, call, task_id, check_queue)
        if chain is None:
            chain = Chain(store, celery_id, None, quiet_after(check_every))
            if not chain.begin():
                raise Ignore()
        status = called
        if (shown is not None and not status.terminal) or (status.terminal and not status.detailed):
            status = _checked(task, client, clients, store, status)
        began = _began(store, task_id)  # None: the timeout is checked (and the age counted) later
        deadline = began + call.timeout if call.timeout is not None and began is not None else None
        expected = durations.expected(call.endpoint, call.tool) if durations is not None else None
        step = decide(status, time.time(), deadline, check_every, began, expected)
        if isinstance(step, Finish):
            if durations is not None:
                durations.note(call.endpoint, call.tool, status)
            _end(task, chain, task_id)
            found = verdict(status, call.raise_on_error, call.tool)
            if isinstance(found, TaskError):
                raise found
            return found
        if isinstance(step, TimedOut):
            assert call.timeout is not None
            cancelled = call.cancel_on_timeout and _cancelled(client, task_id)
            raise TaskTimeout(task_id, call.timeout, status, cancelled=cancelled)
    except TaskError:
        raise
    except (McpError, StoreError, ValueError, TypeError) as exc:
        _end(task, chain, task_id)
        raise failure_of(exc, task_id) from None
    if isinstance(step, Revoked):
        _revoked(task, chain, task_id)
        step = Check(check_every, "STARTED")  # the backend did not take it: stored at the next check
    assert isinstance(step, Check)
    followed = waker is not None and status.status is TaskState.WORKING and waker.listens(client)
    if followed:  # one fallback check, due long after: the waker hears the end (see `_waker`)
        assert waker is not None
        due = waker.fallback if deadline is None else min(waker.fallback, max(MIN_CHECK, deadline - time.time()))
        step = Check(due, step.state)
    if not chain.keep(step.countdown, late_by(task.request.eta, time.time())):  # another chain took over
        raise Ignore()
    carried = _send_next(task, call, step, status, shown, chain.holder, described, check_queue)
    if followed:
        assert waker is not None and chain.holder is not None
        try:
            waker.follow(client, status, celery_id, chain.holder, call, carried, _queue(task, check_queue), described)
        except Exception as exc:  # anything: the fallback check follows the call as checks do
            log.warning("task %s: could not follow it on a stream (its check does): %s", short_id(task_id), exc)
    raise Ignore()


def _called(client: Client, call: Call, celery_id: str, *, first: bool) -> Status | dict[str, Any]:
    """Start the call (the first run), or find the task it started (a check: its key is
    recorded). A check that cannot reach the store or the server now ends without a trace: its
    chain's lease lapses and a sweeper checks again (an error here would end the call as a
    FAILURE while its task runs on).
    """
    try:
        key = call.key or celery_id
        # follow=False: the checks follow the task; a listen the worker's client kept open for it
        # would only cost a stream and a thread in every worker process.
        return call_tool(client, call.tool, call.arguments, key=key, timeout=START_TIMEOUT, follow=False)
    except (TransportError, StoreError) as exc:
        if first:
            raise
        log.warning("a Celery call: could not read its task now (a sweeper checks it again): %s", exc)
        raise Ignore() from None


def _began(store: TaskStore, task_id: str) -> float | None:
    """When the task was made (epoch), as the store keeps it; None when it cannot say now (the
    next check asks again).
    """
    try:
        kept = store.get(task_id)
    except StoreError as exc:
        log.warning("task %s: could not read when it began (asking again later): %s", short_id(task_id), exc)
        return None
    return kept.created_at if kept is not None else None


def _revoked(task: Task, chain: Chain | None, task_id: str) -> None:
    """The task was cancelled on the server: the result is REVOKED, then the chain is over
    (`Ignore`). A backend that cannot take that now returns: the chain goes on, and its next
    check stores the revoke (the store holds the task as ended, so no sweeper would look at it).
    """
    try:
        task.backend.mark_as_revoked(task.request.id, REVOKED_REASON, request=task.request)
    except Exception as exc:  # any backend's error (kombu's, redis', …): tried again at the next check
        log.warning("task %s: could not store its revoke (its next check stores it): %s", short_id(task_id), exc)
        return
    _end(task, chain, task_id)
    raise Ignore()


def _send_next(
    task: Task,
    call: Call,
    step: Check,
    status: Status,
    shown: str | None,
    holder: str | None,
    described: bool,
    check_queue: str | None,
) -> str:
    """Show the state when it changed, and send the next check (`send_check`); what the result
    shows, as the check carries it. A result backend that cannot show the state now leaves it to
    the next check (which tries again).
    """
    celery_id: str = task.request.id
    now_shown, carried = _show(step.state, status), shown or ""  # "": a check, nothing shown yet
    if now_shown != shown:
        meta = input_meta(celery_id, status) if step.state == "INPUT_REQUIRED" else {"task": short_id(status.task_id)}
        try:
            task.update_state(state=step.state, meta=meta)
            carried = now_shown
        except Exception as exc:  # any backend's error (kombu's, redis', …): shown at the next check
            log.warning("task %s: could not show its state (its next check does): %s", short_id(status.task_id), exc)
    send_check(task, celery_id, call, carried, holder, described, _queue(task, check_queue), step.countdown)
    return carried


def send_check(
    task: Task,
    celery_id: str,
    call: Call,
    shown: str,
    holder: str | None,
    described: bool,
    queue: str | None,
    countdown: float,
) -> None:
    """Send a check of `celery_id` carrying `holder`, due in `countdown` seconds. A broker that
    cannot take it sends nothing: its error would become the result (a FAILURE) and the real one
    never arrive; the chain's lease lapses instead, and a sweeper starts the chain again.
    """
    try:
        task.apply_async(
            args=(call.endpoint, call.tool, call.arguments),
            kwargs={**call.keywords(shown), "_holder": holder, **({} if described else {"_described": False})},
            task_id=celery_id,
            countdown=countdown,
            queue=queue,
        )
    except Exception as exc:  # any broker's error (kombu's, redis', amqp's)
        log.warning("a Celery call: could not send its next check (a sweeper starts its checks again): %s", exc)


def _queue(task: Task, check_queue: str | None) -> str | None:
    """Where the checks go: `check_queue`, or else the queue the run's message came from."""
    if check_queue is not None:
        return check_queue
    queue: str | None = (task.request.delivery_info or {}).get("routing_key")
    return queue


def _describe(task: Task, call: Call, task_id: str, check_queue: str | None) -> bool:
    """Write the chain's record, from which a sweeper sends a check when the chain goes quiet;
    False when the backend failed (the next check writes it).
    """
    message = {"args": [call.endpoint, call.tool, call.arguments], "kwargs": call.keywords("")}
    return write_record(task.backend, task_id, {"id": task.request.id, "queue": _queue(task, check_queue), **message})


def _end(task: Task, chain: Chain | None, task_id: str | None) -> None:
    """The call's outcome is decided: its chain is over (lease released, record dropped)."""
    if chain is not None:
        chain.end()
    if task_id is not None:
        forget_record(task.backend, task_id)


def _show(state: str, status: Status) -> str:
    """What the result shows, as carried to the next check (so that it is written once)."""
    if state != "INPUT_REQUIRED":
        return state
    return state + ":" + ",".join(sorted(status.input_requests))


def _checked(task: Task, client: Client, clients: Clients, store: TaskStore, kept: Status) -> Status:
    """`_check`, or the status kept when the server or the store does not answer now (the next
    check reads again: a link down for a moment ends no call).
    """
    try:
        return _check(task, client, clients, store, kept)
    except (TransportError, StoreError) as exc:
        log.warning("task %s: could not check it (checking again later): %s", short_id(kept.task_id), exc)
        return kept


def _check(task: Task, client: Client, clients: Clients, store: TaskStore, kept: Status) -> Status:
    """Read the task once; when it waits for input that this worker can send (its handlers', or
    answers left by `McpTasks.answer`), wait up to `ANSWER_HOLD` to send it, leased.
    """
    status = get_task(client, kept.task_id, timeout=START_TIMEOUT)
    if status.status is not TaskState.INPUT_REQUIRED:
        return status
    moved = move_answers(task, store, status)
    if not (clients.answers_input or moved or store.unacknowledged(status.task_id)):
        return status
    strategy: Literal["handlers", "return"] = "handlers" if clients.answers_input else "return"
    try:
        return wait_task(client, status, timeout=ANSWER_HOLD, input=strategy, poll_interval=0.05)
    except TaskTimeout as exc:
        return exc.status if exc.status is not None else status


def move_answers(task: Task, store: TaskStore, status: Status) -> bool:
    """Move the answers `McpTasks.answer` left in the result backend for the requests `status`
    asks into the store's ledger, then drop those keys (only those: an answer left meanwhile for
    another request waits for its turn). A backend that fails now moves nothing: the answers
    wait there for the next check.
    """
    backend = task.backend
    if not keeps_keys(backend):
        return False
    celery_id: str = task.request.id
    answers: dict[str, Any] = {}
    moved: list[str] = []
    try:
        for where, key in pending_answers(celery_id, status).items():
            raw = backend.get(where)
            if raw is None:
                continue
            moved.append(where)
            try:
                answers[key] = json.loads(raw)
            except ValueError:  # not one of ours: nothing to send for it
                continue
    except Exception as exc:  # any backend's error (kombu's, redis', …): the next check reads again
        log.warning(
            "task %s: could not read the answers left for it (reading again later): %s", short_id(status.task_id), exc
        )
        return False
    if answers:
        store.write_answers(status.task_id, answers)
    for where in moved:
        try:
            backend.delete(where)
        except Exception as exc:  # moved again later: an answer the server took is no longer asked
            log.warning("task %s: could not drop an answer it moved: %s", short_id(status.task_id), exc)
    return bool(answers)


def _cancelled(client: Client, task_id: str) -> bool:
    """Send ``tasks/cancel`` for a call whose ``timeout`` passed; whether the server took it."""
    try:
        cancel_task(client, task_id, timeout=CANCEL_TIMEOUT)
    except McpError as exc:
        log.warning("task %s: could not cancel it after its timeout: %s", short_id(task_id), exc)
        return False
    return True
