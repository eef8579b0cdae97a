"""Asking a person: input handlers that put a server's elicitation to whoever runs the code.

A form elicitation is asked field by field, following its schema (types, enums, defaults, required,
bounds, formats), each answer checked and asked again until it is valid; a URL elicitation is shown
as a link to open, with its host on a line of its own, when it is one a person may safely open
(see `mcp_tasks._printable.link_to_open`); any other is declined, and the person told why. Every
text of the server's (message, titles, labels, defaults, the URL) is shown through `printable`:
control, escape and bidirectional-formatting characters appear as escapes, never interpreted.
Questions go through a `Prompter`: the default one asks in a notebook through the
kernel's ``input()`` (ipykernel replaces ``builtins.input`` while a cell runs), and elsewhere writes
to stderr and reads a line from stdin, so stdout stays the program's own. The command line uses the
same code with its own prompter. A question about a task names it (``[greet e294…b175] The server
asks: …``), and when several tasks ask at once their forms are asked whole, one after another.
"""

from __future__ import annotations

import builtins
import datetime
import json
import math
import sys
import threading
import urllib.parse
from typing import IO, TYPE_CHECKING, Any, Protocol

from mcp_tasks._errors import InputError
from mcp_tasks._input import ask_a_person_with
from mcp_tasks._people._asking import turn
from mcp_tasks._printable import link_to_open, printable
from mcp_tasks._redact import short_id
from mcp_tasks._session._turns import asker

if TYPE_CHECKING:
    from mcp_tasks._input import Handler

__all__ = ["Prompter", "TextPrompter", "ask_form", "ask_url", "interactive_handlers", "read_answer"]


class Prompter(Protocol):
    """Where the questions go and the answers come from."""

    def ask(self, prompt: str, field: str) -> str:
        """One answer, without its line end; `field` names what is asked. Raise `InputError` when
        no answer can come (a closed stdin, a frontend without input).
        """

    def say(self, event: str, text: str, **fields: object) -> None:
        """Tell the person something: `text` for people, `event` and `fields` for machines (an
        ``input`` event about a task has ``task``, its short id, and ``tool``, its tool or None).
        """


def read_answer(prompt: str, stdin: IO[str], out: IO[str]) -> str:
    """Write `prompt` on `out`, read one line from `stdin`. When the answer was not typed at a
    terminal (a pipe, a file) nothing echoed it: the line is ended on `out`, so what comes next
    does not land on the prompt's line.
    """
    out.write(prompt)
    out.flush()
    line = stdin.readline()
    if not line:
        out.write("\n")
        out.flush()
        raise InputError("no answer: stdin is closed")
    if not _isatty(stdin):
        out.write("\n")
        out.flush()
    return line.rstrip("\r\n")


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and hasattr(shell, "kernel")


QUESTION_IN_PROMPT = 60
"""How much of the server's question a notebook's input box repeats (its frontend may show the
printed question after the box, or far above it)."""


def _short(message: object) -> str:
    """The question on one line, cut to `QUESTION_IN_PROMPT` characters ("" for none)."""
    if not isinstance(message, str):
        return ""
    text = printable(" ".join(message.split()))
    return text if len(text) <= QUESTION_IN_PROMPT else text[: QUESTION_IN_PROMPT - 1] + "…"


class TextPrompter:
    """The default `Prompter`: in a notebook the kernel's ``input()`` and ``print``, each input
    box's prompt led by the question it answers; elsewhere prompts and messages on `out` (stderr)
    and answers from `stdin`, both looked up when used.
    """

    def __init__(self, stdin: IO[str] | None = None, out: IO[str] | None = None) -> None:
        self._stdin = stdin
        self._out = out
        self._asking = threading.local()  # the question a notebook's prompts repeat, per asking thread

    def ask(self, prompt: str, field: str) -> str:
        """See `Prompter.ask`."""
        if self._stdin is None and self._out is None and _in_notebook():
            question = getattr(self._asking, "question", "")
            if question:
                prompt = f"{question} — {prompt.lstrip()}"
            try:
                return str(builtins.input(prompt))
            except EOFError:
                raise InputError("no answer: the input was closed") from None
            except Exception as exc:  # ipykernel's StdinNotImplementedError: a frontend without input
                if type(exc).__name__ == "StdinNotImplementedError":
                    raise InputError("no answer: this notebook frontend does not support input()") from None
                raise
        return read_answer(prompt, self._stdin or sys.stdin, self._out or sys.stderr)

    def say(self, event: str, text: str, **fields: object) -> None:
        """See `Prompter.say`."""
        if self._stdin is None and self._out is None and _in_notebook():
            if event in ("input", "refused"):
                self._asking.question = _short(fields.get("message"))
            print(text, flush=True)  # out before the input box is asked for
            return
        out = self._out or sys.stderr
        out.write(text + "\n")
        out.flush()

    def __repr__(self) -> str:
        return "TextPrompter()"


