"""Input strategies: how a wait answers its task's input requests ("handlers", "return", a
function of the status, or any object with ``answer(client, status, pending)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from mcp_tasks._errors import InputError
from mcp_tasks._input import InputHandlers, NoHandler, answer_all, input_failure
from mcp_tasks._status import Status
from mcp_tasks._tasks._asked import asking_about

__all__ = ["FunctionStrategy", "HandlersStrategy", "InputStrategy", "ReturnStrategy", "resolve_strategy"]


class InputStrategy(Protocol):
    """How a wait answers input: return the responses to send (keyed as the requests are), an
    empty dict to send nothing yet, or None to stop the wait with the input_required status.
    """

    def answer(self, client: Any, status: Status, pending: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """Answer the `pending` requests of `status` (the requests not answered in this wait)."""


class HandlersStrategy:
    """Answer with the client's input handlers, all or nothing: when any pending request has no
    handler for its kind, none runs and the wait returns the input_required status. Handlers run
    in sorted key order; each response is checked before it is sent. A 2025-era task's request,
    whose kind is known only once fetched, is fetched only when a handler here answers every kind
    the session declared (see `leaves`).
    """

    def __init__(self, handlers: InputHandlers | None = None) -> None:
        self._handlers = handlers

    def answer(self, client: Any, status: Status, pending: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """See `InputStrategy.answer`."""
        handlers: InputHandlers = self._handlers or client.input_handlers
        try:
            with asking_about(client, status.task_id):  # the questions name their task
                return answer_all(handlers, pending, status.with_input_requests(pending))
        except NoHandler:
            return None

    def leaves(self, client: Any, declared: frozenset[str] | None) -> bool:
        """Whether a 2025-era wait leaves the server's request on the server, for a process that
        answers it, rather than fetch it (``tasks/result``) only to refuse it, which fails the
        task: that era says what it asks only once it is fetched. It leaves it when no handler
        is set at all, or when the session `declared` a kind of input (so the server may ask it)
        that no handler here answers; `declared` is None when not known (a session joined by id).
        """
        handlers: InputHandlers = self._handlers or client.input_handlers
        answered = set(handlers.kinds)
        return not answered or (declared is not None and not declared <= answered)

    def __repr__(self) -> str:
        return "HandlersStrategy()"


class ReturnStrategy:
    """Never answer: the wait returns the input_required status at once."""

    def answer(self, client: Any, status: Status, pending: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """See `InputStrategy.answer`."""
        return None

    def __repr__(self) -> str:
        return "ReturnStrategy()"


class FunctionStrategy:
    """Answer with a function of the status, its input_requests cut to the pending ones. Its
    responses are sent as they are (not checked).
    """

    def __init__(self, function: Callable[[Status], dict[str, Any] | None]) -> None:
        self._function = function

    def answer(self, client: Any, status: Status, pending: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """See `InputStrategy.answer`."""
        reduced = status.with_input_requests(pending)
        try:
            return self._function(reduced)
        except InputError as exc:
            raise input_failure(None, exc.reason, reduced) from exc

    def __repr__(self) -> str:
        return f"FunctionStrategy({self._function!r})"


def resolve_strategy(value: object) -> InputStrategy:
    """The strategy for a wait's ``input=`` option: "handlers", "return", a function, or an
    object with ``answer(client, status, pending)``.
    """
    if value == "handlers":
        return HandlersStrategy()
    if value == "return":
        return ReturnStrategy()
    if isinstance(value, str):
        raise ValueError(f"input must be 'handlers', 'return', a function or a strategy object, got {value!r}")
    if callable(getattr(value, "answer", None)):
        return cast(InputStrategy, value)
    if callable(value):
        return FunctionStrategy(value)
    raise TypeError(f"input must be 'handlers', 'return', a function or a strategy object, got {value!r}")
