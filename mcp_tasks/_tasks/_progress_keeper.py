"""Progress a server reports (``notifications/progress``), routed by the ``progressToken`` the
call carried, and each task's latest progress kept with the client.

A 2025-11-25 server may report progress for a task's whole life with the token of the
``tools/call`` that created it; any server may on that call's stream before it answers with a
task (the 2026-07-28 extension reports progress in ``statusMessage`` only, but a notification
that names one of our tokens is taken whatever the era). The keeper owns the notification
method on the client's dispatcher; the calls mint a token (`follow`), the waits follow a task by
its id (`follow` with ``task_id``). A task resumed from elsewhere has no token here: its waits
hear no progress.

Callbacks run on the keeper's own thread (``mcp_tasks-progress``, started when there is something
to deliver and gone when there is not), one call at a time, in the order the progress came:
never on the thread that reads the server's messages, so a callback that blocks or asks the
server something cannot stall the wait it belongs to. Closing a `Follow` (a wait ending) waits
for the calls of what came before it.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

import attrs

from mcp_tasks._printable import printable
from mcp_tasks._redact import short_id
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from types import TracebackType

    from mcp_tasks._session._channel import Channel

__all__ = [
    "PROGRESS_NOTIFICATION",
    "PROGRESS_TOKEN",
    "Follow",
    "OnProgress",
    "Progress",
    "ProgressKeeper",
    "check_on_progress",
    "keeper_of",
]

log = logging.getLogger("mcp_tasks")

PROGRESS_NOTIFICATION = "notifications/progress"
PROGRESS_TOKEN = "progressToken"
MAX_KEPT = 10_000
"""Tasks whose latest progress is kept; the oldest that nobody follows are forgotten first."""

OnProgress = Callable[[float, Union[float, None], Union[str, None]], object]
"""Called with ``(progress, total, message)``: `total` and `message` None when the server gave none."""
Token = Union[str, int]


@attrs.frozen
class Progress:
    """One progress report: `total` None when unknown, `message` None when the server sent none."""

    progress: float
    total: float | None = None
    message: str | None = None


def check_on_progress(value: object) -> OnProgress | None:
    """`value` when it is callable or None (``on_progress=``), else a TypeError naming it."""
    if value is not None and not callable(value):
        raise TypeError(f"on_progress must be callable or None, got {value!r}")
    return value


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _token(value: object) -> Token | None:
    """A usable progress token (a string or an integer), or None."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _shown(value: object) -> str:
    return printable(repr(value))[:40]


class _Sub:
    """One callback following a token or a task; `pending` counts its calls still to make."""

    def __init__(self, callback: OnProgress) -> None:
        self.callback = callback
        self.pending = 0


