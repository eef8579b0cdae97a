"""The tracing hook: what the channel and the task waits call, whether or not tracing is on.

Off (the default), the hook is `NO_TRACING`, whose methods do nothing but the work they wrap, and
OpenTelemetry is never imported. On (``trace=True`` or a ``tracer_provider``), `tracing_for` gives
the `mcp_tasks._tracing._otel` implementation, the one module that imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel
    from mcp_tasks._status import Status
    from mcp_tasks._store import TaskRef

__all__ = ["NO_TRACING", "TaskTrace", "Tracing", "require_tracing", "tracing_for"]

OTEL_EXTRA = "mcp_tasks[otel]"

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


def require_tracing() -> None:
    """Import the tracing module now; without OpenTelemetry, an ImportError naming the extra."""
    try:
        import mcp_tasks._tracing._otel  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"trace=True needs OpenTelemetry: pip install '{OTEL_EXTRA}' (opentelemetry-api), "
            f"plus an SDK to export spans ({exc})"
        ) from exc


def tracing_for(channel: Channel) -> Tracing:
    """The hook `channel` calls: `NO_TRACING` unless its settings ask for tracing."""
    if not channel.settings.tracing:
        return NO_TRACING
    require_tracing()
    from mcp_tasks._tracing._otel import ChannelTracing

    return ChannelTracing(channel)