class _Decline(Exception):
    """The person left a required field empty: the form is declined."""


_YES = ("y", "yes", "true", "1")
_NO = ("n", "no", "false", "0")


def _choices(spec: dict[str, Any]) -> list[tuple[Any, str]] | None:
    """The (value, label) choices of an enum field: ``enum`` (with ``enumNames``), or ``oneOf`` /
    ``anyOf`` of ``{"const", "title"}``.
    """
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else [str(v) for v in enum]
        return [(value, str(label)) for value, label in zip(enum, labels, strict=True)]
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
            return [(o["const"], str(o.get("title") or o["const"])) for o in options]
    return None


def _pick(raw: str, choices: list[tuple[Any, str]]) -> Any:
    """A choice by its value, its label or its number (from 1)."""
    for value, label in choices:
        if raw == str(value) or raw == label:
            return value
    if raw.isdigit() and 1 <= int(raw) <= len(choices):
        return choices[int(raw) - 1][0]
    raise ValueError("choose one of " + ", ".join(_shown(c) for c in choices))


def _shown(choice: tuple[Any, str]) -> str:
    value, label = choice
    return str(value) if label == str(value) else f"{value} ({label})"


def _hint(spec: dict[str, Any]) -> str:
    kind = spec.get("type", "string")
    choices = _choices(spec)
    if choices is not None:
        return "/".join(_shown(c) for c in choices)
    if kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        inner = _choices(items or {})
        return "comma-separated: " + ("/".join(_shown(c) for c in inner) if inner else "values")
    if kind == "boolean":
        return "y/n"
    fmt = spec.get("format")
    parts = [fmt if isinstance(fmt, str) else str(kind)]
    for key, word in (("minimum", "min"), ("maximum", "max")):
        if key in spec:
            parts.append(f"{word} {spec[key]}")
    return ", ".join(parts)


def _convert(raw: str, spec: dict[str, Any]) -> Any:
    """The answer as the schema's type; ValueError says what is wrong with it."""
    kind = spec.get("type", "string")
    choices = _choices(spec)
    if kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        values = [part.strip() for part in raw.split(",") if part.strip()]
        inner = _choices(items or {})
        picked = [_pick(v, inner) for v in values] if inner else values
        _count(len(picked), spec.get("minItems"), spec.get("maxItems"), "items")
        return picked
    if choices is not None:
        return _pick(raw, choices)
    if kind == "boolean":
        if raw.lower() in _YES:
            return True
        if raw.lower() in _NO:
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            number: float = int(raw) if kind == "integer" else float(raw)
        except ValueError:
            raise ValueError(f"expected {'a whole number' if kind == 'integer' else 'a number'}") from None
        if not math.isfinite(number):
            raise ValueError("expected a finite number")
        if isinstance(spec.get("minimum"), (int, float)) and number < spec["minimum"]:
            raise ValueError(f"must be at least {spec['minimum']}")
        if isinstance(spec.get("maximum"), (int, float)) and number > spec["maximum"]:
            raise ValueError(f"must be at most {spec['maximum']}")
        return number
    _count(len(raw), spec.get("minLength"), spec.get("maxLength"), "characters")
    _check_format(raw, spec.get("format"))
    return raw


def _count(count: int, least: object, most: object, what: str) -> None:
    if isinstance(least, int) and count < least:
        raise ValueError(f"give at least {least} {what}")
    if isinstance(most, int) and count > most:
        raise ValueError(f"give at most {most} {what}")


def _check_format(raw: str, fmt: object) -> None:
    if fmt == "email" and ("@" not in raw or raw.startswith("@") or raw.endswith("@")):
        raise ValueError("expected an email address")
    if fmt == "uri" and not urllib.parse.urlsplit(raw).scheme:
        raise ValueError("expected a URI such as https://example.com")
    if fmt == "date":
        try:
            datetime.date.fromisoformat(raw)
        except ValueError:
            raise ValueError("expected a date such as 2026-07-28") from None
    if fmt == "date-time":
        try:
            datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("expected a date and time such as 2026-07-28T09:30:00Z") from None


