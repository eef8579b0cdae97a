"""The mcp-tasks command: call tools that may run as tasks, wait for them, and script with it.

The result alone goes to stdout (JSON); status lines, prompts and messages go to stderr. The
parser and its help are in `_parser`, the TARGET in `_target`, finding a task in `_locate`,
authorization in `_auth`, what is written in `_console`, the task store in `_store`.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from mcp_tasks._client import Client
from mcp_tasks._errors import (
    InputRequired,
    InvalidStatus,
    McpError,
    TaskCancelled,
    TaskFailed,
    TaskTimeout,
    ToolError,
    seconds,
)
from mcp_tasks._input import InputHandlers
from mcp_tasks._printable import printable
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._status import Status
from mcp_tasks._store import StoreError
from mcp_tasks._tasks import WaitOptions, await_task, call_tool, cancel_task, get_task, resume, server_supports
from mcp_tasks.cli._adopt import run_adopt
from mcp_tasks.cli._auth import auth_of
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
from mcp_tasks.cli._console import Console
from mcp_tasks.cli._detach import esc_detaches, leave, resume_hint
from mcp_tasks.cli._hints import in_cli_terms
from mcp_tasks.cli._keys import Detached
from mcp_tasks.cli._locate import from_store
from mcp_tasks.cli._parser import UsageError, build_parser
from mcp_tasks.cli._store import (
    close_store,
    existing_store,
    list_tasks,
    store_options,
)
from mcp_tasks.cli._target import check_target, kind_of, load_server
from mcp_tasks.cli._text import no_such_task, task_support, tied_to_command
from mcp_tasks.cli._trace import Tracing
from mcp_tasks.transports.stdio import StdioTransport

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
    "run",
]


INTERRUPT_GRACE = 0.1
"""Seconds a stdio server is given to exit after Ctrl-C, once told, and again after SIGTERM."""


def _connect(args: argparse.Namespace, handlers: InputHandlers, tracing: Tracing) -> Client:
    kind = check_target(args.target)
    headers = dict(args.header)
    if headers and kind != "http":
        raise UsageError("--header applies to http(s) targets only")
    session_id = getattr(args, "session", None)
    if session_id is not None and kind != "http":
        raise UsageError("--session applies to http(s) targets only")
    auth = auth_of(args)
    options: dict[str, Any] = {**store_options(args), **tracing.client_options()}
    if kind == "http":
        return Client.http(
            args.target, headers=headers or None, auth=auth, session_id=session_id, input_handlers=handlers, **options
        )
    if kind == "module":
        return Client.direct(load_server(args.target), input_handlers=handlers, **options)
    argv = shlex.split(args.target)
    return Client.stdio(argv[0], argv[1:], input_handlers=handlers, **options)


# -- the commands --------------------------------------------------------------------------------


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGUMENTS is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f'ARGUMENTS must be a JSON object such as \'{{"name": "Ada"}}\', got {type(value).__name__}')
    return value


def _tool_failed(console: Console, error: ToolError) -> int:
    """The result on stdout as for any other, the tool's own text on stderr; exit code 1."""
    console.result(error.result)
    message = in_cli_terms(error.message)
    console.event("error", f"mcp-tasks: {message}", exit=EXIT_TOOL_ERROR, message=message)
    return EXIT_TOOL_ERROR


def _wait(args: argparse.Namespace, client: Client, console: Console, task: str | Status, state: dict[str, str]) -> int:
    ref = getattr(args, "ref", None)  # the store's record: its questions name its call, as resume()'s do
    try:
        with esc_detaches(args, console):
            options: WaitOptions = {
                "timeout": args.timeout,
                "poll_interval": args.poll_interval,
                "listen": args.listen,
                "on_status": console.status,
                "on_progress": console.progress,
            }
            if ref is not None and ref.task_id == task:
                result = resume(ref, client=client, raise_on_error=True, **options)
            else:
                result = await_task(client, task, raise_on_error=True, **options)
    except ToolError as error:
        state.pop("unfinished", None)
        tool = getattr(args, "tool", None)
        arguments = ref.arguments if ref is not None else getattr(args, "called_with", None)
        return _tool_failed(console, ToolError(error.result, error.status, tool, arguments) if tool else error)
    state.pop("unfinished", None)
    console.result(result)
    return EXIT_OK


