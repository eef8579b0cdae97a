"""A 2025-era wait's input: the server asks with requests of its own, which arrive on the
session's delivery thread and are answered there with the wait's input strategy. That thread
writes nothing of the wait's: what the wait must learn (a request answered, or one it could not
answer) goes on a queue that the wait's own thread drains into its `WaitCore` before each
decision. A queue rather than a lock around the core: the delivery thread carries every response
of the session and must never wait for a wait.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import attrs

from mcp_tasks._errors import INTERNAL_ERROR, McpError
from mcp_tasks._input import input_failure
from mcp_tasks._session._dispatch import error_response
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._strategies import InputStrategy
from mcp_tasks._tasks._wait_core import WaitCore
from mcp_tasks._tracing import TaskTrace

if TYPE_CHECKING:
    from mcp_tasks._client import Client

__all__ = ["DeliveredInput"]

_ANSWERED = None  # on the queue: a request was answered (read again soon)


class DeliveredInput:
    """The delivery thread's side of one 2025-era wait (see the module). `asking()`: the block a
    question waits its turn in (the wait's deadline, its close); `last()`: the status the wait
    last took in (a read of another thread's value, never a write).
    """

    def __init__(
        self,
        client: Client,
        task_id: str,
        strategy: InputStrategy,
        trace: TaskTrace,
        asking: Callable[[], AbstractContextManager[None]],
        last: Callable[[], Status | None],
    ) -> None:
        self.client, self.task_id, self.strategy, self.trace = client, task_id, strategy, trace
        self._asking, self._last = asking, last
        self._news: queue.SimpleQueue[Status | Exception | None] = queue.SimpleQueue()

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a server's input request about the task with the strategy, as a pending request
        of the input_required status (keyed by the request's id). When the strategy does not
        answer it, or fails, the server gets an error back and the wait stops with that status
        (or raises that failure).
        """
        key = str(message.get("id"))
        request = {"method": message.get("method"), "params": message.get("params", {})}
        base = self._last() or Status(task_id=self.task_id, status=TaskState.WORKING, era="legacy")
        status = attrs.evolve(
            base,
            status=TaskState.INPUT_REQUIRED,
            raw={**base.raw, "taskId": self.task_id, "status": TaskState.INPUT_REQUIRED.value},
            input_requests={key: request},
        )
        try:
            with self._asking():
                responses = self.strategy.answer(self.client, status, {key: request})
            response = responses.get(key) if isinstance(responses, Mapping) else None
            if responses is not None and not isinstance(response, dict):
                returned = response if isinstance(responses, Mapping) else responses
                raise input_failure(key, ("invalid_return", returned), status)
        except Exception as exc:  # reaches the caller from the wait's own thread
            return self._stop(exc, message, "The client could not answer this request")
        if response is None:
            return self._stop(status, message, "The client's wait returned without answering")
        self._news.put(_ANSWERED)
        self.trace.input_round(1)
        return {"jsonrpc": "2.0", "id": message.get("id"), "result": response}

    def _stop(self, why: Status | Exception, message: dict[str, Any], text: str) -> dict[str, Any]:
        self._news.put(why)
        side_of(self.client.channel).board.publish(self.task_id)  # a legacy listen wakes at once
        return error_response(message, McpError(INTERNAL_ERROR, text))

    def drain(self, core: WaitCore) -> None:
        """Hand what the delivery thread learnt to `core` (in the wait's own thread)."""
        while True:
            try:
                news = self._news.get_nowait()
            except queue.Empty:
                return
            if news is _ANSWERED:
                core.answered_in_place()
            else:
                core.stopped(news)
