"""A server's text cannot trick the person who reads it: hostile elicitations (an OSC 8 hyperlink
whose text names another host, CSI sequences that erase what was shown, an OSC 0 title, the 8-bit
C1 controls, bidirectional overrides) reach a real terminal as visible escapes, through the
prompter the interactive handlers use and through the ``mcp-tasks`` command in a pseudo-terminal.
A URL to open is shown with its host on a line of its own, and only when it is https (or http to
this machine); any other is declined, and the person told why.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import termios
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._people._display import StatusDisplay, clip, status_line
from mcp_tasks._people._prompt import TextPrompter
from mcp_tasks._printable import json_text, link_to_open, printable
from mcp_tasks._status import Status
from tests.cli.test_commands import Terminal

ESC = "\x1b"
OSC8 = f"{ESC}]8;;https://evil.example/steal{ESC}\\https://accounts.example.com/consent{ESC}]8;;{ESC}\\"
CSI_ERASE = f"{ESC}[1A{ESC}[2K{ESC}[2J"
OSC0 = f"{ESC}]0;sudo password accepted\x07"
C1 = "\x9b2J\x9d0;title\x9c\x85"  # the 8-bit CSI, OSC, ST and NEL
BIDI = "\u202etxt.exe\u202c \u202a\u202b\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c"
HOSTILE = f"Sign in at {OSC8} {CSI_ERASE}{OSC0}{C1}{BIDI}"


def assert_inert(raw: bytes) -> None:
    """`raw` (what reached a terminal) holds no control but line ends (no ESC, BEL, C1 control:
    no escape sequence at all) and no bidirectional formatting character.
    """
    text = raw.decode()  # valid UTF-8: no raw 8-bit C1 byte either
    assert not [ch for ch in text if (ord(ch) < 0x20 and ch not in "\r\n") or 0x7F <= ord(ch) <= 0x9F], text
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C):
        assert chr(code) not in text, (hex(code), text)


FORM: dict[str, Any] = {
    "mode": "form",
    "message": f"{HOSTILE}\nsecond line {ESC}[2K",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "size": {
                "type": "string",
                "title": f"Size {CSI_ERASE}",
                "enum": ["s", "l"],
                "enumNames": [f"small {OSC0}", f"large {C1}\u202e"],
            },
            "note": {"type": "string", "description": f"note {OSC8}", "default": f"d{ESC}[8m"},
            "count": {"type": "integer", "minimum": f"1{ESC}[2J"},
        },
        "required": ["size"],
    },
}


class PtyOut:
    """A text stream onto a real pseudo-terminal: what the prompter writes, as the terminal gets it."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        # No output processing: the bytes read back are the bytes written.
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        self.stream = io.TextIOWrapper(os.fdopen(slave, "wb", buffering=0), encoding="utf-8", write_through=True)
        self.seen = b""

    def read(self) -> bytes:
        while select.select([self.master], [], [], 0)[0]:
            self.seen += os.read(self.master, 65536)
        return self.seen

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[PtyOut]:
    out = PtyOut()
    yield out
    out.close()


def test_a_hostile_form_reaches_the_terminal_as_visible_escapes(terminal: PtyOut) -> None:
    answers = io.StringIO("x\n2\n\n7\n")  # a bad number, then the large size by number; the default; 7
    handler = mt.InputHandlers.interactive(TextPrompter(stdin=answers, out=terminal.stream)).form
    assert handler is not None
    assert handler(FORM) == {"action": "accept", "content": {"size": "l", "note": f"d{ESC}[8m", "count": 7}}
    raw = terminal.read()
    assert_inert(raw)
    shown = raw.decode()
    # Each trick is there to see, as the escapes Python writes for it.
    assert r"\x1b]8;;https://evil.example/steal\x1b\https://accounts.example.com/consent" in shown
    assert r"\x1b[1A\x1b[2K\x1b[2J" in shown
    assert r"\x1b]0;sudo password accepted\x07" in shown
    assert r"\x9b2J\x9d0;title\x9c\x85" in shown
    assert r"\u202etxt.exe\u202c \u202a\u202b\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c" in shown
    assert "\nsecond line \\x1b[2K\n" in shown  # the message's own line break stays one
    assert r"  Size \x1b[1A\x1b[2K\x1b[2J [s (small \x1b]0;sudo password accepted\x07)/l (large" in shown
    assert r"(empty for d\x1b[8m)" in shown
    assert r"min 1\x1b[2J" in shown
    assert r"choose one of s (small \x1b]0;" in shown  # the retry message quotes the labels


