"""The interactive input handlers: a form asked field by field after its schema, answers checked
and asked again, a URL shown as a link; on stdin/stderr, and in a notebook through the kernel's
``input()`` (faked here; tests/people/test_notebook.py drives a real kernel).
"""

from __future__ import annotations

import builtins
import io
import sys
import types
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._people._prompt import TextPrompter
from mcp_tasks.server import Server


class Scripted:
    """A prompter with queued answers; it records what it was asked and told."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, str]] = []
        self.said: list[tuple[str, str]] = []

    def ask(self, prompt: str, field: str) -> str:
        self.asked.append((prompt, field))
        if not self.answers:
            raise mt.InputError("no more answers")
        return self.answers.pop(0)

    def say(self, event: str, text: str, **fields: object) -> None:
        self.said.append((event, text))


FORM = {
    "message": "Ship it?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name", "minLength": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["small", "medium", "large"]},
            "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
            "mail": {"type": "string", "format": "email"},
            "day": {"type": "string", "format": "date"},
            "note": {"type": "string"},
        },
        "required": ["name", "count", "ok"],
    },
}


def form_handler(prompter: Scripted) -> Any:
    handler = mt.InputHandlers.interactive(prompter).form
    assert handler is not None
    return handler


def test_each_field_is_asked_after_its_schema_and_wrong_answers_are_asked_again() -> None:
    prompter = Scripted(
        "A",
        "Ada",  # too short, then fine
        "x",
        "12",
        "3",  # not a number, above the maximum, fine
        "",  # the default
        "maybe",
        "yes",
        "huge",
        "medium",  # by label
        "2",  # by number: Green
        "a, c",
        "nobody",
        "ada@example.com",
        "28/07/2026",
        "2026-07-28",
        "",  # optional, skipped
    )
    answer = form_handler(prompter)(FORM)
    assert answer == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "count": 3,
            "ratio": 0.5,
            "ok": True,
            "size": "m",
            "colour": "g",
            "tags": ["a", "c"],
            "mail": "ada@example.com",
            "day": "2026-07-28",
        },
    }
    assert prompter.said[0] == ("input", "The server asks: Ship it?")
    retries = [text for event, text in prompter.said if event == "retry"]
    assert retries == [
        "  give at least 2 characters; try again",
        "  expected a whole number; try again",
        "  must be at most 9; try again",
        "  answer y or n; try again",
        "  choose one of s (small), m (medium), l (large); try again",
        "  expected an email address; try again",
        "  expected a date such as 2026-07-28; try again",
    ]
    prompts = dict((field, prompt) for prompt, field in prompter.asked)
    assert prompts["name"] == "  Your name [string] (empty to decline): "
    assert prompts["ratio"] == "  ratio [number] (empty for 0.5): "
    assert prompts["count"] == "  count [integer, min 1, max 9] (empty to decline): "
    assert prompts["size"] == "  size [s (small)/m (medium)/l (large)] (empty to skip): "
    assert prompts["tags"] == "  tags [comma-separated: a/b/c] (empty to skip): "


def test_a_required_field_left_empty_declines_and_a_lost_input_raises() -> None:
    assert form_handler(Scripted(""))(FORM) == {"action": "decline"}
    with pytest.raises(mt.InputError, match="no more answers"):
        form_handler(Scripted("Ada"))(FORM)


def test_a_url_elicitation_is_a_link_to_open() -> None:
    prompter = Scripted("what", "")
    handler = mt.InputHandlers.interactive(prompter).url
    assert handler is not None
    params = {"mode": "url", "message": "Sign in", "url": "https://example.com/auth?x=1", "elicitationId": "e1"}
    assert handler(params) == {"action": "accept"}
    assert prompter.said[0] == (
        "input",
        "The server asks: Sign in\n  Open this link: https://example.com/auth?x=1\n  Host: example.com",
    )
    assert [text for event, text in prompter.said if event == "retry"] == ["  answer with Enter or n; try again"]
    declining = mt.InputHandlers.interactive(Scripted("n")).url
    assert declining is not None and declining(params) == {"action": "decline"}
    with pytest.raises(mt.InputError, match="no url"):
        handler({"mode": "url", "message": "x"})


def test_the_text_prompter_asks_on_stderr_and_ends_the_line_of_a_piped_answer() -> None:
    out = io.StringIO()
    prompter = TextPrompter(stdin=io.StringIO("Ada\n"), out=out)
    assert prompter.ask("  name: ", "name") == "Ada"
    assert out.getvalue() == "  name: \n"  # the answer was not echoed: the line is ended for it
    with pytest.raises(mt.InputError, match="stdin is closed"):
        prompter.ask("  again: ", "name")


def test_interactive_handlers_answer_a_task_end_to_end() -> None:
    server = Server(poll_interval=0.02)

    @server.tool(task="required")
    def greet(ctx: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = ctx.elicit("name", "What is your name?", schema)
        return {"hello": answer["content"]["name"]}

    out = io.StringIO()
    handlers = mt.InputHandlers.interactive(TextPrompter(stdin=io.StringIO("Ada\n"), out=out))
    with mt.Client.direct(server, input_handlers=handlers) as client:
        assert mt.call_and_await(client, "greet", timeout=30)["structuredContent"] == {"hello": "Ada"}
    server.close()
    assert "The server asks: What is your name?\n  name [string] (empty to decline): " in out.getvalue()


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fake kernel: IPython with a shell that has a kernel, and ``builtins.input`` replaced."""
    prompts: list[str] = []
    answers = ["Grace"]

    def kernel_input(prompt: str = "") -> str:
        prompts.append(prompt)
        return answers.pop(0)

    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(builtins, "input", kernel_input)
    return prompts


def test_in_a_notebook_the_kernel_input_is_asked(notebook: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    handler = mt.InputHandlers.interactive().form
    assert handler is not None
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    assert handler({"message": "Who?", "requestedSchema": schema}) == {"action": "accept", "content": {"name": "Grace"}}
    # The input box carries its question: a frontend may show the printed one after the box.
    assert notebook == ["Who? — name [string] (empty to decline): "]
    assert capsys.readouterr().out == "The server asks: Who?\n"  # a cell's output, not stderr


def test_in_a_notebook_a_long_question_is_cut_short_in_the_prompt(notebook: list[str]) -> None:
    handler = mt.InputHandlers.interactive().form
    assert handler is not None
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    message = "Which of the\n  servers " + "far " * 30 + "away?"
    assert handler({"message": message, "requestedSchema": schema})["action"] == "accept"
    (prompt,) = notebook
    question, field = prompt.split(" — ")
    assert question == ("Which of the servers " + "far " * 30)[:59] + "…" and field == "name [string] (empty to skip): "