_SKIP = object()
_WAITING = threading.local()  # how many questions wait behind the one being asked


def _header() -> str:
    """``[greet e294…b175] `` naming the task that asks, and how many others wait their turn."""
    who = asker()
    if who is None:
        return ""
    waiting = getattr(_WAITING, "value", 0)
    behind = f", {waiting} more waiting" if waiting else ""
    return f"[{who.label}{behind}] "


def _whose() -> dict[str, object]:
    """The `say` fields naming the task that asks (its short id, tool and arguments' short form
    when known), when one does.
    """
    who = asker()
    if who is None:
        return {}
    fields: dict[str, object] = {"task": short_id(who.task_id), "tool": who.tool}
    if who.arguments:
        fields["arguments"] = who.arguments
    return fields


def _ask_field(prompter: Prompter, name: str, spec: dict[str, Any], required: bool) -> Any:
    title = spec.get("title") or spec.get("description") or name
    has_default = "default" in spec
    if has_default:
        default = spec["default"]
        empty = f"empty for {default if isinstance(default, str) else json.dumps(default)}"
    else:
        empty = "empty to decline" if required else "empty to skip"
    while True:
        raw = prompter.ask(printable(f"  {title} [{_hint(spec)}] ({empty}): "), name).strip()
        if not raw:
            if has_default:
                return spec["default"]
            if required:
                raise _Decline
            return _SKIP
        try:
            return _convert(raw, spec)
        except ValueError as exc:
            prompter.say("retry", printable(f"  {exc}; try again"), field=name)


def ask_form(prompter: Prompter, params: dict[str, Any]) -> dict[str, Any]:
    """Answer a form elicitation by asking its fields one by one: accept with the content, or
    decline when a required field is left empty.
    """
    message = params.get("message")
    shown = printable(message, newlines=True) if isinstance(message, str) else "(no message)"
    prompter.say("input", f"{_header()}The server asks: {shown}", message=message, **_whose())
    schema = params.get("requestedSchema")
    schema = schema if isinstance(schema, dict) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    content: dict[str, Any] = {}
    try:
        for name, spec in properties.items():
            value = _ask_field(prompter, str(name), spec if isinstance(spec, dict) else {}, name in required_names)
            if value is not _SKIP:
                content[str(name)] = value
    except _Decline:
        return {"action": "decline"}
    return {"action": "accept", "content": content}


def ask_url(prompter: Prompter, params: dict[str, Any]) -> dict[str, Any]:
    """Answer a URL elicitation: show the link to open and its host, and accept once the person
    says it is done (or decline). A link `link_to_open` refuses is declined, and the person told why.
    """
    url = params.get("url")
    if not isinstance(url, str) or not url:
        raise InputError("the URL elicitation has no url to open")
    message = params.get("message")
    asks = f"The server asks: {printable(message)}\n  " if isinstance(message, str) and message else ""
    try:
        link, host = link_to_open(url)
    except ValueError as exc:
        text = f"{_header()}{asks}The server's link is not offered here: {exc}. Declined."
        prompter.say("refused", text, message=message, url=url, **_whose())
        return {"action": "decline"}
    text = f"{asks}Open this link: {link}" if asks else f"The server asks you to open this link: {link}"
    prompter.say("input", f"{_header()}{text}\n  Host: {host}", message=message, url=url, **_whose())
    while True:
        raw = prompter.ask("  Press Enter once done there, or type n to decline: ", "url").strip().lower()
        if raw in ("", *_YES):
            return {"action": "accept"}
        if raw in _NO:
            return {"action": "decline"}
        prompter.say("retry", "  answer with Enter or n; try again", field="url")


def interactive_handlers(prompter: Prompter | None = None) -> tuple[Handler, Handler]:
    """The form and URL handlers that ask `prompter` (a `TextPrompter` when None)."""
    asker: Prompter = prompter if prompter is not None else TextPrompter()

    def form(params: dict[str, Any]) -> dict[str, Any]:
        """Ask the person to fill in an elicitation form (whole, when its turn comes)."""
        with turn() as waiting:
            _WAITING.value = waiting
            return ask_form(asker, params)

    def url(params: dict[str, Any]) -> dict[str, Any]:
        """Show the person a URL elicitation's link (when its turn comes)."""
        with turn() as waiting:
            _WAITING.value = waiting
            return ask_url(asker, params)

    return form, url


ask_a_person_with(interactive_handlers)  # what InputHandlers.interactive gives
