"""`McpTasks`: MCP tool calls as Celery tasks. Its task (``mcp_tasks.call``) starts the call in a
worker and then follows the MCP task on the worker process's listen stream (`_waker`), or with
short checks of the same Celery id, each a message sent with a countdown (see `_run`): no
worker slot is held while the MCP task runs, a worker that dies loses nothing the broker does
not give back (every message is short, so a short visibility timeout is safe), and the call is
keyed in the task store by the Celery id, so a message delivered twice follows the task already
started. A revoke reaches the worker's main process, which discards the next check and sends
``tasks/cancel`` (`on_revoked`), and whose sweeper cancels a call heard on a stream at once. A
chain of checks the broker loses is started again by that sweeper, under the store's leases
(`_chain` has the rule).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from celery import Celery, Task, signals

from mcp_tasks._input import InputHandlers
from mcp_tasks.celery._chain import keeps_keys, quiet_after
from mcp_tasks.celery._clients import AuthOption, Clients, HeadersOption, StoreOption, per_endpoint
from mcp_tasks.celery._durations import Durations
from mcp_tasks.celery._error import TaskError
from mcp_tasks.celery._inputs import answers_key
from mcp_tasks.celery._revoke import cancel_call
from mcp_tasks.celery._run import Call, run
from mcp_tasks.celery._sweep import Sweeper
from mcp_tasks.celery._waker import FALLBACK, Waker

__all__ = ["CHECK_EVERY", "McpTasks"]

log = logging.getLogger("mcp_tasks")

CHECK_EVERY = 1.0
"""Seconds: the shortest pause between two checks of a running MCP task (also how soon a revoke
is acted on); the server's ``pollInterval`` and the task's age lengthen it (`_step.pause`)."""
TASK_NAME = "mcp_tasks.call"


class McpTasks:
    """MCP tool calls run as tasks of the Celery `app`:
    ``mcp.call.delay(endpoint, tool, arguments, timeout=…, cancel_on_timeout=…,
    raise_on_error=…, key=…)`` returns an `AsyncResult` whose ``get()`` is the CallToolResult or
    raises `TaskError`; ``revoke()`` cancels the MCP task.

    `store`: the task store the calls are recorded in (a location such as ``$MCP_TASKS_STORE``,
    opened in each worker process; or a `TaskStore`), shared by every worker.
    `input_handlers` answer input in the workers; without them the result shows
    ``INPUT_REQUIRED`` and `answer` answers. `auth` and `headers`: a mapping from endpoint to
    value, or a function of the endpoint. `check_every`: the shortest pause between two checks
    (longer when the server asks for it, and as the task grows old, up to twice this).
    `check_queue`: the queue the checks are sent to (None: the queue the call came from). A
    queue of their own, which every worker also consumes (``-Q celery,<check_queue>``), lets a
    worker fetch each check at once and hold it until due, instead of finding it behind every
    start still waiting in the call's queue. `fallback`: the seconds before the one check of a
    call whose server tells its end on a listen stream, heard by the worker process (`_waker`);
    None follows every call with checks.
    """

    def __init__(
        self,
        app: Celery,
        *,
        store: StoreOption,
        input_handlers: InputHandlers | None = None,
        auth: AuthOption = None,
        headers: HeadersOption = None,
        check_every: float = CHECK_EVERY,
        check_queue: str | None = None,
        fallback: float | None = FALLBACK,
    ) -> None:
        if input_handlers is not None and not isinstance(input_handlers, InputHandlers):
            raise TypeError(f"input_handlers must be an InputHandlers or None, got {type(input_handlers).__name__}")
        if isinstance(check_every, bool) or not isinstance(check_every, (int, float)) or not 0 < check_every < 3600:
            raise ValueError(f"check_every must be a number of seconds between 0 and 3600, got {check_every!r}")
        if check_queue is not None and (not isinstance(check_queue, str) or not check_queue.strip()):
            raise ValueError(f"check_queue must be a queue's name or None, got {check_queue!r}")
        if fallback is not None and (
            isinstance(fallback, bool) or not isinstance(fallback, (int, float)) or not 0 < fallback < 86400
        ):
            raise ValueError(f"fallback must be a number of seconds between 0 and 86400 or None, got {fallback!r}")
        self.app = app
        self._clients = Clients(store, input_handlers, per_endpoint("auth", auth), per_endpoint("headers", headers))
        self._check_every = float(check_every)
        self.check_queue = check_queue
        self._durations = Durations()
        quiet = quiet_after(self._check_every)
        self._waker = Waker(self._clients, quiet, float(fallback), self._durations) if fallback is not None else None
        self.call: Task = self._register(app)
        if self._waker is not None:
            self._waker.task = self.call
        self._sweeper = Sweeper(app, self.call, self._clients, quiet)
        signals.task_revoked.connect(self.on_revoked, weak=False)
        signals.worker_ready.connect(self._sweeper.start, weak=False)
        signals.worker_process_shutdown.connect(self._close, weak=False)
        signals.worker_shutdown.connect(self._stop, weak=False)

    def _register(self, app: Celery) -> Task:
        clients, every, checks, durations, waker = (
            self._clients,
            self._check_every,
            self.check_queue,
            self._durations,
            self._waker,
        )

        def call(
            task: Task,
            endpoint: str,
            tool: str,
            arguments: dict[str, Any] | None = None,
            timeout: float | None = None,
            cancel_on_timeout: bool = False,
            raise_on_error: bool = False,
            key: str | None = None,
            _shown: str | None = None,
            _holder: str | None = None,
            _described: bool = True,
        ) -> dict[str, Any]:
            """Call `tool` on `endpoint` and follow its MCP task (see `McpTasks`)."""
            try:
                given = Call(endpoint, tool, arguments, timeout, cancel_on_timeout, raise_on_error, key)
            except (TypeError, ValueError) as exc:
                raise TaskError(-32602, str(exc)) from None
            return run(
                task,
                clients,
                every,
                given,
                _shown,
                _holder,
                _described,
                check_queue=checks,
                durations=durations,
                waker=waker,
            )

        registered: Task = app.task(
            call,
            bind=True,
            name=TASK_NAME,
            acks_late=True,
            reject_on_worker_lost=True,
            throws=(TaskError,),
            shared=False,
        )
        return registered

    def answer(self, result_id: str, responses: Mapping[str, Any]) -> None:
        """Answer the input an ``INPUT_REQUIRED`` result shows, by its keys there, from any process
        (several may answer one result's requests at once): the answers wait in the result
        backend for the worker that checks the task next, which writes them to the store and
        sends them once. ValueError for a key the result does not show.
        """
        if not isinstance(responses, Mapping):
            raise TypeError(f"responses must be a dict, got {type(responses).__name__}")
        backend = self.app.backend
        if not keeps_keys(backend):
            raise TypeError(
                f"answer() needs a key-value result backend (Redis, Memcached…), not {type(backend).__name__}"
            )
        # The state and the requests it shows, of one read: a check may move the state on
        # between two reads, and the second would show no requests.
        meta = backend.get_task_meta(result_id, cache=False)
        info = meta.get("result") if meta.get("status") == "INPUT_REQUIRED" else None
        shown = info.get("inputRequests", {}) if isinstance(info, dict) else {}
        unknown = sorted(set(responses) - set(shown))
        if unknown:
            raise ValueError(f"the result does not show input under {', '.join(map(repr, unknown))}")
        for key, response in responses.items():  # each under a key of its own (see _inputs)
            backend.set(answers_key(result_id, key), json.dumps(response))

    def on_revoked(self, sender: Any = None, request: Any = None, **_: Any) -> None:
        """A worker discarded a revoked message of the call task (its main process): send
        ``tasks/cancel`` for the MCP task the call started, if it started one.
        """
        if getattr(sender, "name", None) != TASK_NAME or request is None:
            return
        args, kwargs = list(request.args or ()), dict(request.kwargs or {})
        cancel_call(self._clients, args[0] if args else kwargs.get("endpoint"), kwargs.get("key") or request.id)

    def _stop(self, **_: Any) -> None:
        self._sweeper.stop()
        self._close()

    def _close(self, **_: Any) -> None:
        if self._waker is not None:
            self._waker.stop()  # first: the clients' close would fail the futures it follows
        self._clients.close()