class Follow:
    """A callback following one call's token (then its task) or one task: close it (or leave the
    ``with`` block) when the call or wait is over; closing waits for the calls of what came before.
    """

    def __init__(self, keeper: ProgressKeeper, token: Token | None, task_id: str | None, sub: _Sub | None) -> None:
        self._keeper = keeper
        self.token = token
        self.task_id = task_id
        self.sub = sub
        self._closed = False

    def bind(self, task_id: str) -> None:
        """The call made task `task_id`: its progress is kept, and later waits of it see it."""
        self.task_id = task_id
        if self.token is not None:
            self._keeper.bind(self.token, task_id)

    def close(self, *, flush: bool = True) -> None:
        """Stop following, after the calls of the progress already received (`flush` False: the
        calls already queued are made later, without waiting for them here). Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        self._keeper.unfollow(self, flush=flush)

    def __enter__(self) -> Follow:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ProgressKeeper:
    """Per channel: the tokens this client sent, the task each became, the latest progress of
    each, the callbacks following them, and the thread that calls them. Thread-safe.
    """

    def __init__(self, channel: Channel) -> None:
        self._lock = threading.Condition()
        self._tasks: dict[Token, str | None] = {}  # token -> the task it became (None: not yet)
        self._latest: dict[str, Progress] = {}  # by task id (or "token:" + token before a task)
        self._subs: dict[str, list[_Sub]] = {}  # by the same keys
        self._queue: deque[tuple[_Sub, Progress]] = deque()
        self._thread: threading.Thread | None = None
        self._warned = False
        channel.dispatcher.own_notifications(PROGRESS_NOTIFICATION, self.receive)

    # -- what the calls and waits do ----------------------------------------------------------

    def follow(self, callback: OnProgress | None, *, token: Token | None = None, task_id: str | None = None) -> Follow:
        """Follow a call (a new token, or the caller's own `token`) or, with `task_id`, a task;
        `callback` (if any) hears its progress, first its latest when one is kept.
        """
        if task_id is None and token is None:
            token = uuid.uuid4().hex
        sub = _Sub(callback) if callback is not None else None
        with self._lock:
            if task_id is None:
                assert token is not None
                self._tasks[token] = None
                self._trim()
                key = _token_key(token)
            else:
                key = task_id
            if sub is not None:
                self._subs.setdefault(key, []).append(sub)
                latest = self._latest.get(key)
                if latest is not None:
                    self._deliver(sub, latest)
        return Follow(self, token, task_id, sub)

    def bind(self, token: Token, task_id: str) -> None:
        """Token `token` became task `task_id` (what came before carries over)."""
        with self._lock:
            if token not in self._tasks:
                return
            self._tasks[token] = task_id
            before = self._latest.pop(_token_key(token), None)
            if before is not None and task_id not in self._latest:
                self._latest[task_id] = before

    def latest(self, task_id: str) -> Progress | None:
        """The task's latest progress this client heard, or None."""
        with self._lock:
            return self._latest.get(task_id)

    def unfollow(self, follow: Follow, *, flush: bool = True) -> None:
        """`Follow.close`: its callback stops, once its calls are made; a call that made no task forgets its token."""
        token, sub = follow.token, follow.sub
        with self._lock:
            if follow.task_id is None and token is not None:
                self._tasks.pop(token, None)
                self._latest.pop(_token_key(token), None)
            if sub is None:
                return
            for key in (_token_key(token) if token is not None else None, follow.task_id):
                subs = self._subs.get(key) if key is not None else None
                if subs is not None and sub in subs:
                    subs.remove(sub)
                    if not subs:
                        del self._subs[key]  # type: ignore[arg-type]
            if flush and self._thread is not threading.current_thread():
                self._lock.wait_for(lambda: sub.pending == 0)

    # -- the server's notifications -----------------------------------------------------------

    def receive(self, method: str, params: Mapping[str, Any]) -> None:
        """A ``notifications/progress`` (the dispatcher's owner): kept and passed on, or ignored
        with a log line when it names no token of ours or its values are not numbers.
        """
        token = _token(params.get(PROGRESS_TOKEN))
        if token is None:
            log.debug("a progress notification without a usable progressToken; ignoring it")
            return
        progress, total, message = params.get("progress"), params.get("total"), params.get("message")
        if not _number(progress) or (total is not None and not _number(total)):
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            log.log(
                level,
                "the server sent a progress notification whose progress (%s) or total (%s) is not a "
                "number; ignoring it",
                _shown(progress),
                _shown(total),
            )
            return
        if message is not None and not isinstance(message, str):
            log.debug("a progress notification's message is not a string (%s); leaving it out", _shown(message))
            message = None
        report = Progress(float(progress), None if total is None else float(total), message)  # type: ignore[arg-type]
        with self._lock:
            if token not in self._tasks:
                log.debug("progress for a token this client did not send (%s); ignoring it", short_id(str(token)))
                return
            task_id = self._tasks[token]
            keys = [_token_key(token)] if task_id is None else [_token_key(token), task_id]
            self._latest[keys[-1]] = report
            for key in keys:
                for sub in self._subs.get(key, ()):
                    self._deliver(sub, report)

    # -- the thread that calls the callbacks --------------------------------------------------

    def _deliver(self, sub: _Sub, report: Progress) -> None:
        """Queue a call (the lock held); start the thread when none runs."""
        sub.pending += 1
        self._queue.append((sub, report))
        if self._thread is None:
            self._thread = start_thread("progress", self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    self._lock.notify_all()
                    return
                sub, report = self._queue.popleft()
            try:
                sub.callback(report.progress, report.total, report.message)
            except Exception:
                log.exception("an on_progress callback failed")
            finally:
                with self._lock:
                    sub.pending -= 1
                    self._lock.notify_all()

    def _trim(self) -> None:
        """Forget the oldest tokens (and their tasks' progress) nobody follows, beyond `MAX_KEPT`."""
        if len(self._tasks) <= MAX_KEPT:
            return
        for token in list(self._tasks)[: len(self._tasks) - MAX_KEPT]:
            task_id = self._tasks[token]
            if _token_key(token) in self._subs or (task_id is not None and task_id in self._subs):
                continue
            del self._tasks[token]
            self._latest.pop(_token_key(token), None)
            if task_id is not None:
                self._latest.pop(task_id, None)

    def join(self) -> None:
        """The channel closed: let the thread finish what it was given (bounded)."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            join_all([thread], 5.0)


def _token_key(token: Token) -> str:
    return f"token:{type(token).__name__}:{token}"


def keeper_of(channel: Channel) -> ProgressKeeper:
    """The channel's `ProgressKeeper` (made, and its owner registered, on first use)."""
    return channel.attachment(ProgressKeeper, ProgressKeeper)
