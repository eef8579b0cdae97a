"""``--trace``: the command's requests and waits as OpenTelemetry spans (the client's own tracing,
given a tracer provider made here), exported over OTLP when ``opentelemetry-exporter-otlp`` is
installed, else written to stderr as one JSON line per span; ``$OTEL_TRACES_EXPORTER``
(``console`` or ``otlp``) chooses. The provider is also made the global one, so that an
in-process (``module:attr``) server's spans join the same trace.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

from mcp_tasks.cli._parser import UsageError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

__all__ = ["OTLP_MODULES", "Tracing"]

OTLP_MODULES = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
)
"""Where the OTLP span exporter is found (the HTTP one first), the first installed one is used."""


class _Suspends(Protocol):
    @property
    def display(self) -> Any: ...


def _otlp_exporter() -> Any | None:
    for name in OTLP_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.OTLPSpanExporter()
    return None


class Tracing:
    """The command's tracer provider: none until `start`, flushed and shut down by `stop`."""

    def __init__(self, console: _Suspends) -> None:
        self.console = console
        self.provider: TracerProvider | None = None
        self.exporter = ""

    def start(self) -> None:
        """Make the tracer provider and its exporter (a `UsageError` without opentelemetry-sdk, or
        when ``$OTEL_TRACES_EXPORTER`` asks for what is not installed).
        """
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
        except ImportError:
            raise UsageError("--trace needs OpenTelemetry's SDK: pip install opentelemetry-sdk") from None
        wanted = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        if wanted not in ("", "console", "otlp"):
            raise UsageError(f"--trace exports to console or otlp; $OTEL_TRACES_EXPORTER is {wanted!r}")
        provider = TracerProvider()
        otlp = _otlp_exporter() if wanted != "console" else None
        if wanted == "otlp" and otlp is None:
            raise UsageError("$OTEL_TRACES_EXPORTER=otlp needs pip install opentelemetry-exporter-otlp")
        if otlp is not None:
            provider.add_span_processor(BatchSpanProcessor(otlp))
            self.exporter = "otlp"
        else:
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr, formatter=self._line)))
            self.exporter = "console"
        trace.set_tracer_provider(provider)
        self.provider = provider

    def _line(self, span: ReadableSpan) -> str:
        self.console.display.suspend()  # a span's line never lands inside the live status line
        return str(span.to_json(indent=None)) + "\n"

    def client_options(self) -> dict[str, Any]:
        """The client factories' options that trace with this provider (none before `start`)."""
        return {"tracer_provider": self.provider} if self.provider is not None else {}

    def stop(self) -> None:
        """Export what is left and shut the provider down."""
        if self.provider is not None:
            self.provider.shutdown()
            self.provider = None
