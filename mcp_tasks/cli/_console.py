"""What the command writes: the result on stdout (JSON), everything else on stderr: events and
status lines for a person (a live line on a terminal), or JSON lines with ``--json``; and the
prompts, read from stdin.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mcp_tasks._errors import InputError
from mcp_tasks._people._display import StatusDisplay
from mcp_tasks._people._prompt import read_answer
from mcp_tasks._printable import json_text, printable
from mcp_tasks._status import Status
from mcp_tasks.cli._keys import EscKey

__all__ = ["Console"]


class Console:
    """Everything the command writes: results on stdout, the rest on stderr (JSON lines with --json)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self.started = time.monotonic()
        self.display = StatusDisplay(sys.stderr)
        self.keys = EscKey(sys.stdin)  # Esc during a live wait (`_detach`)

    def result(self, value: Any) -> None:
        self.display.suspend()
        sys.stdout.write(json_text(value, indent=None if self.json else 2) + "\n")
        sys.stdout.flush()

    def event(self, event: str, text: str, **fields: Any) -> None:
        self.display.suspend()
        if self.json:
            line = {"event": event, **fields}
            sys.stderr.write(json_text(line) + "\n")
        else:
            sys.stderr.write(printable(text, newlines=True) + "\n")
        sys.stderr.flush()

    def status(self, status: Status) -> None:
        if self.json:
            fields = {"status": status.wire_status, "elapsed": round(time.monotonic() - self.started, 3)}
            if status.status_message:
                fields["statusMessage"] = status.status_message
            sys.stderr.write(json_text({"event": "status", **fields}) + "\n")
            sys.stderr.flush()
        else:
            self.display(status)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The task's progress (from the client's progress thread): a bar on the live line, a
        line on a pipe, a ``progress`` event with ``--json``.
        """
        if not self.json:
            self.display.progress(progress, total, message)
            return
        fields: dict[str, Any] = {"progress": progress, "total": total, "message": message}
        line = {"event": "progress", **{k: v for k, v in fields.items() if v is not None}}
        sys.stderr.write(json_text(line) + "\n")
        sys.stderr.flush()

    def say(self, event: str, text: str, **fields: object) -> None:
        """The `Prompter` side of `event`: what the interactive input handlers tell the person."""
        self.event(event, text, **fields)

    def ask(self, prompt: str, field: str) -> str:
        """One line from stdin, the prompt on stderr (so stdout stays the result alone)."""
        self.display.suspend()
        if not self.json:
            with self.keys.paused():  # the answer is typed as usual, none of it taken for Esc
                return read_answer(printable(prompt), sys.stdin, sys.stderr)
        sys.stderr.write(json_text({"event": "prompt", "field": field, "prompt": prompt.strip()}) + "\n")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise InputError("no answer: stdin is closed")
        return line.rstrip("\r\n")

    def close(self) -> None:
        self.display.close()