def test_a_url_is_shown_with_its_host_on_a_line_of_its_own(terminal: PtyOut) -> None:
    handler = mt.InputHandlers.interactive(TextPrompter(stdin=io.StringIO("\n"), out=terminal.stream)).url
    assert handler is not None
    url = "https://accounts.example.com/consent?state=abc"
    assert handler({"mode": "url", "message": HOSTILE, "url": url, "elicitationId": "e"}) == {"action": "accept"}
    raw = terminal.read()
    assert_inert(raw)
    lines = raw.decode().split("\n")
    assert lines[0].startswith("The server asks: Sign in at \\x1b]8;;https://evil.example/steal")
    assert lines[1] == f"  Open this link: {url}"
    assert lines[2] == "  Host: accounts.example.com"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (f"https://accounts.example.com/{ESC}]8;;https://evil.example{ESC}\\", "control, space or invisible"),
        ("https://accounts.example.com/\u202emoc.live", "control, space or invisible"),
        ("https://accounts.example.com/a b", "control, space or invisible"),
        ("https://accounts.example.com\\@evil.example/", "backslash"),
        ("https://accounts.example.com@evil.example/", "user name before its host"),
        ("http://accounts.example.com/consent", "plain http to another machine"),
        ("javascript:alert(1)", "not an https link"),
        ("file:///etc/passwd", "not an https link"),
        ("https:///consent", "names no host"),
        ("https://accounts.example.com:99999/", "port"),
        ("https://%65vil.example/", "not a host name"),
        ("https://evil.example\uff0ecom/", "not a host name"),
    ],
)
def test_any_other_url_is_declined_and_the_person_told_why(terminal: PtyOut, url: str, why: str) -> None:
    handler = mt.InputHandlers.interactive(TextPrompter(stdin=io.StringIO(""), out=terminal.stream)).url
    assert handler is not None
    assert handler({"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e"}) == {"action": "decline"}
    raw = terminal.read()
    assert_inert(raw)
    shown = raw.decode()
    assert "The server's link is not offered here: " in shown and why in shown, shown
    assert "Open this link" not in shown


def test_links_that_are_offered() -> None:
    assert link_to_open("https://a.example/x?y=1") == ("https://a.example/x?y=1", "a.example")
    assert link_to_open("HTTPS://A.example:8443/") == ("HTTPS://A.example:8443/", "a.example:8443")
    assert link_to_open("http://127.0.0.1:8080/cb")[1] == "127.0.0.1:8080"
    assert link_to_open("http://localhost/cb")[1] == "localhost"
    assert link_to_open("http://[::1]:9/cb")[1] == "[::1]:9"
    assert link_to_open("https://bücher.example/")[1] == "bücher.example (xn--bcher-kva.example)"


def test_printable_and_json_text() -> None:
    assert printable("plain text, ünïcödé, 中文, emoji 👩‍👩‍👧 🏴󠁧󠁢󠁳󠁣󠁴󠁿") == "plain text, ünïcödé, 中文, emoji 👩‍👩‍👧 🏴󠁧󠁢󠁳󠁣󠁴󠁿"
    assert printable("a\tb\r\nc\x7f\u2028\ufeff\u200b\ud800") == r"a\tb\r\nc\x7f\u2028\ufeff\u200b\ud800"
    assert printable("a\r\nb\nc\rd", newlines=True) == "a\nb\nc\\rd"
    assert printable(r"C:\x1b\path") == r"C:\x1b\path"  # backslashes are left as they are
    value = {"text": f"{HOSTILE}\ud800 🏴󠁧󠁢󠁳󠁣󠁴󠁿", "n": [1, None]}
    for indent in (None, 2):
        encoded = json_text(value, indent=indent)
        assert_inert(encoded.encode())
        assert json.loads(encoded) == value  # the same value, every character


