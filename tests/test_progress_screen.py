"""Many tasks in a real terminal (a pseudo-terminal 40, 80 and 200 columns wide): the set's live
line is clipped to the width and never wraps, two tasks' questions each name their task and are
asked one after the other, and no status line overwrites a prompt.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.test_cli_screen import TAKE_TERMINAL, Screen, render

PROGRAM = Path(__file__).resolve().parent / "screen" / "many_ask.py"
PROMPT = "(empty to decline): "


class ProgramScreen(Screen):
    """`Screen`, running a script of the tests instead of the command line."""

    def __init__(self, cwd: Path, columns: int, script: Path) -> None:  # (not Screen's: no command line)
        self.columns = columns
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TAKE_TERMINAL, sys.executable, str(script)],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def expect_count(self, text: str, count: int) -> None:
        """Read until `text` has appeared `count` times."""
        while self.seen.count(text.encode()) < count:
            ready, _, _ = select.select([self.master], [], [], 60)
            try:
                chunk = os.read(self.master, 4096) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                self.proc.kill()
                self.proc.communicate()
                raise AssertionError(f"{text!r} never appeared {count} times; the terminal shows {self.seen!r}")
            self.seen += chunk


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_a_set_and_two_questions_in_a_terminal(tmp_path: Path, columns: int) -> None:
    screen = ProgramScreen(tmp_path, columns, PROGRAM)
    for round_ in (1, 2):
        screen.expect_count("The server asks: Tell me, ", round_)
        screen.expect_count("name [string] " + PROMPT, round_)
        screen.answer("Ada" if round_ == 1 else "Bob")
        screen.expect_count("age [integer] " + PROMPT, round_)
        screen.answer("36" if round_ == 1 else "41")
    code, out = screen.finish()
    assert code == 0, screen.seen
    report = json.loads(out)
    text = screen.seen.decode(errors="replace")
    # Each question names its task (tool and short id) and is asked whole before the next.
    headers = re.findall(r"\[(ask \S+…\S+)\] The server asks: Tell me, (\w+)", text)
    assert len(headers) == 2 and {who for _, who in headers} == {"first", "second"}, text
    first, second = headers[0][1], headers[1][1]
    results = {r["who"]: (r.get("name"), r.get("age")) for r in report["results"] if "who" in r}
    assert results == {first: ("Ada", 36), second: ("Bob", 41)}
    between = text[text.index(f"Tell me, {first}") : text.index(f"Tell me, {second}")]
    assert between.count("name [string]") == 1 and between.count("age [integer]") == 1
    # The live line: every redraw fits in the width less one column, and none lands on a prompt.
    for frame in text.split("\r\x1b[K")[1:]:
        assert len(frame.split("\r")[0].split("\n")[0]) <= columns - 1, frame
    shown = render(screen.seen, columns)
    assert all(len(line) <= columns for line in shown)
    prompts = [line for line in shown if PROMPT in line]
    assert [p.rsplit(PROMPT, 1)[1] for p in prompts] == ["Ada", "36", "Bob", "41"], shown
    final = shown[-1] if shown[-1] else shown[-2]
    assert final.startswith("[") and "4/5 done, 1 failed" in final, shown
    assert len([line for line in shown if "4/5 done" in line]) == 1, shown  # the last line, written once
    if columns == 200:
        assert f"failed: {report['failed']}" in final, final
    if columns == 40:
        print("\n".join(shown))  # the session, as the terminal shows it (pytest -s)