def _call(args: argparse.Namespace, client: Client, console: Console, state: dict[str, str]) -> int:
    arguments = args.called_with = _arguments(args.arguments)
    called = call_tool(client, args.tool, arguments)
    if not isinstance(called, Status):
        if args.detach:
            console.event(
                "synchronous",
                "The tool ran synchronously (the server made no task): its result is on stdout, not a task id.",
            )
        if called.get("isError") is True:
            return _tool_failed(console, ToolError(called, None, args.tool, arguments))
        console.result(called)
        return EXIT_OK
    state["task_id"] = called.task_id
    state["unfinished"] = "yes"
    fields: dict[str, Any] = {"taskId": called.task_id}
    if called.session_id is not None:
        state["session"] = fields["sessionId"] = called.session_id
    if args.detach:
        leave(args, console, state, "task", f"Task created: {called.task_id} (detached: it runs on at the server)")
        return EXIT_OK
    console.event("task", f"Task created: {called.task_id}\n{resume_hint(args, state)}", **fields)
    state["resume_shown"] = "yes"  # a timeout then points at it rather than say it again
    return _wait(args, client, console, called, state)


def _tools(client: Client, console: Console) -> int:
    listed = client.list_tools()
    if console.json:
        console.result(listed)
        return EXIT_OK
    width = max((len(str(t.get("name"))) for t in listed), default=0)
    era, offers = client.era, server_supports(client)
    for tool in listed:
        description = (tool.get("description") or "").strip().splitlines()
        line = f"{str(tool.get('name')).ljust(width)}  tasks: {task_support(era, offers, tool)}"
        sys.stdout.write(printable(line + (f"  {description[0]}" if description else "")) + "\n")
    return EXIT_OK


def _run(args: argparse.Namespace, console: Console, state: dict[str, str], tracing: Tracing) -> int:
    if args.command == "tasks":
        list_tasks(existing_store(args), sys.stdout, form="json" if args.json else "jsonl" if args.jsonl else "table")
        return EXIT_OK
    if args.command == "adopt":
        return EXIT_OK if not run_adopt(args, auth_of(args), dict(args.header) or None) else EXIT_FAILED
    from_store(args)
    if getattr(args, "detach", False) and kind_of(args.target) != "http":
        raise UsageError(
            f"--detach/--no-wait needs an http(s) target: on this one {tied_to_command(kind_of(args.target))}"
        )
    client = _connect(args, InputHandlers.interactive(console), tracing)
    try:
        return _command(args, client, console, state)
    except KeyboardInterrupt:
        # The server was told (notifications/cancelled for the request under way); a stdio server
        # that does not end with its input is not given the full grace: the person wants out now.
        transport = client.transport
        if isinstance(transport, StdioTransport):
            transport.exit_grace = INTERRUPT_GRACE
        raise
    finally:
        # A task left running in a 2025-era session stays reachable: leave the session open.
        client.close(end_session=not (state.get("session") and state.get("unfinished")))


def _command(args: argparse.Namespace, client: Client, console: Console, state: dict[str, str]) -> int:
    if args.command == "call":
        return _call(args, client, console, state)
    if args.command == "tools":
        return _tools(client, console)
    state["task_id"] = args.task_id
    if args.command == "wait":
        state["unfinished"] = "yes"
        return _wait(args, client, console, args.task_id, state)
    if args.command == "get":
        console.result(get_task(client, args.task_id).to_map())
        return EXIT_OK
    cancel_task(client, args.task_id)
    console.event("cancelled", "Cancel requested (the server stops the task when it can).")
    return EXIT_OK


