"""The mcp-tasks help, wrapped to the terminal: paragraphs refilled to its width (``$COLUMNS``, else
the terminal's, else 80), two-column tables (``TARGET is one of:``, the exit codes) kept as tables
with their descriptions wrapped under their own column, no word ever broken, and the usage line
with the positional arguments first and the options after them as ``[options]``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import textwrap
from collections.abc import Iterable
from typing import Any

__all__ = ["HelpFormatter", "fill", "terminal_width"]

MIN_WIDTH = 30
"""Narrower than this and the help is laid out as if the terminal were this wide."""

# A table row: indentation, a term, two spaces or more, its description.
_ROW = re.compile(r"^(?P<indent> +)(?P<term>\S(?:\S| (?! ))*)(?P<gap>  +)(?P<text>\S.*)$")


def terminal_width() -> int:
    """The width to lay the help out in: ``$COLUMNS``, else the terminal's, else 80 (less the
    margin argparse keeps), never under `MIN_WIDTH`.
    """
    return max(shutil.get_terminal_size().columns - 2, MIN_WIDTH)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        max(width, 1),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _rows(lines: list[str]) -> list[tuple[str, str, int, str]] | None:
    """The block's lines as table rows (indent, term, description column, description), the
    lines indented to a row's description column continuing it; None when the block is not a
    table.
    """
    rows: list[tuple[str, str, int, str]] = []
    for line in lines:
        match = _ROW.match(line)
        if rows and (match is None or len(match["indent"]) >= rows[-1][2]):
            indent, term, column, text = rows[-1]
            if len(line) - len(line.lstrip()) < len(indent):
                return None
            rows[-1] = (indent, term, column, f"{text} {line.strip()}")
            continue
        if match is None:
            return None
        rows.append((match["indent"], match["term"], match.end("gap"), match["text"]))
    return rows


def _table(rows: Iterable[tuple[str, str, int, str]], width: int) -> list[str]:
    out: list[str] = []
    for indent, term, column, text in rows:
        head = f"{indent}{term}"
        if width - column >= 20:
            out.extend(_wrap(text, width, head.ljust(column), " " * column))
        else:  # too narrow for two columns: the description goes under its term
            deeper = indent + "    "
            out.append(head)
            out.extend(_wrap(text, width, deeper, deeper))
    return out


def fill(text: str, width: int) -> str:
    """`text` laid out in `width` columns: each paragraph (lines separated by a blank line) that
    starts unindented is refilled, a line ending in ``:`` is a heading kept on its own line, and
    an indented block is a two-column table (or kept as it is, when it is not one).
    """
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        lines = block.splitlines()
        if out:
            out.append("")
        if lines and not lines[0].startswith(" ") and lines[0].endswith(":") and len(lines) > 1:
            out.append(lines.pop(0))
        if not lines:
            continue
        if lines[0].startswith(" "):
            rows = _rows(lines)
            out.extend(_table(rows, width) if rows is not None else lines)
        else:
            out.extend(_wrap(" ".join(line.strip() for line in lines), width, "", ""))
    return "\n".join(out)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter laid out to the terminal's width, words never broken, descriptions and
    epilogs refilled by `fill`, and the usage ``PROG POSITIONALS [options]``.
    """

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        width = terminal_width() if width is None else width
        super().__init__(prog, indent_increment, min(max_help_position, max(width // 3, 12)), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.indent(fill(text, width - len(indent)), indent)

    def start_section(self, heading: str | None) -> None:
        if heading is not None:  # a long group title is wrapped too (argparse adds its ":")
            heading = "\n".join(_wrap(heading, self._width - 1 - self._current_indent, "", "  "))
        super().start_section(heading)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return _wrap(" ".join(text.split()), width, "", "")

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[Any],
        prefix: str | None = None,
    ) -> None:
        if usage is None:
            listed = list(actions)
            words = [_usage_word(a) for a in listed if not a.option_strings]
            if any(a.option_strings for a in listed):  # after the arguments, before a command's
                commands = any(a.nargs == argparse.PARSER for a in listed)
                words.insert(0, "[options]") if commands else words.append("[options]")
            usage = " ".join([self._prog, *words])
        else:
            usage = usage % {"prog": self._prog}
        width = self._width - len("usage: ")
        usage = "\n".join(_wrap(usage, width, "", " " * (len(self._prog) + 1)))
        usage = usage.replace("\n", "\n" + " " * len("usage: "))
        super().add_usage(usage, actions, groups, prefix)


def _usage_word(action: argparse.Action) -> str:
    """A positional argument as the usage line shows it: ``TARGET``, ``[ARGUMENTS]``, ``COMMAND ...``."""
    name = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if action.nargs == "?":
        return f"[{name}]"
    if action.nargs == argparse.PARSER:
        return f"{name} ..."
    return name
