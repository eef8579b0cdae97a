"""`Sweeper`: the thread of a worker's main process that starts again a chain of checks the
broker lost (the rule is in `_chain`). Started when the worker is ready, stopped and joined when
it shuts down.

A chain whose queue holds messages no worker has taken yet is not started again: in a busy
fleet (1,000 calls sent at once to 4 slots) its check is most likely behind them, late, not
lost, and a copy of each would only lengthen the queue (bench/celery_fleet.py saw 1.7 copies a
call, its results 30 s late). A chain really lost is started again once its queue is drained.

A revoke reaches the main process at once, but it acts on a message only when that message comes
due, and a call its worker process follows on a listen stream has one message, due long after
(`_waker`). So the sweep also cancels the MCP task of each call whose Celery id this worker holds
as revoked (once per process); the follower hears it cancelled and stores REVOKED.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import Celery, Task
from celery.result import AsyncResult
from celery.worker import state as worker_state

from mcp_tasks._redact import short_id
from mcp_tasks._store import StoreError
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks.celery._chain import forget_record, lease_key, new_token, read_record
from mcp_tasks.celery._clients import Clients
from mcp_tasks.celery._revoke import cancel_call

__all__ = ["Sweeper"]

log = logging.getLogger("mcp_tasks")


class Sweeper:
    """Every ``quiet / 2`` seconds, `sweep` the store's unfinished tasks for chains gone quiet."""

    def __init__(self, app: Celery, task: Task, clients: Clients, quiet: float) -> None:
        self._app, self._task, self._clients, self.quiet = app, task, clients, quiet
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cancelled: set[str] = set()  # the revoked calls this process cancelled

    def start(self, **_: Any) -> None:
        """Start the sweeping thread (a worker's main process is ready)."""
        with self._lock:
            if self._thread is None:
                self._stop.clear()
                self._thread = start_thread("celery-sweep", self._loop)

    def stop(self, **_: Any) -> None:
        """Stop the thread and join it (the worker shuts down)."""
        with self._lock:
            thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            join_all([thread], 10.0)

    def _loop(self) -> None:
        failing = False  # said once per outage, not at every sweep
        while not self._stop.wait(self.quiet / 2):
            try:
                self.sweep()
            except Exception as exc:  # the store or the broker down for a moment: sweep again later
                if not failing:
                    log.warning("the Celery calls' sweep failed (sweeping again until it works): %s", exc)
                failing = True
            else:
                if failing:
                    log.info("the Celery calls' sweep works again")
                failing = False

    def sweep(self) -> int:
        """Send a check for each chain that went quiet (its lease free); how many were sent. A
        chain whose result is already ready ends here instead.
        """
        store, backend, sent = self._clients.store(), self._app.backend, 0
        waiting: dict[str | None, int] = {}  # messages in each queue that no worker took yet
        for ref in store.unfinished():
            if self._stop.is_set():
                break
            record = read_record(backend, ref.task_id)
            if record is None:
                continue
            if self._revoked(record):
                continue
            queue = record.get("queue")
            if queue not in waiting:
                waiting[queue] = self._waiting(queue)
            if waiting[queue]:
                continue  # its check is likely in there, late: see the module's docstring
            celery_id, token = record["id"], new_token()
            if not store.acquire(lease_key(celery_id), token, self.quiet):
                continue  # its chain renews its lease: alive
            if AsyncResult(celery_id, app=self._app).ready():
                forget_record(backend, ref.task_id)
                try:
                    store.release(lease_key(celery_id), token)
                except StoreError:
                    pass
                continue
            self._task.apply_async(
                args=tuple(record.get("args") or ()),
                kwargs={**(record.get("kwargs") or {}), "_holder": token},
                task_id=celery_id,
                queue=queue,
            )
            log.info("task %s: its checks went quiet; checking it again", short_id(ref.task_id))
            sent += 1
        return sent

    def _revoked(self, record: dict[str, Any]) -> bool:
        """Cancel the MCP task of a call this worker holds as revoked, the first time it is seen
        (whether it was: later sweeps treat it as any other chain, and end it once REVOKED).
        """
        celery_id: str = record["id"]
        if celery_id not in worker_state.revoked or celery_id in self._cancelled:
            return False
        self._cancelled.add(celery_id)
        args, kwargs = list(record.get("args") or ()), dict(record.get("kwargs") or {})
        cancel_call(self._clients, args[0] if args else None, kwargs.get("key") or celery_id)
        return True

    def _waiting(self, queue: str | None) -> int:
        """How many messages wait in `queue` (None: the app's default) for a worker; 0 when the
        broker does not say (Redis keeps no empty queue: a passive declare says it is not there).
        """
        name = queue or self._app.conf.task_default_queue
        try:
            with self._app.connection_for_read() as connection:
                declared = connection.default_channel.queue_declare(queue=name, passive=True)
        except Exception:  # any broker's "no such queue" (kombu's, amqp's): none waits there
            return 0
        return int(declared.message_count)
