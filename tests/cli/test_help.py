"""``mcp-tasks --help`` as a person reads it at 40, 80, 120 and 200 columns, in a real pseudo-terminal of
that width: every line fits, no word is broken across lines, the usage line puts the positional
arguments first, and the authorization options come in their own groups, after the others.
"""

from __future__ import annotations

import fcntl
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

from mcp_tasks.cli._help import fill

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = [40, 80, 120, 200]
COMMANDS = [[], ["call"], ["wait"], ["get"], ["cancel"], ["tools"], ["tasks"], ["adopt"], ["demo"]]


def help_at(columns: int, *command: str, env_columns: str | None = None) -> str:
    """The help of `command` as the command writes it to a terminal `columns` wide (its stdout)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
    env["PYTHONPATH"] = str(ROOT)
    if env_columns is not None:
        env["COLUMNS"] = env_columns
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_tasks", *command, "--help"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"the help never ended; the terminal shows {seen!r}")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the command has gone and closed the terminal
            chunk = b""
        if not chunk:
            break
        seen += chunk
    os.close(master)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return seen.decode().replace("\r\n", "\n")


def words(text: str) -> list[str]:
    return text.split()


class Helps(dict[tuple[int, str], str]):
    """Each help is read the first time a test asks for it, so a test's timeout covers its own reads only."""

    def __missing__(self, key: tuple[int, str]) -> str:
        columns, command = key
        self[key] = help_at(columns, *command.split())
        return self[key]


@pytest.fixture(scope="module")
def helps() -> dict[tuple[int, str], str]:
    return Helps()


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("command", [" ".join(c) for c in COMMANDS])
def test_the_help_fits_the_terminal_and_breaks_no_word(
    helps: dict[tuple[int, str], str], columns: int, command: str
) -> None:
    text = helps[(columns, command)]
    too_long = [line for line in text.splitlines() if len(line) > columns]
    assert too_long == [], too_long
    # The same words at every width: a word broken across two lines would differ ("--client-").
    assert words(text) == words(helps[(200, command)])
    if columns == 40:
        assert max(len(line) for line in text.splitlines()) > 30  # laid out to the width, not to 80
    if columns == 200 and command == "call":
        assert any(len(line) > 100 for line in text.splitlines())  # a paragraph takes the width given


@pytest.mark.parametrize("columns", WIDTHS)
def test_call_help_puts_the_arguments_first_and_authorization_apart(
    helps: dict[tuple[int, str], str], columns: int
) -> None:
    text = helps[(columns, "call")]
    usage = " ".join(text.split("\n\n", 1)[0].split())
    assert usage == "usage: mcp-tasks call TARGET TOOL [ARGUMENTS] [options]"
    lines = text.splitlines()
    sections = [  # a long group title may wrap: its first line starts the section
        line for line in lines if line and not line.startswith(" ") and (line.endswith(":") or "OAuth" in line)
    ]
    order = [s for s in sections if s in ("positional arguments:", "options:") or s.startswith("authorization")]
    assert order[:2] == ["positional arguments:", "options:"], sections
    assert all(s.startswith("authorization") for s in order[2:]) and len(order) == 4, sections
    options = text[text.index("\noptions:") : text.index("\nauthorization")]
    assert "--timeout" in options and "--store" in options and "--trace" in options
    assert "--oauth" not in options and "--client-id" not in options and "--private-key" not in options
    oauth = text[text.index("\nauthorization") :]
    assert "--oauth" in oauth and "--client-secret-file" in oauth and "--dpop" in oauth
    assert "{authorization_code" not in text  # the grant's choices are listed in its help, not as a metavar
    if columns == 40:
        print(text)  # as the terminal shows it (pytest -s)


def test_the_top_level_usage_and_the_tables_keep_their_shape(helps: dict[tuple[int, str], str]) -> None:
    assert helps[(80, "")].startswith("usage: mcp-tasks [options] COMMAND ...\n")
    for columns in WIDTHS:
        usage = " ".join(helps[(columns, "wait")].split("\n\n", 1)[0].split())
        assert usage == "usage: mcp-tasks wait [TARGET] TASK_ID [options]"
        adopt = helps[(columns, "adopt")]
        assert " ".join(adopt.split("\n\n", 1)[0].split()) == "usage: mcp-tasks adopt [options]"
        assert "\nauthorization: OAuth" in adopt and "--client-secret-file" in adopt  # in their own section
    wide = helps[(200, "call")]
    assert "  http://host:port/mcp   a Streamable HTTP server\n" in wide
    assert re.search(r"\n  8 +no such task: the server does not know the task id \(expired, mistyped,", wide)
    narrow = helps[(40, "call")]
    assert "\n  http://host:port/mcp\n      a Streamable HTTP server\n" in narrow  # too narrow for two columns
    assert "\n  130  interrupted (Ctrl-C)\n" in narrow


def test_adopt_help_offers_the_worker_that_runs_for_ever(helps: dict[tuple[int, str], str]) -> None:
    shown = " ".join(words(helps[(200, "adopt")]))
    assert "--forever" in shown and "keep claiming until Ctrl-C or SIGTERM" in shown
    assert "on Ctrl-C or SIGTERM frees the leases it holds for another worker" in shown


def test_columns_in_the_environment_sets_the_width() -> None:
    text = help_at(200, "call", env_columns="50")
    assert max(len(line) for line in text.splitlines()) <= 50


def test_fill_wraps_paragraphs_and_tables_without_breaking_words() -> None:
    text = (
        "A paragraph that goes on for a while, with a-hyphenated-word and https://example.com/a/long/path.\n\n"
        "heading:\n"
        "  term     its description, which is long enough to wrap\n"
        "           and continues here\n"
        "  other    short\n"
    )
    out = fill(text, 40)
    assert words(out) == words(text)
    assert (
        "heading:\n  term     its description, which is\n"
        "           long enough to wrap and\n           continues here\n"
    ) in out
    assert all(len(line) <= 40 for line in out.splitlines())
    assert "  other    short" in out
    narrow = fill(text, 28)  # too narrow for two columns: each description under its term
    assert words(narrow) == words(text)
    assert "\n  other\n      short" in narrow
    assert all(len(line) <= 28 or " " not in line.strip() for line in narrow.splitlines())
