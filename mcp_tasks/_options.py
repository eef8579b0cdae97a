"""The options every client factory shares: typed for callers (`ClientOptions`, for
``**options: Unpack[ClientOptions]``), checked once into a frozen `ClientSettings`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypedDict

import attrs

from mcp_tasks._clock import check_timeout
from mcp_tasks._input import InputHandlers, capabilities_for
from mcp_tasks._input_kinds import INPUT_KINDS, InputKind
from mcp_tasks._session._agreement import check_protocol
from mcp_tasks._store._protocol import TaskStore, check_store
from mcp_tasks._version import __version__
from mcp_tasks.transports._retry import Retry

__all__ = [
    "DEFAULT_TIMEOUT",
    "UNSET",
    "ClientOptions",
    "ClientSettings",
    "OnNotification",
    "check_meta",
    "resolve_timeout",
]


class _Unset:
    """The default of an option left out: use the client's setting (None means no limit)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Stands for an option left out (the client's default applies), where None means "no limit"."""


def check_meta(meta: object) -> None:
    """A request's `meta` option: a dict or None (TypeError otherwise)."""
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")


def resolve_timeout(timeout: object, default: float | None, name: str = "timeout") -> float | None:
    """`timeout` checked, or `default` when it is `UNSET`."""
    if timeout is UNSET:
        return default
    return check_timeout(name, timeout)


DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_INPUT_ROUNDS = 10

OnNotification = Callable[[str, dict[str, Any]], object]
"""Called with (method, params) for each server notification, on the transport's thread."""


class TracerProvider(Protocol):
    """What `tracer_provider` takes: an OpenTelemetry ``TracerProvider`` (typed here without
    importing OpenTelemetry, which only a traced client needs).
    """

    def get_tracer(self, instrumenting_module_name: str, instrumenting_library_version: str | None = None) -> object:
        """A tracer for this library (OpenTelemetry's `TracerProvider.get_tracer`)."""


class ClientOptions(TypedDict, total=False):
    """The options of every client factory (`Client.direct`, `stdio`, `http`, `connect`)."""

    client_capabilities: Mapping[str, Any] | None
    """What the client declares, plus what `input_handlers` imply. Default: None."""
    input_handlers: InputHandlers | None
    """Answer the server's input requests (`InputHandlers`). Default: None."""
    declare_input: Sequence[InputKind] | None
    """Kinds of input (``"form"``, ``"url"``, ``"sampling"``, ``"roots"``) to declare although
    this client has no handler for them, because a later process will answer them (`resume`). A
    2025-11-25 server checks what the session declared when its task asks (mcp 1.30 fails the
    task: "Client does not support elicitation capability"), and the resumer joins that session.
    ``()`` declares none. A 2025-era wait fetches a task's request only when its handlers answer
    every kind the session declared (that era says what it asks only once fetched, and a request
    refused fails the task): else it leaves it. Default: ``("form", "url")`` for a client with a
    `store` and no input handlers, none otherwise."""
    timeout: float | None
    """The default total of one request, in seconds; None: no limit. Default: 30.0."""
    client_info: Mapping[str, Any] | None
    """The name and version the client gives. Default: mcp_tasks and its version."""
    max_input_rounds: int
    """How many input_required rounds one request may take. Default: 10."""
    retries: Retry | int
    """A `Retry` policy or a number of retries (0 turns retries off). Default: ``Retry()``."""
    protocol: str
    """``"auto"`` (detect the era) or one revision to pin. Default: ``"auto"``."""
    on_notification: OnNotification | None
    """Called with (method, params) for every server notification. Default: None."""
    store: TaskStore | None
    """A `TaskStore` that records every task the client creates and every status it reads.
    Default: None."""
    trace: bool
    """Make OpenTelemetry spans of requests and task waits, with the global tracer provider (needs
    ``mcp_tasks[otel]``). A traced client sends the W3C trace context (``traceparent``,
    ``tracestate``) in each request's ``_meta``, and nothing else of the caller's context.
    Default: False."""
    tracer_provider: TracerProvider | None
    """Trace with this provider instead of the global one. Default: None."""
    propagate_baggage: bool
    """Send the caller's W3C baggage (``baggage``) too, to every server the client talks to; off
    by default, since baggage often holds what a third party's server should not see (user ids,
    tenants). Needs `trace` or `tracer_provider`. Default: False."""


