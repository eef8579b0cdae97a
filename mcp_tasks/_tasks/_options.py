"""The options every wait shares: typed for callers (`WaitOptions`, for
``**options: Unpack[WaitOptions]``), checked once into a frozen `WaitSettings`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypedDict, Union

import attrs

from mcp_tasks._clock import check_duration, check_timeout
from mcp_tasks._options import UNSET
from mcp_tasks._status import Status
from mcp_tasks._store._protocol import TaskStore, check_store
from mcp_tasks._tasks._defaults import (
    CANCEL_BUDGET,
    DEFAULT_MIN_POLL_INTERVAL,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_WAIT_TIMEOUT,
)
from mcp_tasks._tasks._progress_keeper import OnProgress, check_on_progress
from mcp_tasks._tasks._strategies import HandlersStrategy, InputStrategy, resolve_strategy

__all__ = [
    "CANCEL_BUDGET",
    "DEFAULT_MIN_POLL_INTERVAL",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_WAIT_TIMEOUT",
    "InputOption",
    "OnStatus",
    "WaitOptions",
    "WaitSettings",
]


OnStatus = Callable[[Status], object]
"""Called with each status a wait sees (a progress display)."""
InputOption = Union[Literal["handlers", "return"], Callable[[Status], "dict[str, Any] | None"], InputStrategy]
"""How a wait answers input: "handlers", "return", a function of the status, or a strategy object."""


class WaitOptions(TypedDict, total=False):
    """The options of `wait_task`, `await_task` and `call_and_await`, each with its default."""

    timeout: float | None
    """Seconds for the whole wait; None waits for ever. Default: 60.0."""
    poll_interval: float
    """Seconds between reads when the task suggests none. Default: 1.0."""
    min_poll_interval: float
    """Never read more often than this. Default: 0.05."""
    request_timeout: float | None
    """The limit of each request of the wait; None: no limit but the wait's own. Default: the
    client's timeout."""
    listen: bool
    """Follow a ``subscriptions/listen`` stream instead of polling. Default: False."""
    input: InputOption
    """How input is answered: "handlers", "return", a function, a strategy. Default: "handlers"."""
    on_status: OnStatus | None
    """Called in the caller's thread with each status seen. Default: None."""
    on_progress: OnProgress | None
    """Called with ``(progress, total, message)`` for the progress the server reports for a task
    this client created (kept from its call: a task resumed from elsewhere has none), on the
    client's progress thread, never the wait's. Default: None."""
    cancel_on_timeout: bool
    """Cancel the task when the time is up, spending at most `CANCEL_BUDGET` (0.25 s) more.
    Default: False."""
    store: TaskStore | None
    """The `TaskStore` the wait records into, replays unacknowledged answers from and leases the
    task in. Default: the client's ``store``."""


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _listen(value: object) -> bool:
    return _flag("listen", value)


def _cancel_on_timeout(value: object) -> bool:
    return _flag("cancel_on_timeout", value)


def _timeout(value: object) -> float | None:
    return check_timeout("timeout", value)


def _poll_interval(value: object) -> float:
    return check_duration("poll_interval", value)


def _min_poll_interval(value: object) -> float:
    return check_duration("min_poll_interval", value)


def _on_status(value: object) -> OnStatus | None:
    if value is not None and not callable(value):
        raise TypeError(f"on_status must be callable or None, got {value!r}")
    return value


def _store(value: object) -> object:
    return value if value is UNSET else check_store(value)


def _request_timeout(value: object) -> object:
    return value if value is UNSET else check_timeout("request_timeout", value)


@attrs.frozen
class WaitSettings:
    """`WaitOptions` checked: each converted and validated once, before anything is sent."""

    timeout: float | None = attrs.field(default=DEFAULT_WAIT_TIMEOUT, converter=_timeout)
    poll_interval: float = attrs.field(default=DEFAULT_POLL_INTERVAL, converter=_poll_interval)
    min_poll_interval: float = attrs.field(default=DEFAULT_MIN_POLL_INTERVAL, converter=_min_poll_interval)
    request_timeout: Any = attrs.field(default=UNSET, converter=_request_timeout)
    listen: bool = attrs.field(default=False, converter=_listen)
    input: InputStrategy = attrs.field(default=HandlersStrategy(), converter=resolve_strategy)
    on_status: OnStatus | None = attrs.field(default=None, converter=_on_status)
    on_progress: OnProgress | None = attrs.field(default=None, converter=check_on_progress)
    cancel_on_timeout: bool = attrs.field(default=False, converter=_cancel_on_timeout)
    store: Any = attrs.field(default=UNSET, converter=_store)  # UNSET: the client's

    @classmethod
    def of(cls, options: Mapping[str, Any], caller: str = "wait_task") -> WaitSettings:
        """Settings from keyword options; a name that is no option is a TypeError naming it."""
        unknown = sorted(set(options) - set(WaitOptions.__annotations__))
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        return cls(**options)


def settings_of(options: Mapping[str, Any], caller: str, *, progress: bool = True) -> tuple[WaitSettings, bool]:
    """The checked settings, and whether to listen (None and True: yes). `progress` False: a
    wait on a set, whose one ``on_progress`` could not say which task reported (a TypeError).
    """
    if not progress and "on_progress" in options:
        raise TypeError(
            f"{caller}() got an unexpected keyword argument 'on_progress' (progress is per task: "
            "give on_progress to each submit, wait_task or call_and_await)"
        )
    options = dict(options)
    listen = options.pop("listen", None)
    if listen is not None and not isinstance(listen, bool):
        raise TypeError(f"listen must be True, False or None, got {listen!r}")
    return WaitSettings.of(options, caller), listen is not False
