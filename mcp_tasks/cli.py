"""The mcp-tasks command: call tools that may run as tasks, wait for them, and script with it.

The result alone goes to stdout (JSON); status lines, prompts and messages go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Literal

from mcp_tasks._cli_store import add_store_option, find_task, list_tasks, named_store, open_store, store_options
from mcp_tasks._cli_text import (
    TARGET_FORMS,
    TARGET_HELP,
    TASK_ID_HELP,
    TOOL_HELP,
    is_no_such_task,
    task_support,
    tied_to_command,
)
from mcp_tasks._client import Client
from mcp_tasks._display import StatusDisplay
from mcp_tasks._errors import (
    InputError,
    InputRequired,
    InvalidStatus,
    McpError,
    OAuthError,
    TaskCancelled,
    TaskFailed,
    TaskTimeout,
    seconds,
)
from mcp_tasks._input import InputHandlers
from mcp_tasks._printable import json_text, printable
from mcp_tasks._prompt import read_answer
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._status import Status
from mcp_tasks._store import StoreError
from mcp_tasks._tasks import DEFAULT_POLL_INTERVAL, await_task, call_tool, cancel_task, get_task, server_supports
from mcp_tasks._version import __version__

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

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_CANCELLED = 4
EXIT_TIMEOUT = 5
EXIT_INPUT = 6
EXIT_ERROR = 7
EXIT_NO_TASK = 8
EXIT_INTERRUPTED = 130

DESCRIPTION = f"""\
Call MCP tools that the server may run as tasks, wait for them, pick them up again by id.

{TARGET_FORMS}
The result alone is printed on stdout (JSON); status, prompts and messages go to stderr. When a
tool becomes a task its id is printed once on stderr, with the command that resumes it.
"""

EPILOG = """\
exit codes:
  0    success (for call/wait: the tool completed without isError)
  1    the tool ran and reported an error (isError: true); the result is still printed
  2    usage error: bad arguments, JSON that is not an object, a target that cannot be loaded
  3    the task failed
  4    the task was cancelled
  5    the wait timed out; the task is still running (resume it with "mcp-tasks wait")
  6    the task needs input that was not given (declined prompt, closed stdin, unsupported kind)
  7    connection or protocol error (the server could not be reached, or answered with an error)
  8    no such task: the server does not know the task id (expired, mistyped, or another session's)
  130  interrupted (Ctrl-C)

--debug shows the traceback of any error.
"""


class UsageError(Exception):
    """A mistake in the command line: reported in one line, exit code 2."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r} (omit it for no limit)")
    return value


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