def _fail(console: Console, exit_code: int, message: str, debug: bool, **fields: Any) -> int:
    if debug:
        console.display.suspend()
        traceback.print_exc()
    message = in_cli_terms(message)
    console.event("error", f"mcp-tasks: {printable(message)}", exit=exit_code, message=message, **fields)
    return exit_code


def _outcome_code(error: BaseException) -> int:
    if isinstance(error, TaskFailed):
        return EXIT_FAILED
    if isinstance(error, TaskCancelled):
        return EXIT_CANCELLED
    if isinstance(error, TaskTimeout):
        return EXIT_TIMEOUT
    if isinstance(error, InputRequired):
        return EXIT_INPUT
    if isinstance(error, McpError) and isinstance(error.cause, tuple) and error.cause[:1] == ("input_handler",):
        return EXIT_INPUT
    return EXIT_ERROR


def _interrupted(args: argparse.Namespace, state: dict[str, str]) -> str:
    task_id = state.get("task_id")
    if task_id is None or args.command not in ("call", "wait"):
        return "interrupted"
    if kind_of(args.target) != "http":
        return f"interrupted; task {task_id} ends now: {tied_to_command(kind_of(args.target))}"
    return f"interrupted; task {task_id} is still running. {resume_hint(args, state)}"


def _timed_out(args: argparse.Namespace, state: dict[str, str], error: TaskTimeout) -> str:
    if kind_of(args.target) == "http":
        return f"{error}, as printed above" if "resume_shown" in state else f"{error}. {resume_hint(args, state)}"
    last = f" (last seen {error.status.wire_status})" if error.status is not None else ""
    within = seconds(error.data["timeoutMs"] / 1000)
    return (
        f"Task {short_id(state.get('task_id', '?'))} did not finish within {within}{last}; "
        f"it ends now: {tied_to_command(kind_of(args.target))}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see ``mcp-tasks --help``)."""
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the command `args` parsed into; returns the exit code."""
    if args.command == "demo":
        from mcp_tasks.cli._demo import run_demo

        run_demo(args.transport)
        return EXIT_OK
    debug = bool(args.debug)
    if debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    console = Console(args)
    state: dict[str, str] = {}
    tracing = Tracing(console)
    try:
        if getattr(args, "trace", False):
            tracing.start()
        return _run(args, console, state, tracing)
    except UsageError as exc:
        return _fail(console, EXIT_USAGE, str(exc), debug)
    except Detached:
        leave(args, console, state, "detached", f"Detached: task {state['task_id']} is still running at the server.")
        return EXIT_OK
    except KeyboardInterrupt:
        return _fail(console, EXIT_INTERRUPTED, _interrupted(args, state), debug)
    except TaskTimeout as exc:
        return _fail(console, EXIT_TIMEOUT, _timed_out(args, state, exc), debug)
    except (TaskFailed, TaskCancelled, InputRequired) as exc:
        return _fail(console, _outcome_code(exc), str(exc), debug)
    except McpError as exc:
        # The server's text, exact (--json keeps it so; the line shown is escaped); it may quote the id.
        said = redact_ids(exc.message, state.get("task_id"))
        if "task_id" in state and (unknown := no_such_task(exc, state["task_id"])) is not None:
            return _fail(console, EXIT_NO_TASK, unknown, debug, code=exc.code)
        return _fail(console, _outcome_code(exc), f"{said} (error {exc.code})", debug, code=exc.code)
    except (InvalidStatus, TypeError, ValueError) as exc:
        return _fail(console, EXIT_USAGE, str(exc), debug)
    except StoreError as exc:
        return _fail(console, EXIT_ERROR, str(exc), debug)
    finally:
        close_store(args)
        tracing.stop()
        console.close()


if __name__ == "__main__":
    sys.exit(main())
