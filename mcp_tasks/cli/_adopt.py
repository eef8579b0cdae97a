"""``mcp-tasks adopt``: a fleet worker on the command line. It claims the store's tasks that
nobody follows (`adopt`), follows them to their ends and writes one line per task as it ends.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from mcp_tasks._errors import McpError
from mcp_tasks._redact import short_id
from mcp_tasks.cli._help import HelpFormatter
from mcp_tasks.cli._store import add_store_option, open_store

if TYPE_CHECKING:
    from requests.auth import AuthBase

    from mcp_tasks._tasks import TaskFuture

__all__ = ["add_adopt_command", "run_adopt"]

DESCRIPTION = """\
Follow the tasks of the task store that nobody follows (their process died, or their lease
lapsed), one pass: claim them (two workers never get the same task), wait for each to its end,
record the end and free its lease. One line per task on stdout as it ends, its short id and
outcome (with --json, a JSON object with the full id). With --timeout, the tasks still running
then are freed for another worker.

With --forever, a worker that runs until stopped: it claims while it follows (an orphan is
claimed within about a second of its lease lapsing), holds at most --limit tasks at once, rides
out store outages (one warning when one begins, one line when it ends), and on Ctrl-C or SIGTERM
frees the leases it holds for another worker and exits.

Exit 0 when every task adopted completed, 3 otherwise."""


def add_adopt_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the ``adopt`` command (`parents`: the common options and the wait options)."""
    parser = commands.add_parser(
        "adopt",
        parents=parents,
        help="follow the store's tasks that nobody follows to their ends",
        description=DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="claim (with --forever: hold) at most N tasks (default: all)",
    )
    parser.add_argument(
        "--forever",
        action="store_true",
        help="keep claiming until Ctrl-C or SIGTERM, which free the leases held (default: one pass)",
    )
    add_store_option(parser)
    parser.set_defaults(target="https://")  # its clients are HTTP(S) ones, as --oauth and --header ask


def run_adopt(
    args: argparse.Namespace, auth: AuthBase | None, headers: Mapping[str, str] | None, out: IO[str] | None = None
) -> int:
    """Run ``adopt`` (lines on `out`, stdout by default): how many of the tasks adopted did not complete."""
    from mcp_tasks._tasks import adopt  # (the parser, and so --help, loads no tasks code)

    out = out or sys.stdout
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be a positive number, got {args.limit}")
    store = open_store(args)
    missed = 0
    adopted = adopt(
        store,
        limit=args.limit,
        auth=auth,
        headers=headers,
        forever=bool(args.forever),
        timeout=args.timeout,
        poll_interval=args.poll_interval,
        listen=True if args.listen else None,
    )
    with contextlib.closing(adopted), _stopped_by_sigterm(bool(args.forever)):
        try:
            for future in adopted:
                line, completed = _line(future, bool(args.json))
                missed += not completed
                out.write(line + "\n")
                out.flush()
        except KeyboardInterrupt:
            if not args.forever:
                raise
            adopted.close()  # the leases held are freed before the process ends
            sys.stderr.write("adopt: stopped; the tasks still running were freed for another worker\n")
    return missed


@contextlib.contextmanager
def _stopped_by_sigterm(forever: bool) -> Iterator[None]:
    """While a for-ever worker runs, SIGTERM stops it as Ctrl-C does (a KeyboardInterrupt in
    the main thread: the orderly stop that frees its leases). The handler before is put back.
    """
    if not forever or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _line(future: TaskFuture, as_json: bool) -> tuple[str, bool]:
    """The line for one task that ended, and whether it completed (without a tool error)."""
    task_id = future.task_id or "?"
    error = future.exception()
    if error is None:
        result = future.result()
        outcome = "tool error" if result.get("isError") else "completed"
        fields: dict[str, Any] = {"taskId": task_id, "outcome": outcome, "result": result}
    else:
        outcome = type(error).__name__
        fields = {"taskId": task_id, "outcome": outcome, "error": str(error)}
        if isinstance(error, McpError):
            fields["code"] = error.code
    if as_json:
        return json.dumps(fields, ensure_ascii=False), outcome == "completed"
    detail = json.dumps(fields["result"], ensure_ascii=False) if error is None else str(error)
    return f"{short_id(task_id)}  {outcome}  {detail}", outcome == "completed"
