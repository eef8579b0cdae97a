"""Input: the handlers that answer a server's input requests, and the checks on their answers.

A server asks for input inside a result (`inputRequests`, keyed), never by sending a request of its
own. Each request has a kind by its method (and elicitation mode); a handler of that kind gets the
request's params and returns the response, which is checked before it is sent.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from mcp_tasks._errors import INTERNAL_ERROR, InputError, McpError
from mcp_tasks._input_kinds import INPUT_KINDS, kind_of
from mcp_tasks._redact import redact_ids, short_id

if TYPE_CHECKING:
    from mcp_tasks._people._prompt import Prompter


class InputSubject(Protocol):
    """What an input failure is about, when it is not a result dict: a task's status."""

    @property
    def task_id(self) -> str:
        """The task's id."""

    @property
    def input_requests(self) -> dict[str, dict[str, Any]]:
        """The requests the input was for."""

    @property
    def session_id(self) -> str | None:
        """The session the task belongs to (its id is shortened in messages too)."""


__all__ = [
    "Handler",
    "InputHandlers",
    "InputSubject",
    "NoHandler",
    "answer_all",
    "ask_a_person_with",
    "capabilities_for",
    "check_response",
    "declared_kinds",
    "input_failure",
    "kind_of",
]

Handler = Callable[[dict[str, Any]], Any]
"""An input handler: takes the request's params, returns the response dict."""

KINDS = INPUT_KINDS
ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})


class _Interactive:
    """Who makes the handlers that ask a person: the prompt, registered when it loads (with
    `mcp_tasks.InputHandlers`: `ask_a_person_with`; the input code stands below what a person sees).
    """

    handlers: Callable[[Prompter | None], tuple[Handler, Handler]] | None = None


def ask_a_person_with(handlers: Callable[[Prompter | None], tuple[Handler, Handler]]) -> None:
    """Have `InputHandlers.interactive` ask a person through `handlers(prompter)`: the form and
    URL handlers (`mcp_tasks._people._prompt` registers its own when it loads).
    """
    _Interactive.handlers = handlers


