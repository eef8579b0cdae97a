"""The stdio server's process, for `StdioTransport`: started in a session of its own (POSIX), so
the caller's Ctrl-C does not reach it (a task it runs goes on), and ended with its whole process
group (wrappers such as ``sh -c``, npx or uvx and the grandchildren they start).

A module of its own because starting and ending a process group is a job apart from talking over
its pipes (`transports._stdio_connection`), and the one place that tells POSIX from Windows.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO, Any

from mcp_tasks._errors import TransportError

__all__ = ["EXIT_GRACE", "exit_code", "exited", "signal_group", "spawn"]

EXIT_GRACE = 2.0
"""Seconds a server is given to exit, by default, before the next step of its end."""

_POSIX = os.name == "posix"


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    stderr: IO[Any] | int | None,
) -> subprocess.Popen[bytes]:
    """Start the server with pipes for stdin and stdout (and stderr, unless `stderr` says where it
    goes), in a process group of its own; a `TransportError` when it cannot start.
    """
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr is None else stderr,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=_POSIX,
            creationflags=0 if _POSIX else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
    except OSError as exc:
        raise TransportError(f"cannot start the server {argv[0]!r}: {exc}", cause=exc) from exc


def exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    """The server's exit code, waited for `EXIT_GRACE` at most; None when it has not exited."""
    try:
        return proc.wait(EXIT_GRACE)
    except subprocess.TimeoutExpired:
        return None


def exited(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Whether the server exited within `timeout` (None: as long as it takes)."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Send `signum` to the server's whole process group (to the server alone off POSIX)."""
    try:
        if _POSIX:
            os.killpg(proc.pid, signum)
        elif proc.poll() is None:
            if signum == signal.SIGTERM:
                proc.terminate()
            else:
                proc.kill()
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in the group
