"""The ``mcp-tasks`` command: `main` and the exit codes a script can rely on.

`main` parses the command line before it loads the client, so ``mcp-tasks --help`` (and a usage
error) costs the parser alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks.cli._codes import (
    EXIT_CANCELLED,
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_TASK,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
)
from mcp_tasks.cli._parser import build_parser

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_NO_TASK",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "main",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see ``mcp-tasks --help``)."""
    args = build_parser().parse_args(argv)
    from mcp_tasks.cli._main import run  # the client and the rest, once there is a command to run

    return run(args)