def _check_handler(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{attribute.name} handler must be callable, got {type(value).__name__}")


@attrs.frozen
class InputHandlers:
    """The functions that answer input requests, one per kind.

    `form` and `url` answer ``elicitation/create`` in that mode, `sampling` answers
    ``sampling/createMessage`` and `roots` answers ``roots/list``. Each takes the request's params
    dict and returns the response dict; one that cannot answer raises `InputError`. A handler also
    declares its capability on every request the client sends (form -> ``elicitation.form``, ...).
    """

    form: Handler | None = attrs.field(default=None, validator=_check_handler)
    url: Handler | None = attrs.field(default=None, validator=_check_handler)
    sampling: Handler | None = attrs.field(default=None, validator=_check_handler)
    roots: Handler | None = attrs.field(default=None, validator=_check_handler)

    @classmethod
    def interactive(
        cls, prompter: Prompter | None = None, *, sampling: Handler | None = None, roots: Handler | None = None
    ) -> InputHandlers:
        """Handlers that ask a person: a form elicitation field by field, following its schema
        (types, enums, defaults, required; an invalid answer is asked again, a required field left
        empty declines), a URL elicitation as a link to open. In a notebook they ask through the
        kernel's ``input()``; elsewhere on stderr, reading stdin. `prompter` asks somewhere else
        (any object with ``ask(prompt, field)`` and ``say(event, text, **fields)``). A question
        about a task names it (``[greet e294…b175] The server asks: …``; ``say`` gets its
        ``task`` and ``tool`` fields); when several tasks ask at once, their forms are asked one
        at a time, each whole, in the order they asked. A question waiting its turn keeps to its
        wait's deadline (``timeout=``), and leaves the queue when the client closes or its future
        is cancelled.
        """
        if _Interactive.handlers is None:
            raise RuntimeError("mcp_tasks._people._prompt is not loaded: use mcp_tasks.InputHandlers")
        form, url = _Interactive.handlers(prompter)
        return cls(form=form, url=url, sampling=sampling, roots=roots)

    def for_kind(self, kind: str | None) -> Handler | None:
        """The handler for a kind of request, or None when there is none."""
        if kind not in KINDS:
            return None
        handler: Handler | None = getattr(self, kind)
        return handler

    def capabilities(self, declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """`declared` client capabilities plus those the handlers imply."""
        return capabilities_for(self.kinds, declared)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of input these handlers answer."""
        return tuple(kind for kind in KINDS if getattr(self, kind) is not None)


def capabilities_for(kinds: Iterable[str], declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`declared` client capabilities plus those that answering `kinds` of input implies (form ->
    ``elicitation.form``, url -> ``elicitation.url``, sampling, roots).
    """
    kinds = set(kinds)
    caps: dict[str, Any] = dict(declared or {})
    modes = [mode for mode in ("form", "url") if mode in kinds]
    if modes:
        elicitation = caps.get("elicitation")
        elicitation = dict(elicitation) if isinstance(elicitation, Mapping) else {}
        if not elicitation:
            # An empty elicitation capability means form mode; keep that meaning.
            elicitation = {"form": {}}
        for mode in modes:
            elicitation.setdefault(mode, {})
        caps["elicitation"] = elicitation
    if "sampling" in kinds:
        caps.setdefault("sampling", {})
    if "roots" in kinds:
        caps.setdefault("roots", {"listChanged": False})
    return caps


def declared_kinds(capabilities: Mapping[str, Any]) -> frozenset[str]:
    """The kinds of input that client `capabilities` declare (what a server may then ask for):
    ``elicitation`` form and url (an empty one is form), ``sampling``, ``roots``.
    """
    kinds: set[str] = set()
    elicitation = capabilities.get("elicitation")
    if isinstance(elicitation, Mapping):
        kinds.update(mode for mode in ("form", "url") if mode in elicitation)
        if not elicitation or not kinds:
            kinds.add("form")
    kinds.update(kind for kind in ("sampling", "roots") if isinstance(capabilities.get(kind), Mapping))
    return frozenset(kinds)


def request_params(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The params of an input request: a missing one is ``{}``, one that is not an object None."""
    params = request.get("params", {})
    if params is None:
        return {}
    return params if isinstance(params, dict) else None


def check_response(kind: str, response: object) -> tuple[str, Any] | None:
    """Why a handler's response cannot be sent, as a reason tuple, or None when it is fine."""
    if not isinstance(response, dict):
        return ("invalid_return", response)
    valid = {
        "form": _valid_elicitation,
        "url": _valid_elicitation,
        "sampling": _valid_sampling,
        "roots": _valid_roots,
    }[kind](response)
    return None if valid else ("invalid_response", response)


def json_safe(value: object) -> bool:
    """Whether a value is plain JSON: objects with string keys, arrays, strings, finite numbers."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(json_safe(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_safe(v) for k, v in value.items())
    return False


def _valid_elicitation(response: dict[str, Any]) -> bool:
    return (
        all(isinstance(key, str) for key in response)
        and response.get("action") in ELICITATION_ACTIONS
        and json_safe(response)
    )


_SAMPLING_BLOCKS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys)
    "text": (frozenset({"type", "text"}), frozenset({"annotations", "_meta"})),
    "image": (frozenset({"type", "data", "mimeType"}), frozenset({"annotations", "_meta"})),
    "audio": (frozenset({"type", "data", "mimeType"}), frozenset({"annotations", "_meta"})),
    "tool_use": (frozenset({"type", "id", "name", "input"}), frozenset({"_meta"})),
    "tool_result": (
        frozenset({"type", "toolUseId", "content"}),
        frozenset({"structuredContent", "isError", "_meta"}),
    ),
}


def _valid_block(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    shape = _SAMPLING_BLOCKS.get(block.get("type"))  # type: ignore[arg-type]
    if shape is None:
        return False
    required, optional = shape
    keys = set(block)
    if not required <= keys or not keys <= required | optional:
        return False
    kind = block["type"]
    if kind == "text":
        return isinstance(block["text"], str)
    if kind in ("image", "audio"):
        return isinstance(block["data"], str) and isinstance(block["mimeType"], str)
    if kind == "tool_use":
        return isinstance(block["id"], str) and isinstance(block["name"], str) and isinstance(block["input"], dict)
    return isinstance(block["toolUseId"], str) and isinstance(block["content"], list)


def _valid_sampling(response: dict[str, Any]) -> bool:
    content = response.get("content")
    blocks = content if isinstance(content, list) else [content]
    return (
        json_safe(response)
        and response.get("role") in ("user", "assistant")
        and isinstance(response.get("model"), str)
        and bool(blocks)
        and all(_valid_block(block) for block in blocks)
        and isinstance(response.get("stopReason", ""), str)
        and isinstance(response.get("_meta", {}), dict)
    )


def _valid_root(root: object) -> bool:
    if not isinstance(root, dict) or not set(root) <= {"uri", "name", "_meta"}:
        return False
    uri = root.get("uri")
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return False
    try:
        urllib.parse.urlsplit(uri)
    except ValueError:
        return False
    return isinstance(root.get("name", ""), str) and isinstance(root.get("_meta", {}), dict)


def _valid_roots(response: dict[str, Any]) -> bool:
    roots = response.get("roots")
    return json_safe(response) and isinstance(roots, list) and all(_valid_root(r) for r in roots)


def input_failure(key: str | None, reason: Any, subject: InputSubject | dict[str, Any]) -> McpError:
    """The error for input that could not be answered (-32603, kind execution); `subject` is the
    task's Status (in a wait) or the input_required result (in a call). The message says why, with
    the task's id in its short form wherever it appears (input keys embed it on some servers).
    """
    ids: tuple[str | None, ...] = ()
    if isinstance(subject, dict):
        whose, requests = "the server's", subject.get("inputRequests")
    else:
        whose, requests = f"task {short_id(subject.task_id)}'s", subject.input_requests
        ids = (subject.task_id, subject.session_id)
    request = requests.get(key) if isinstance(requests, dict) and key is not None else None
    kind = kind_of(request) or "input"
    shown = repr(redact_ids(key, *ids)) if isinstance(key, str) else repr(key)
    what = f"The input handler for {whose} {kind} request {shown}" if key is not None else f"The input for {whose}"
    return McpError(
        INTERNAL_ERROR,
        redact_ids(f"{what} could not answer: {_why(kind, reason)}", *ids),
        kind="execution",
        cause=("input_handler", key, reason, subject),
    )


def _why(kind: str, reason: Any) -> str:
    """A reason for a message; a response is described, never shown whole (it may hold secrets)."""
    if isinstance(reason, tuple) and len(reason) == 2 and reason[0] == "invalid_return":
        value = reason[1]
        shown = repr(value) if value is None or isinstance(value, (bool, int, float)) else type(value).__name__
        return f"it returned {shown}, not a response dict"
    if isinstance(reason, tuple) and len(reason) == 2 and reason[0] == "invalid_response":
        response = reason[1]
        if kind in ("form", "url") and isinstance(response, dict):
            action = response.get("action")
            if action not in ELICITATION_ACTIONS:
                return f"its action must be 'accept', 'decline' or 'cancel', got {repr(action)[:30]}"
            return "its response is not plain JSON with string keys"
        keys = ", ".join(sorted(str(k) for k in response)) if isinstance(response, dict) else "none"
        return f"its response is not a valid {kind} response (keys: {keys})"
    return str(reason)


class NoHandler(Exception):
    """An input request has no handler for its kind (`kind` is None for one of no known kind)."""

    def __init__(self, kind: str | None) -> None:
        super().__init__(f"no input handler for {kind or 'this kind of'} request")
        self.kind = kind


def answer_all(
    handlers: InputHandlers,
    requests: Mapping[str, Any],
    subject: InputSubject | dict[str, Any],
) -> dict[str, Any]:
    """Answer every request with its handler, in sorted key order, checking each response.

    All or nothing: raises `NoHandler` before any handler runs when a request has none. A handler
    that raises `InputError`, or a response that fails its check, gives `input_failure` about
    `subject`; other exceptions from a handler reach the caller.
    """
    plan = []
    for key in sorted(requests):
        request = requests[key]
        kind = kind_of(request)
        handler = handlers.for_kind(kind)
        params = request_params(request) if isinstance(request, Mapping) else None
        if handler is None or params is None:
            raise NoHandler(kind)
        assert kind is not None
        plan.append((key, kind, handler, params))
    responses: dict[str, Any] = {}
    for key, kind, handler, params in plan:
        try:
            response = handler(params)
        except InputError as exc:
            raise input_failure(key, exc.reason, subject) from exc
        problem = check_response(kind, response)
        if problem is not None:
            raise input_failure(key, problem, subject)
        responses[key] = response
    return responses
