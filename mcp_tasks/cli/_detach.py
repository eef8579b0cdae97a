"""Leaving a task running: ``call --detach`` and Esc during a live wait print the task's id (in
full on stdout, for a script) and the commands that follow or cancel it (on stderr), and exit 0.
The same commands are the hint printed when a task is created, interrupted or timed out.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from mcp_tasks._printable import printable
from mcp_tasks.cli._console import Console
from mcp_tasks.cli._target import kind_of
from mcp_tasks.cli._text import tied_to_command

__all__ = ["esc_detaches", "leave", "resume_hint"]


def resume_hint(args: argparse.Namespace, state: dict[str, str]) -> str:
    """``Resume with: mcp-tasks wait TARGET ID   (or: mcp-tasks cancel TARGET ID)``, or why a
    task of a server that lives in the command cannot be resumed.
    """
    kind = kind_of(args.target)
    if kind != "http":
        return f"It cannot be resumed: {tied_to_command(kind)}."
    target, task = shlex.quote(args.target), shlex.quote(state.get("task_id", "?"))
    # A 2025-era server may keep the task for its session only: the hint joins that session.
    session = state.get("session") or getattr(args, "session", None)
    options = f"--session {shlex.quote(session)}" if session else ""
    # An id that starts with "-" goes last, after "--", so that it is not taken for an option.
    dashed = task.startswith("-")
    where = f"{options} {target} -- {task}".lstrip() if dashed else f"{target} {task} {options}".rstrip()
    return f"Resume with: mcp-tasks wait {where}   (or: mcp-tasks cancel {where})"


def esc_detaches(args: argparse.Namespace, console: Console) -> AbstractContextManager[None]:
    """Where Esc detaches the wait: a live line on a terminal (no --json), stdin a terminal, and
    an http(s) target (elsewhere the task stops with the command: there is nothing to leave).
    """
    if console.json or kind_of(args.target) != "http" or not _isatty(sys.stderr):
        return nullcontext()
    return console.keys.watching()


def leave(args: argparse.Namespace, console: Console, state: dict[str, str], event: str, text: str) -> None:
    """Say `text` (the `event` with --json) and how to follow or cancel the task on stderr; its
    whole id on stdout.
    """
    task_id = state["task_id"]
    fields: dict[str, Any] = {"taskId": task_id}
    if state.get("session"):
        fields["sessionId"] = state["session"]
    console.event(event, f"{text}\n{resume_hint(args, state)}", **fields)
    sys.stdout.write(printable(task_id) + "\n")  # a hostile id cannot drive the terminal
    sys.stdout.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