SESSION_HELP = (
    "join the 2025-era HTTP session that created the task (printed with its id): servers such as "
    "mcp 1.30 keep a task for that session only"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-tasks", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"mcp-tasks {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and debug logs on stderr")
    common.add_argument("--json", action="store_true", help="JSON-lines events on stderr, the result as one JSON line")
    common.add_argument(
        "--header", type=_header, action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header to send"
    )
    oauth = common.add_argument_group("OAuth (http targets)")
    oauth.add_argument(
        "--oauth",
        action="store_true",
        help="authorize with OAuth 2.1 when the server asks (the browser opens; tokens are kept in your config folder)",
    )
    oauth.add_argument("--client-id", metavar="ID", help="a client registered with the authorization server")
    oauth.add_argument(
        "--client-secret", metavar="SECRET", help="its secret (with no person to ask: the client credentials grant)"
    )
    oauth.add_argument(
        "--client-secret-file",
        metavar="PATH",
        help=f"read the secret from this file (safer than --client-secret; or set {CLIENT_SECRET_ENV})",
    )
    oauth.add_argument(
        "--issuer", metavar="URL", help="the authorization server the client id belongs to (no other gets it)"
    )
    oauth.add_argument("--scope", metavar="SCOPES", help="the scopes to ask for (space-separated)")
    oauth.add_argument(
        "--grant",
        choices=("authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed"),
        help="how to get a token (default: client_credentials with a secret or key, jwt_bearer with "
        "--assertion-file, enterprise_managed with --id-token-file, else a person in the browser)",
    )
    signed = common.add_argument_group("OAuth with signed JWTs (the mcp_tasks[jwt] extra)")
    signed.add_argument("--private-key", metavar="PATH", help="a PEM private key: private_key_jwt instead of a secret")
    signed.add_argument("--private-key-id", metavar="KID", help="the key's id (kid) at the authorization server")
    signed.add_argument("--dpop", action="store_true", help="DPoP-bound tokens, proved on every request")
    signed.add_argument(
        "--assertion-file", metavar="PATH", help="the workload's JWT (read again for each token request): jwt_bearer"
    )
    signed.add_argument("--id-token-file", metavar="PATH", help="your ID token from the identity provider")
    signed.add_argument("--idp-token-endpoint", metavar="URL", help="the identity provider's token endpoint")
    signed.add_argument("--idp-client-id", metavar="ID", help="this client's id at the identity provider")
    signed.add_argument(
        "--idp-client-secret-file", metavar="PATH", help="its secret at the identity provider, if it has one"
    )
    waits = argparse.ArgumentParser(add_help=False)
    waits.add_argument("--timeout", type=_positive, default=None, help="seconds to wait in all (default: no limit)")
    waits.add_argument(
        "--poll-interval",
        type=_positive,
        default=DEFAULT_POLL_INTERVAL,
        metavar="S",
        help=f"seconds between polls when the server suggests none (default {DEFAULT_POLL_INTERVAL:g})",
    )
    waits.add_argument("--listen", action="store_true", help="follow a listen stream instead of polling")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    raw = argparse.RawDescriptionHelpFormatter
    call = commands.add_parser(
        "call",
        parents=[common, waits],
        help="call a tool; wait for it if it becomes a task",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=raw,
    )
    call.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    call.add_argument("tool", metavar="TOOL", help=TOOL_HELP)
    call.add_argument(
        "arguments",
        nargs="?",
        default="{}",
        metavar="ARGUMENTS",
        help="the tool's arguments, a JSON object (default {})",
    )
    call.add_argument(
        "--no-wait",
        action="store_true",
        help="print the task id on stdout and leave (http(s) targets: a stdio or module:attr server stops with "
        "the command); a tool that runs synchronously prints its result instead, and says so",
    )
    add_store_option(call, f"record the task in this store file (or in ${'MCP_TASKS_STORE'} when set)")

    wait = commands.add_parser(
        "wait",
        parents=[common, waits],
        help="wait for a task by id and print its result (no TARGET: the task store says where it runs)",
        description=f"Wait for a task by id and print its result on stdout. With TASK_ID alone, the task store\n"
        f"(--store, $MCP_TASKS_STORE or the default one) says where it runs.\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=raw,
    )
    wait.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        help=f"{TARGET_HELP}; left out, the task store says where the task runs",
    )
    wait.add_argument("task_id", metavar="TASK_ID", nargs="?", help=TASK_ID_HELP)
    add_store_option(wait)
    wait.add_argument("--session", metavar="SESSION_ID", help=SESSION_HELP)

    get = commands.add_parser(
        "get",
        parents=[common],
        help="print a task's status (JSON) without waiting",
        description=f"Print a task's status on stdout (JSON), without waiting.\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=raw,
    )
    get.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    get.add_argument("task_id", metavar="TASK_ID", help=TASK_ID_HELP)
    get.add_argument("--session", metavar="SESSION_ID", help=SESSION_HELP)

    cancel = commands.add_parser(
        "cancel",
        parents=[common],
        help="ask the server to cancel a task",
        description=f"Ask the server to cancel a task (it stops the task when it can).\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=raw,
    )
    cancel.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    cancel.add_argument("task_id", metavar="TASK_ID", help=TASK_ID_HELP)
    cancel.add_argument("--session", metavar="SESSION_ID", help=SESSION_HELP)

    tools = commands.add_parser(
        "tools",
        parents=[common],
        help="list the server's tools",
        description=f"List the server's tools, each with its task support as the server declares it.\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=raw,
    )
    tools.add_argument("target", metavar="TARGET", help=TARGET_HELP)

    tasks = commands.add_parser(
        "tasks",
        help="list the unfinished tasks of the task store",
        description="List the unfinished tasks of the task store (--store, $MCP_TASKS_STORE or the default one):\n"
        "id prefix, tool, endpoint, age and last status.",
        formatter_class=raw,
    )
    tasks.add_argument("--json", action="store_true", help="each task as a JSON line (full ids)")
    tasks.add_argument("--debug", action="store_true", help="show tracebacks on stderr")
    add_store_option(tasks)

    demo = commands.add_parser(
        "demo",
        help="run a task end to end on the embedded reference server",
        description="Run a task end to end on the embedded reference server, telling each step.",
    )
    demo.add_argument(
        "--transport", choices=("direct", "stdio", "http"), default="direct", help="how to reach it (default direct)"
    )
    return parser


# -- the target ----------------------------------------------------------------------------------


def _kind(target: str) -> str:
    if target.startswith(("http://", "https://")):
        return "http"
    head, sep, attr = target.partition(":")
    if sep and attr and " " not in target and head.replace(".", "").replace("_", "").isalnum():
        return "module"
    return "stdio"


def _load(target: str) -> Any:
    """Import ``module:attr`` from the current directory; the Server it names (or makes)."""
    from mcp_tasks.server import Server

    module_name, _, attr = target.partition(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r} (looked in {here} and sys.path): {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    server = obj() if callable(obj) and not isinstance(obj, Server) else obj
    if not callable(getattr(server, "handle", None)):
        raise UsageError(f"{target} is not a server (a mcp_tasks.server.Server, or a function returning one)")
    return server


CLIENT_SECRET_ENV = "MCP_TASKS_CLIENT_SECRET"
"""The environment variable the CLI reads a client secret from (with ``--client-id``)."""


def _client_secret(args: argparse.Namespace) -> str | None:
    """The client secret from ``--client-secret``, ``--client-secret-file`` or the environment
    (with ``--client-id``); a file or the environment keeps it out of ``ps`` and shell history.
    """
    given = [flag for flag in ("client_secret", "client_secret_file") if getattr(args, flag) is not None]
    if len(given) > 1:
        raise UsageError("give --client-secret or --client-secret-file, not both")
    if args.client_secret_file is not None:
        return _secret_file(args.client_secret_file, "--client-secret-file")
    if args.client_secret is not None:
        return str(args.client_secret)
    from_env = os.environ.get(CLIENT_SECRET_ENV)
    return from_env if from_env and args.client_id is not None else None


def _secret_file(path: str | None, flag: str) -> str | None:
    """The secret in the file at `path` (None without a path); an unreadable or empty file is a
    usage error naming the flag.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            secret = file.read().strip()
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror}") from None
    if not secret:
        raise UsageError(f"{flag} {path} is empty")
    return secret


def _auth(args: argparse.Namespace) -> Any:
    """The ``auth=`` object for an HTTP target: `OAuth` with ``--oauth`` (None without)."""
    given = [
        flag
        for flag, value in (
            ("--client-id", args.client_id),
            ("--client-secret", args.client_secret),
            ("--client-secret-file", args.client_secret_file),
            ("--issuer", args.issuer),
            ("--scope", args.scope),
            ("--private-key", args.private_key),
            ("--private-key-id", args.private_key_id),
            ("--dpop", args.dpop or None),
            ("--assertion-file", args.assertion_file),
            ("--id-token-file", args.id_token_file),
            ("--idp-token-endpoint", args.idp_token_endpoint),
            ("--idp-client-id", args.idp_client_id),
            ("--idp-client-secret-file", args.idp_client_secret_file),
        )
        if value is not None
    ]
    if not args.oauth:
        if given:
            raise UsageError(f"{', '.join(given)} go with --oauth")
        return None
    if _kind(args.target) != "http":
        raise UsageError("--oauth applies to http(s) targets only")
    if (args.client_secret is not None or args.client_secret_file is not None) and args.client_id is None:
        raise UsageError("--client-secret needs the --client-id it belongs to")
    if args.issuer is not None and args.client_id is None:
        raise UsageError("--issuer needs the --client-id it binds")
    secret = _client_secret(args)
    from mcp_tasks._oauth import cli_oauth

    grant: Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed"] = args.grant or (
        "client_credentials"
        if secret is not None or args.private_key is not None
        else "jwt_bearer"
        if args.assertion_file is not None
        else "enterprise_managed"
        if args.id_token_file is not None
        else "authorization_code"
    )
    if grant == "client_credentials" and secret is None and args.private_key is None:
        raise UsageError("--grant client_credentials needs --client-id and --client-secret (or --private-key)")
    try:
        return cli_oauth(
            client_id=args.client_id,
            client_secret=secret,
            scope=args.scope,
            grant=grant,
            issuer=args.issuer,
            private_key=args.private_key,
            private_key_id=args.private_key_id,
            dpop=args.dpop,
            assertion=_reads(args.assertion_file, "--assertion-file"),
            id_token=_reads(args.id_token_file, "--id-token-file"),
            idp_token_endpoint=args.idp_token_endpoint,
            idp_client_id=args.idp_client_id,
            idp_client_secret=_secret_file(args.idp_client_secret_file, "--idp-client-secret-file"),
        )
    except (ValueError, TypeError, ImportError) as exc:
        raise UsageError(str(exc)) from None


def _reads(path: str | None, flag: str) -> Callable[[], str] | None:
    """A function that reads the JWT in the file at `path` when called (a workload's token file is
    rotated under the running program), or None without a path.
    """
    if path is None:
        return None

    def read() -> str:
        try:
            with open(path, encoding="utf-8") as file:
                return file.read().strip()
        except OSError as exc:
            raise OAuthError(f"cannot read {flag} {path}: {exc.strerror}") from None

    return read


def _connect(args: argparse.Namespace, handlers: InputHandlers) -> Client:
    kind = _kind(args.target)
    headers = dict(args.header)
    if headers and kind != "http":
        raise UsageError("--header applies to http(s) targets only")
    session_id = getattr(args, "session", None)
    if session_id is not None and kind != "http":
        raise UsageError("--session applies to http(s) targets only")
    auth = _auth(args)
    stored = store_options(args)
    if kind == "http":
        return Client.http(
            args.target, headers=headers or None, auth=auth, session_id=session_id, input_handlers=handlers, **stored
        )
    if kind == "module":
        return Client.direct(_load(args.target), input_handlers=handlers, **stored)
    argv = shlex.split(args.target)
    if not argv:
        raise UsageError("the target is empty")
    return Client.stdio(argv[0], argv[1:], input_handlers=handlers, **stored)


def _from_store(args: argparse.Namespace) -> None:
    """Open the command's store; for ``wait TASK_ID`` with no TARGET, find the task's endpoint there."""
    if args.command == "wait" and args.task_id is None:
        if args.target is None:
            raise UsageError("wait needs a TASK_ID (and a TARGET, unless the task store knows it)")
        args.target, args.task_id = None, args.target
    if args.command not in ("call", "wait"):
        return
    if args.target is not None:
        args.store_opened = named_store(args)
        return
    args.store_opened = open_store(args)
    try:
        ref = find_task(args.store_opened, args.task_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if _kind(ref.endpoint) != "http":
        raise UsageError(
            f"task {short_id(ref.task_id)} ran on {ref.endpoint!r}, a server that lived in the process that started "
            "it: it cannot be resumed from here"
        )
    args.target, args.task_id = ref.endpoint, ref.task_id
    if getattr(args, "session", None) is None and ref.era == "legacy":
        args.session = ref.session_id


# -- talking to the person -----------------------------------------------------------------------


class Console:
    """Everything the command writes: results on stdout, the rest on stderr (JSON lines with --json)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self.started = time.monotonic()
        self.display = StatusDisplay(sys.stderr)

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

    def say(self, event: str, text: str, **fields: object) -> None:
        """The `Prompter` side of `event`: what the interactive input handlers tell the person."""
        self.event(event, text, **fields)

    def ask(self, prompt: str, field: str) -> str:
        """One line from stdin, the prompt on stderr (so stdout stays the result alone)."""
        self.display.suspend()
        if not self.json:
            return read_answer(printable(prompt), sys.stdin, sys.stderr)
        sys.stderr.write(json_text({"event": "prompt", "field": field, "prompt": prompt.strip()}) + "\n")
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise InputError("no answer: stdin is closed")
        return line.rstrip("\r\n")

    def close(self) -> None:
        self.display.close()


# -- the commands --------------------------------------------------------------------------------


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGUMENTS is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f'ARGUMENTS must be a JSON object such as \'{{"name": "Ada"}}\', got {type(value).__name__}')
    return value


def _resume_hint(args: argparse.Namespace, state: dict[str, str]) -> str:
    kind = _kind(args.target)
    if kind != "http":
        return f"It cannot be resumed: {tied_to_command(kind)}."
    target, task = shlex.quote(args.target), shlex.quote(state.get("task_id", "?"))
    # A 2025-era server may keep the task for its session only: the hint joins that session.
    session = state.get("session") or getattr(args, "session", None)
    options = f"--session {shlex.quote(session)}" if session else ""
    # An id that starts with "-" goes last, after "--", so that it is not taken for an option.
    dashed = task.startswith("-")
    where = f"{options} {target} -- {task}".lstrip() if dashed else f"{target} {task} {options}".rstrip()
    return f"Resume with: mcp-tasks wait {where}   (or: mcp-tasks cancel {where})"


def _wait(args: argparse.Namespace, client: Client, console: Console, task: str | Status, state: dict[str, str]) -> int:
    result = await_task(
        client,
        task,
        timeout=args.timeout,
        poll_interval=args.poll_interval,
        listen=args.listen,
        on_status=console.status,
    )
    state.pop("unfinished", None)
    console.result(result)
    return EXIT_TOOL_ERROR if result.get("isError") else EXIT_OK


def _call(args: argparse.Namespace, client: Client, console: Console, state: dict[str, str]) -> int:
    arguments = _arguments(args.arguments)
    called = call_tool(client, args.tool, arguments)
    if not isinstance(called, Status):
        if args.no_wait:
            console.event(
                "synchronous",
                "The tool ran synchronously (the server made no task): its result is on stdout, not a task id.",
            )
        console.result(called)
        return EXIT_TOOL_ERROR if called.get("isError") else EXIT_OK
    state["task_id"] = called.task_id
    state["unfinished"] = "yes"
    fields: dict[str, Any] = {"taskId": called.task_id}
    if called.session_id is not None:
        state["session"] = fields["sessionId"] = called.session_id
    if args.no_wait:
        note = "" if "session" not in state else f"\n{_resume_hint(args, state)}"
        console.event("task", f"Task created: {called.task_id}{note}", **fields)
        sys.stdout.write(printable(called.task_id) + "\n")  # a hostile id cannot drive the terminal
        return EXIT_OK
    console.event("task", f"Task created: {called.task_id}\n{_resume_hint(args, state)}", **fields)
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


def _run(args: argparse.Namespace, console: Console, state: dict[str, str]) -> int:
    if args.command == "tasks":
        list_tasks(open_store(args), sys.stdout, as_json=args.json)
        return EXIT_OK
    _from_store(args)
    if getattr(args, "no_wait", False) and _kind(args.target) != "http":
        raise UsageError(f"--no-wait needs an http(s) target: on this one {tied_to_command(_kind(args.target))}")
    client = _connect(args, InputHandlers.interactive(console))
    try:
        return _command(args, client, console, state)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see ``mcp-tasks --help``)."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from mcp_tasks._demo import run_demo

        run_demo(args.transport)
        return EXIT_OK
    debug = bool(args.debug)
    if debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    console = Console(args)
    state: dict[str, str] = {}
    try:
        return _run(args, console, state)
    except UsageError as exc:
        return _fail(console, EXIT_USAGE, str(exc), debug)
    except KeyboardInterrupt:
        task_id = state.get("task_id")
        if task_id is not None and args.command in ("call", "wait") and _kind(args.target) != "http":
            message = f"interrupted; task {task_id} ends now: {tied_to_command(_kind(args.target))}"
        elif task_id is not None and args.command in ("call", "wait"):
            message = f"interrupted; task {task_id} is still running. {_resume_hint(args, state)}"
        else:
            message = "interrupted"
        return _fail(console, EXIT_INTERRUPTED, message, debug)
    except TaskTimeout as exc:
        if _kind(args.target) != "http":
            last = f" (last seen {exc.status.wire_status})" if exc.status is not None else ""
            within = seconds(exc.data["timeoutMs"] / 1000)
            message = (
                f"Task {short_id(state.get('task_id', '?'))} did not finish within {within}{last}; "
                f"it ends now: {tied_to_command(_kind(args.target))}"
            )
            return _fail(console, EXIT_TIMEOUT, message, debug)
        return _fail(console, EXIT_TIMEOUT, f"{exc}. {_resume_hint(args, state)}", debug)
    except (TaskFailed, TaskCancelled, InputRequired) as exc:
        return _fail(console, _outcome_code(exc), str(exc), debug)
    except McpError as exc:
        said = redact_ids(str(exc), state.get("task_id"))  # the server's text may quote the id
        if "task_id" in state and is_no_such_task(exc):
            message = (
                f"no such task {short_id(state['task_id'])} on this server (expired, mistyped, or another session's)"
            )
            return _fail(console, EXIT_NO_TASK, f"{message}: {said} (error {exc.code})", debug, code=exc.code)
        return _fail(console, _outcome_code(exc), f"{said} (error {exc.code})", debug, code=exc.code)
    except (InvalidStatus, TypeError, ValueError) as exc:
        return _fail(console, EXIT_USAGE, str(exc), debug)
    except StoreError as exc:
        return _fail(console, EXIT_ERROR, str(exc), debug)
    finally:
        console.close()


if __name__ == "__main__":
    sys.exit(main())