def _mapping(name: str, value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")
    return dict(value)


def _capabilities(value: object) -> dict[str, Any] | None:
    return _mapping("client_capabilities", value)


def _declare_input(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"declare_input must be a list of input kinds or None, got {value!r}")
    for kind in value:
        if kind not in INPUT_KINDS:
            raise ValueError(f"declare_input takes {', '.join(map(repr, INPUT_KINDS))}, got {kind!r}")
    return tuple(value)


def _info(value: object) -> dict[str, Any] | None:
    return _mapping("client_info", value)


def _timeout(value: object) -> float | None:
    return check_timeout("timeout", value)


def _handlers(value: object) -> InputHandlers:
    if value is None:
        return InputHandlers()
    if not isinstance(value, InputHandlers):
        raise TypeError(f"input_handlers must be an InputHandlers or None, got {type(value).__name__}")
    return value


def _rounds(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_input_rounds must be a positive int, got {value!r}")
    return value


def _callback(value: object) -> OnNotification | None:
    if value is not None and not callable(value):
        raise TypeError("on_notification must be callable or None")
    return value


def _store(value: object) -> TaskStore | None:
    return check_store(value)


def _retry(value: object) -> Retry:
    return Retry.of(value)  # type: ignore[arg-type]


def _trace(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"trace must be True or False, got {value!r}")
    return value


def _baggage(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"propagate_baggage must be True or False, got {value!r}")
    return value


def _provider(value: object) -> Any:
    if value is not None and not callable(getattr(value, "get_tracer", None)):
        raise TypeError(f"tracer_provider must be an OpenTelemetry TracerProvider or None, got {type(value).__name__}")
    return value


@attrs.frozen
class ClientSettings:
    """`ClientOptions` checked: each field converted and validated once, at construction."""

    client_capabilities: dict[str, Any] | None = attrs.field(default=None, converter=_capabilities)
    input_handlers: InputHandlers = attrs.field(default=None, converter=_handlers)
    declare_input: tuple[str, ...] | None = attrs.field(default=None, converter=_declare_input)
    timeout: float | None = attrs.field(default=DEFAULT_TIMEOUT, converter=_timeout)
    client_info: dict[str, Any] | None = attrs.field(default=None, converter=_info)
    max_input_rounds: int = attrs.field(default=DEFAULT_MAX_INPUT_ROUNDS, converter=_rounds)
    retries: Retry = attrs.field(default=Retry(), converter=_retry)
    protocol: str = attrs.field(default="auto", converter=check_protocol)
    on_notification: OnNotification | None = attrs.field(default=None, converter=_callback)
    store: TaskStore | None = attrs.field(default=None, converter=_store)
    trace: bool = attrs.field(default=False, converter=_trace)
    tracer_provider: TracerProvider | None = attrs.field(default=None, converter=_provider)
    propagate_baggage: bool = attrs.field(default=False, converter=_baggage)

    def __attrs_post_init__(self) -> None:
        if self.propagate_baggage and not self.tracing:
            raise TypeError("propagate_baggage=True needs a traced client: trace=True or a tracer_provider")
        if self.tracing:
            from mcp_tasks._tracing import require_tracing

            require_tracing()  # no OpenTelemetry: fail here, before a transport starts anything

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> ClientSettings:
        """Settings from keyword options; a name that is no option is a TypeError naming it."""
        unknown = sorted(set(options) - set(ClientOptions.__annotations__))
        if unknown:
            raise TypeError(f"got an unexpected keyword argument {unknown[0]!r} (not a client option)")
        return cls(**options)

    @property
    def tracing(self) -> bool:
        """Whether requests and waits are traced (`trace` or a `tracer_provider` given)."""
        return self.trace or self.tracer_provider is not None

    @property
    def info(self) -> dict[str, Any]:
        """The client info sent: the caller's, or this library's name and version."""
        return self.client_info or {"name": "mcp_tasks", "version": __version__}

    @property
    def declared_input(self) -> tuple[str, ...]:
        """The kinds of input declared for a later process to answer (see `declare_input`): by
        default form and url for a client with a store and no input handlers.
        """
        if self.declare_input is not None:
            return self.declare_input
        return ("form", "url") if self.store is not None and not self.input_handlers.kinds else ()

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the client declares: its capabilities, those its input handlers imply, and the
        input declared for a later process to answer.
        """
        return capabilities_for(self.declared_input, self.input_handlers.capabilities(self.client_capabilities))
