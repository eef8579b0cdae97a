"""The README's examples run, the demo tells its story, the command line works."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_tasks as mt
import mcp_tasks.server
from mcp_tasks import cli
from mcp_tasks._demo import run_demo
from tests.conftest import ROOT, STDIO_SERVER

README = (ROOT / "README.md").read_text()


BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
PRINTS = {
    "## Calling a tool": [],
    "## Outcomes": ["200 working", "cancelled"],
    "## Waiting": ["['working', 'completed']"],
    "## Many tasks from a web app": ["40 {'hello': 'user7'}"],
    "## Many tasks": ["20 exported", "6/6 done", "[0, 1, 2]"],
    "## Input the server asks for": ["Delete /tmp/x?"],
    "## Asking a person": ["{'hello': 'Ada'}"],
    "## Transports": ["{'report': 'stdio', 'exported': 2}", "{'report': 'http'}"],
    "## Authorization": [],
    "## Legacy servers": [
        "2026-07-28 modern\n{'report': 'modern', 'exported': 2}",
        "2025-11-25 legacy\n{'report': 'legacy', 'exported': 2}",
    ],
    "## Resuming: the task store": ["square working\n{'n': 7}"],
    "## Resuming by id": ["{'n': 7}"],
    "## Use it from Flask": ["{'hello': 'Ada'}"],
    "## Use it in Jupyter": ["{'loss': 0.1}"],
    "## Tracing": ["tools/call export (SERVER)\ntools/call export (CLIENT)", "task export (INTERNAL)"],
}


STDIN = {"## Asking a person": "Ada\n"}
"""What a person types for a section's example (every other example gets a closed stdin)."""


def _section(block: str) -> str:
    before = README[: README.index(block)]
    return before[before.rindex("\n## ") + 1 :].split("\n", 1)[0]


def test_every_section_with_an_example_is_checked() -> None:
    assert len(BLOCKS) == len(PRINTS)
    for block in BLOCKS:
        assert any(_section(block).startswith(title) for title in PRINTS), _section(block)


@pytest.mark.parametrize("block", BLOCKS, ids=[_section(b)[3:20] for b in BLOCKS])
def test_each_readme_example_runs_alone_from_any_directory(block: str, tmp_path: Path) -> None:
    """Each block in a fresh interpreter, in an empty directory: nothing from the others, nor the repo."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    typed = next((text for title, text in STDIN.items() if _section(block).startswith(title)), "")
    done = subprocess.run(
        [sys.executable, "-c", block], input=typed, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    expected = next(prints for title, prints in PRINTS.items() if _section(block).startswith(title))
    for text in expected:
        assert text in done.stdout


def test_the_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quick, re.S)[0].strip().splitlines()
    assert [c.split("#")[0].strip() for c in commands] == ["python3 .ci/dev.py demo", "python3 .ci/dev.py test"]


@pytest.mark.parametrize("transport", ["direct", "stdio", "http"])
def test_the_demo_tells_its_story(transport: str) -> None:
    out = io.StringIO()
    result = run_demo(transport, out)
    text = out.getvalue()
    assert result["structuredContent"] == {"report": "sales", "exported": 3, "file": "sales.csv"}
    for step in ("1. Started", "2. Does the server support", "3. Calling export", "4. Waiting", "5. The result"):
        assert step in text
    assert "the server asks" in text
    assert "exporting row 3 of 3" in text
    assert "- completed" in text


def test_the_demo_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", "demo"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "5. The result" in done.stdout


def test_cli_call_get_cancel(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_TEST_SERVER", "{}")
    target = " ".join([sys.executable, *STDIO_SERVER])
    monkeypatch.chdir(ROOT)
    assert cli.main(["call", target, "slow_compute", '{"label": "cli"}', "--timeout", "10"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["structuredContent"] == {"label": "cli", "computed": True}
    assert "working" in out.err
    assert cli.main(["call", target, "failing_job"]) == cli.EXIT_TOOL_ERROR
    assert cli.main(["get", target, "no-such-task"]) == cli.EXIT_NO_TASK
    assert "-32602" in capsys.readouterr().err
    assert cli.main(["call", target, "greet", "not json"]) == cli.EXIT_USAGE


def test_cli_prompts_for_a_form(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    server = mcp_tasks.server.Server(poll_interval=0.01)

    @server.tool(task="optional")
    def confirm(ctx: mcp_tasks.server.ToolContext) -> dict[str, object]:
        return {"answer": ctx.elicit("c", "Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})}

    monkeypatch.setattr(sys.modules[__name__], "PROMPT_SERVER", server, raising=False)
    assert cli.main(["call", f"{__name__}:PROMPT_SERVER", "confirm"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["structuredContent"] == {"answer": {"action": "accept", "content": {"ok": True}}}
    assert "The server asks: Sure?" in out.err
    server.close()


def test_every_public_name_has_a_docstring() -> None:
    for module in (mt, mcp_tasks.server):
        for name in module.__all__:
            if name in ("__version__", "UNSET"):
                continue
            assert getattr(module, name).__doc__, f"{module.__name__}.{name} has no docstring"


def test_every_package_directory_is_a_package() -> None:
    """setup.cfg finds packages by their __init__.py: a folder without one would be left out."""
    for folder in (ROOT / "mcp_tasks").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py")):
            assert (folder / "__init__.py").exists(), folder