def _status(message: str) -> Status:
    return Status.from_map({"taskId": "t-1", "status": "working", "statusMessage": message})


def test_the_status_line_shows_escapes_on_a_terminal_and_in_a_pipe(terminal: PtyOut) -> None:
    status = _status(HOSTILE)
    assert_inert(status_line(status).encode())
    assert_inert(clip(status_line(status), 500).encode())
    piped = io.StringIO()
    StatusDisplay(piped)(status)
    assert_inert(piped.getvalue().encode())
    with StatusDisplay(terminal.stream, tick=0) as live:
        live(status)
    raw = terminal.read()
    # The line's own controls (carriage return, erase to the end of the line) and nothing else.
    assert_inert(raw.replace(b"\r\x1b[K", b""))
    assert rb"working: Sign in at \x1b]8;;https://evil.example/steal\x1b" in raw


SERVER_MODULE = textwrap.dedent(
    f"""
    from mcp_tasks.server import Server

    server = Server(poll_interval=0.05)
    FORM = {json.dumps(FORM)}
    URL = {{"mode": "url", "message": {json.dumps(HOSTILE)}, "elicitationId": "e1",
            "url": "https://accounts.example.com/consent"}}
    BAD_URL = {{"mode": "url", "message": "Sign in", "elicitationId": "e2",
               "url": {json.dumps(OSC8)}}}

    @server.tool(task="optional")
    def hostile(ctx) -> dict:
        form = ctx.ask("form", {{"method": "elicitation/create", "params": FORM}})
        url = ctx.ask("url", {{"method": "elicitation/create", "params": URL}})
        bad = ctx.ask("bad", {{"method": "elicitation/create", "params": BAD_URL}})
        return {{"form": form["action"], "url": url["action"], "bad": bad["action"],
                 "text": {json.dumps(HOSTILE)}}}

    @server.tool(description={json.dumps("lists " + CSI_ERASE + OSC0 + BIDI)})
    def listed(ctx) -> dict:
        return {{}}
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hostile_server.py").write_text(SERVER_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_command_shows_a_hostile_server_as_escapes_at_the_terminal(project: Path) -> None:
    term = Terminal(project, "call", "hostile_server:server", "hostile")
    term.expect("[s (small ")
    term.send(b"l\r")
    term.expect("(empty for d")
    term.send(b"\r")
    term.expect("count [integer")
    term.send(b"3\r")
    term.expect("  Host: accounts.example.com")
    term.send(b"\r")
    code, out, _ = term.finish()
    assert code == cli.EXIT_OK, term.seen
    result = json.loads(out)["structuredContent"]
    assert result == {"form": "accept", "url": "accept", "bad": "decline", "text": HOSTILE}
    assert_inert(out.encode())  # the result on stdout is JSON whose escapes decode to the server's text
    shown = term.seen.replace(b"\r\x1b[K", b"")  # the status line's own controls
    assert_inert(shown)
    text = shown.decode()
    assert r"Sign in at \x1b]8;;https://evil.example/steal\x1b\https://accounts.example.com/consent" in text
    assert "The server's link is not offered here: it holds control, space or invisible characters" in text


def test_the_tools_listing_shows_a_hostile_description_as_escapes(project: Path) -> None:
    term = Terminal(project, "tools", "hostile_server:server")
    code, out, _ = term.finish()
    assert code == cli.EXIT_OK, term.seen
    assert_inert(out.encode())
    assert r"lists \x1b[1A\x1b[2K\x1b[2J\x1b]0;sudo password accepted\x07\u202etxt.exe" in out
