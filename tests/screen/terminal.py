"""A program on a real terminal (a pseudo-terminal of a given width) as a person sees it: `Screen`
runs it and reads the terminal, `render` shows what a terminal that wide displays after it.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.conftest import ROOT

# Makes the pseudo-terminal (the child's stderr) its controlling terminal, then runs the command.
TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(2, termios.TIOCSCTTY, 0); os.execv(sys.executable, sys.argv[1:])"
)


class Screen:
    """A Python program (`command`: what follows ``python``) in `cwd`, its stderr on a
    pseudo-terminal `columns` wide that is its controlling terminal; stdin the terminal too, or a
    pipe (`piped`); stdout a pipe. It runs this tree's mcp_tasks, with no $COLUMNS.
    """

    def __init__(self, cwd: Path, columns: int, *command: str, piped: bool = False) -> None:
        self.columns = columns
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
        env["PYTHONPATH"] = str(ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TAKE_TERMINAL, sys.executable, *command],
            stdin=subprocess.PIPE if piped else slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def expect(self, text: str, count: int = 1) -> None:
        """Read the terminal until `text` has appeared (`count` times)."""
        while self.seen.count(text.encode()) < count:
            ready, _, _ = select.select([self.master], [], [], 60)
            try:
                chunk = os.read(self.master, 4096) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                self.proc.kill()
                self.proc.communicate()
                times = f" {count} times" if count != 1 else ""
                raise AssertionError(f"{text!r} never appeared{times}; the terminal shows {self.seen!r}")
            self.seen += chunk

    def answer(self, text: str) -> None:
        """Type `text` and Enter on the terminal, or write its line to the piped stdin."""
        if self.proc.stdin is not None:
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()
        else:
            os.write(self.master, text.encode() + b"\r")

    def finish(self) -> tuple[int, str]:
        """Close the piped stdin, wait for the program, read what is left on the terminal; the
        exit code and stdout."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
            self.proc.stdin = None
        out, _ = self.proc.communicate(timeout=60)
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk
        os.close(self.master)
        return self.proc.returncode, out.decode()


def render(raw: bytes, columns: int) -> list[str]:
    """What a terminal `columns` wide shows after `raw`: carriage return, line feed, erase to the
    end of the line, and wrapping at the last column (the only controls the command uses)."""
    lines, row, col = [""], 0, 0
    text = raw.decode(errors="replace").replace("\x1b[K", "\x00")
    for ch in text:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif ch == "\x00":
            lines[row] = lines[row][:col]
        else:
            if col == columns:  # a character past the last column wraps
                row, col = row + 1, 0
                if row == len(lines):
                    lines.append("")
            line = lines[row].ljust(col)
            lines[row] = line[:col] + ch + line[col + 1 :]
            col += 1
    return lines
