"""The tracing hook: what the channel and the task waits call, whether or not tracing is on.

Off (the default), the hook is `NO_TRACING`, whose methods do nothing but the work they wrap, and
OpenTelemetry is never imported. On (``trace=True`` or a ``tracer_provider``), `tracing_for` gives
the `mcp_tasks._tracing._otel` implementation, the one module that imports OpenTelemetry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks._tracing._base import NO_TASK_TRACE, NO_TRACING, Saved, Send, TaskTrace, Tracing

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = [
    "NO_TASK_TRACE",
    "NO_TRACING",
    "Saved",
    "Send",
    "TaskTrace",
    "Tracing",
    "require_tracing",
    "tracing_for",
]

OTEL_EXTRA = "mcp_tasks[otel]"


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
