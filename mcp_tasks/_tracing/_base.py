"""What tracing is, and tracing off: `Tracing` and `TaskTrace`, whose methods do nothing but the
work they wrap. The hook (`mcp_tasks._tracing`) hands these out untraced; the OpenTelemetry
implementation (`mcp_tasks._tracing._otel`) subclasses them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_tasks._status import Status
    from mcp_tasks._store import TaskRef

__all__ = ["NO_TASK_TRACE", "NO_TRACING", "Saved", "Send", "TaskTrace", "Tracing"]

Send = Callable[[dict[str, Any]], dict[str, Any]]
Saved = Callable[[], "TaskRef | None"]
"""How a wait finds what a store kept of its task (its creator's trace context): asked only when traced."""


class TaskTrace:
    """One task's wait as the tracer sees it; this base records nothing.

    A wait in a thread of its own uses it as a context manager (`start`, current for the whole
    block, `end` with the exception that left it). A loop that waits for several tasks at once
    calls `start`, wraps each step for a task in `within` (its requests become that task's), and
    calls `end` when that task's wait is over.
    """

    def __enter__(self) -> TaskTrace:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end(exc)

    def start(self) -> None:
        """The wait begins."""

    def within(self) -> AbstractContextManager[None]:
        """A block during which the requests sent are this wait's."""
        return nullcontext()

    def end(self, exc: BaseException | None = None) -> None:
        """The wait is over (`exc`: the exception that ended it)."""

    def status(self, status: Status) -> None:
        """The wait saw the task change (called once per change)."""

    def input_round(self, answered: int) -> None:
        """The wait answered `answered` of the task's input requests."""

    def finish(self, status: Status) -> None:
        """The wait ends with `status` (terminal, or input it leaves to the caller)."""


NO_TASK_TRACE = TaskTrace()


class Tracing:
    """A channel's tracer; this base traces nothing (each method only does the work it wraps)."""

    def round_trip(self, method: str, request_id: int, params: dict[str, Any], send: Send) -> dict[str, Any]:
        """Send one request (`send(params)`): traced, a span around it and trace context in
        ``params._meta``.
        """
        return send(params)

    def inject(self, params: dict[str, Any]) -> dict[str, Any]:
        """`params` with the current trace context in ``_meta`` (traced), or as they are."""
        return params

    def task(self, task_id: str, saved: Saved | None = None) -> TaskTrace:
        """The trace of one wait for `task_id` (a span for the task's life, when traced). When
        this channel did not create the task, `saved()` may give the ref a store kept of it, whose
        trace context the span links to (a resume); untraced, `saved` is never called.
        """
        return NO_TASK_TRACE

    def creation_context(self, task_id: str) -> dict[str, str] | None:
        """The W3C ``traceparent``/``tracestate`` of the ``tools/call`` on this channel that
        created `task_id`, for a store to keep (None untraced, or for a task made elsewhere).
        """
        return None


NO_TRACING = Tracing()
