"""`Waker`: a worker process's thread (``mcp_tasks-celery-wake``) that hears the calls it follows
end on the client's shared listen stream and stores their results itself. A check costs a
message and a ``tasks/get`` each time it finds the task still working, and a call started
before any task of its tool ended is read at least twice; a call followed here costs its start,
one fallback check, and the stream's one catch-up read.

The rule. A run that finds its task working on a server whose client listens (2026-07-28, and
the task not left to polling) sends one fallback check due in `fallback` seconds (at most the
call's deadline) under the chain's token T (`_chain`), and hands the call here. A future bound
to the task (listening; no store, so it takes no task lease; polling, if it must, as rarely as
the fallback) is done when the stream tells of an end or of input. Then, in this thread, the
chain's lease passes from T to a new token, as a check's does (when another holds it, nothing
is done: a check took the chain on). A completed or failed task's result is stored as a check
would store it (`_outcome`) and the chain ends. Input, or anything else, gets a check now with
the new token, and the chain goes on as checks; so does a task heard cancelled: a server may
cancel a task as it expires and forgets it (the reference server does), and the check's one
read tells a revoke (REVOKED) from an expiry (a FAILURE that says so). The fallback check that
finds T gone and the result stored ends there; one that finds T still held (this process died,
or the task runs on) checks as usual, and hands the call to its own process's waker again. A
task the stream leaves to polling gets its check now too (`WAKE_EVERY`).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading

import attrs
from celery import Task

from mcp_tasks._client import Client
from mcp_tasks._errors import McpError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status, TaskState
from mcp_tasks._store import StoreError
from mcp_tasks._tasks import TaskFuture, bind_future
from mcp_tasks._tasks._driver import futures_of
from mcp_tasks._tasks._watch import watch_of
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks.celery._chain import Chain, forget_record
from mcp_tasks.celery._clients import Clients
from mcp_tasks.celery._durations import Durations
from mcp_tasks.celery._outcome import result_ready, store_ended
from mcp_tasks.celery._run import Call, send_check

__all__ = ["FALLBACK", "WAKE_EVERY", "Waker"]

log = logging.getLogger("mcp_tasks")

FALLBACK = 30.0
"""Seconds before the one check of a call the waker follows (it ends the call on its timeout,
and takes the call on when the waker's process died)."""
WAKE_EVERY = 1.0
"""Seconds between two looks for followed tasks the stream left to polling (they get checks)."""


@attrs.frozen
class _Followed:
    """A call the waker follows: what its next check carries."""

    client: Client
    celery_id: str
    token: str
    call: Call
    shown: str
    queue: str | None
    described: bool


class Waker:
    """The calls one worker process follows on listen streams (its thread made on first use,
    stopped and joined at the process's shutdown). `task` is the registered call task (set once
    registered); `quiet` the chains' bound (`_chain.quiet_after`); `fallback` the seconds before
    each followed call's fallback check.
    """

    def __init__(self, clients: Clients, quiet: float, fallback: float, durations: Durations) -> None:
        self.task: Task | None = None
        self.fallback = fallback
        self._clients, self._quiet, self._durations = clients, quiet, durations
        self._lock = threading.Lock()
        self._pid = -1
        self._thread: threading.Thread | None = None
        self._heard: queue.SimpleQueue[TaskFuture | None] = queue.SimpleQueue()
        self._followed: dict[TaskFuture, _Followed] = {}
        self._stop = threading.Event()

    def listens(self, client: Client) -> bool:
        """Whether `client`'s server may tell its tasks' ends on a listen stream (2026-07-28)."""
        try:
            return client.era == "modern"
        except McpError:
            return False

    def follow(
        self,
        client: Client,
        status: Status,
        celery_id: str,
        token: str,
        call: Call,
        shown: str,
        check_queue: str | None,
        described: bool,
    ) -> None:
        """Follow the working task `status` of the call `celery_id`, whose chain's lease `token`
        holds (its fallback check is sent): see the module's docstring.
        """
        with self._lock:
            if self._pid != os.getpid():  # a forked child: its own thread and its own calls
                self._pid, self._thread, self._followed = os.getpid(), None, {}
                self._heard, self._stop = queue.SimpleQueue(), threading.Event()
            if self._thread is None:
                self._thread = start_thread("celery-wake", self._loop)
            heard = self._heard
        future = bind_future(
            client,
            status,
            listen=True,
            input="return",
            store=None,
            poll_interval=self.fallback,
            min_poll_interval=self.fallback,  # polled only until a stream takes it, and rarely
        )
        with self._lock:
            self._followed[future] = _Followed(client, celery_id, token, call, shown, check_queue, described)
        future.add_done_callback(lambda _: heard.put(future))

    def stop(self) -> None:
        """Stop and join this process's thread (its process shuts down): the calls it followed
        are left to their fallback checks.
        """
        with self._lock:
            if self._pid != os.getpid():
                return
            thread, self._thread, followed = self._thread, None, list(self._followed)
            self._followed = {}
            self._stop.set()
            self._heard.put(None)
        for future in followed:
            _drop(future)
        if thread is not None:
            join_all([thread], 10.0)

    def _loop(self) -> None:
        stop, heard = self._stop, self._heard
        while not stop.is_set():
            try:
                future = heard.get(timeout=WAKE_EVERY)
            except queue.Empty:
                self._left_to_polling()
                continue
            if future is None or stop.is_set():
                return
            with self._lock:
                followed = self._followed.pop(future, None)
            if followed is None:
                continue
            try:
                self._ended(future, followed)
            except Exception as exc:  # the store or the backend down: the fallback check takes it on
                log.warning("a Celery call: could not act on what its stream said (its check does): %s", exc)

    def _left_to_polling(self) -> None:
        """Followed tasks no stream carries (the server has no listen, or refused them): dropped
        from the driver, and each given a check now.
        """
        with self._lock:
            items = list(self._followed.items())
        for future, followed in items:
            if future.task_id is None or not watch_of(followed.client.channel).polled(future.task_id):
                continue
            with self._lock:
                if self._followed.pop(future, None) is None:
                    continue
            _drop(future)
            chain = self._passed(followed)
            if chain is not None:
                self._check_now(followed, chain)

    def _ended(self, future: TaskFuture, followed: _Followed) -> None:
        """The future is done: store the ended task's result, or send a check now."""
        status = future.status
        chain = self._passed(followed)
        if chain is None:
            return
        if status is None or status.status not in (TaskState.COMPLETED, TaskState.FAILED) or not status.detailed:
            self._check_now(followed, chain)  # cancelled too: read once, as the module says
            return
        assert self.task is not None
        call, backend = followed.call, self.task.backend
        if not store_ended(backend, followed.celery_id, status, call.raise_on_error, call.tool):
            self._check_now(followed, chain)
            return
        self._durations.note(call.endpoint, call.tool, status)
        chain.end()
        forget_record(backend, status.task_id)
        try:
            self._clients.store().update(status.task_id, status)
        except StoreError as exc:  # the store learns of the end at a sweep's read instead
            log.warning("task %s: could not record its end in the store: %s", short_id(status.task_id), exc)

    def _passed(self, followed: _Followed) -> Chain | None:
        """The chain's lease passed from the followed token to a new one; None when another run
        holds it (a check took the chain on), or when the result is stored already.
        """
        assert self.task is not None
        chain = Chain(self._clients.store(), followed.celery_id, followed.token, self._quiet)
        if not chain.begin():
            return None
        if not chain.keep(0.0):
            return None
        if not chain.renewed and result_ready(self.task.backend, followed.celery_id):
            chain.end()
            return None
        return chain

    def _check_now(self, followed: _Followed, chain: Chain) -> None:
        assert self.task is not None
        call = followed.call
        send_check(
            self.task, followed.celery_id, call, followed.shown, chain.holder, followed.described, followed.queue, 0.0
        )


def _drop(future: TaskFuture) -> None:
    """Stop following `future` in its client's driver, leaving its task running on the server."""
    if future.done():
        return
    if concurrent.futures.Future.cancel(future):  # the plain Future's: no tasks/cancel sent
        futures_of(future.client.channel).drop(future)
