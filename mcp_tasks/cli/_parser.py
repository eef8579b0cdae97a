"""The mcp-tasks command line: its commands, their arguments and their help (laid out by
`HelpFormatter` to the terminal's width).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp_tasks._tasks._defaults import DEFAULT_POLL_INTERVAL
from mcp_tasks._version import __version__
from mcp_tasks.cli._adopt import add_adopt_command
from mcp_tasks.cli._help import HelpFormatter
from mcp_tasks.cli._store import add_store_option
from mcp_tasks.cli._text import TARGET_FORMS, TARGET_HELP, TASK_ID_HELP, TOOL_HELP

__all__ = ["CLIENT_SECRET_ENV", "UsageError", "build_parser"]

CLIENT_SECRET_ENV = "MCP_TASKS_CLIENT_SECRET"
"""The environment variable the CLI reads a client secret from (with ``--client-id``)."""

DESCRIPTION = f"""\
Call MCP tools that the server may run as tasks, wait for them, pick them up again by id.

{TARGET_FORMS}
The result alone is printed on stdout (JSON); status, prompts and messages go to stderr. When a tool \
becomes a task its id is printed once on stderr, with the command that resumes it. On a terminal, \
Esc during the wait detaches (http(s) targets): the task runs on, its id and the commands to follow or \
cancel it are printed, exit code 0.
"""

EPILOG = """\
exit codes:
  0    success (for call/wait: the tool completed without isError, or the wait was detached)
  1    the tool ran and reported an error (isError: true): its text on stderr, the result still printed
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


GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed")

LOOKUP_HELP = "the task store to look a short TASK_ID (e294…b175, or a prefix) up in (default: as for wait)"

SESSION_HELP = (
    "join the 2025-era HTTP session that created the task (printed with its id): servers such as "
    "mcp 1.30 keep a task for that session only"
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, each command a subparser."""
    parser = argparse.ArgumentParser(
        prog="mcp-tasks", description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"mcp-tasks {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and debug logs on stderr")
    common.add_argument("--json", action="store_true", help="JSON-lines events on stderr, the result as one JSON line")
    common.add_argument(
        "--trace",
        action="store_true",
        help="trace the requests and the wait with OpenTelemetry (needs opentelemetry-sdk): over OTLP when its "
        "exporter package is installed, else as JSON lines on stderr; $OTEL_TRACES_EXPORTER chooses (console or otlp)",
    )
    common.add_argument(
        "--header", type=_header, action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header to send"
    )
    oauth = common.add_argument_group("authorization: OAuth (http targets)")
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
        choices=GRANTS,
        metavar="GRANT",
        help=f"how to get a token, one of {', '.join(GRANTS)} (default: client_credentials with a secret or key, "
        "jwt_bearer with "
        "--assertion-file, enterprise_managed with --id-token-file, else a person in the browser)",
    )
    signed = common.add_argument_group("authorization: OAuth with signed JWTs (the mcp_tasks[jwt] extra)")
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
    waits.add_argument(
        "--timeout", type=_positive, default=None, metavar="S", help="seconds to wait in all (default: no limit)"
    )
    waits.add_argument(
        "--poll-interval",
        type=_positive,
        default=DEFAULT_POLL_INTERVAL,
        metavar="S",
        help=f"seconds between polls when the server suggests none (default {DEFAULT_POLL_INTERVAL:g})",
    )
    waits.add_argument("--listen", action="store_true", help="follow a listen stream instead of polling")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    call = commands.add_parser(
        "call",
        parents=[common, waits],
        help="call a tool; wait for it if it becomes a task",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
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
        "--detach",
        "--no-wait",
        dest="detach",
        action="store_true",
        help="start the call and leave the task running: its id on stdout, the commands to follow or cancel it on "
        "stderr (http(s) targets: a stdio or module:attr server stops with the command); a tool that runs "
        "synchronously prints its result instead, and says so",
    )
    add_store_option(
        call,
        "record the task in this task store: a file path, sqlite:///path, a postgresql:// URL or libpq key=value "
        f"pairs, as for mcp-tasks tasks (or in ${'MCP_TASKS_STORE'} when set)",
    )

    wait = commands.add_parser(
        "wait",
        usage="%(prog)s [TARGET] TASK_ID [options]",  # TASK_ID is needed; the TARGET may come from the store
        parents=[common, waits],
        help="wait for a task by id and print its result (no TARGET: the task store says where it runs)",
        description="Wait for a task by id and print its result on stdout. With TASK_ID alone, the task store "
        f"(--store, $MCP_TASKS_STORE or the default one) says where it runs.\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
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

    _add_task_command(
        commands,
        common,
        "get",
        summary="print a task's status (JSON) without waiting",
        description="Print a task's status on stdout (JSON), without waiting.",
    )
    _add_task_command(
        commands,
        common,
        "cancel",
        summary="ask the server to cancel a task",
        description="Ask the server to cancel a task (it stops the task when it can).",
    )

    tools = commands.add_parser(
        "tools",
        parents=[common],
        help="list the server's tools",
        description=f"List the server's tools, each with its task support as the server declares it.\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    tools.add_argument("target", metavar="TARGET", help=TARGET_HELP)

    tasks = commands.add_parser(
        "tasks",
        formatter_class=HelpFormatter,
        help="list the unfinished tasks of the task store",
        description="List the unfinished tasks of the task store (--store, $MCP_TASKS_STORE or the default one): "
        "id (both ends of it, as mcp-tasks wait takes it), tool, endpoint, age and last status.",
    )
    listed = tasks.add_mutually_exclusive_group()
    listed.add_argument(
        "--json", action="store_true", help="the tasks as one JSON array (full ids, times in ISO 8601 UTC)"
    )
    listed.add_argument("--jsonl", action="store_true", help="each task as a JSON object on a line of its own")
    tasks.add_argument("--debug", action="store_true", help="show tracebacks on stderr")
    add_store_option(tasks)
    add_adopt_command(commands, [common, waits])

    demo = commands.add_parser(
        "demo",
        formatter_class=HelpFormatter,
        help="run a task end to end on the embedded reference server",
        description="Run a task end to end on the embedded reference server, telling each step.",
    )
    demo.add_argument(
        "--transport", choices=("direct", "stdio", "http"), default="direct", help="how to reach it (default direct)"
    )
    return parser


def _add_task_command(
    commands: Any, common: argparse.ArgumentParser, name: str, *, summary: str, description: str
) -> None:
    """Add a command on one task at a TARGET (``get``, ``cancel``): `summary` for the list of
    commands, `description` atop its help; ``--session``, and ``--store`` to look the task up in.
    """
    command = commands.add_parser(
        name,
        parents=[common],
        help=summary,
        description=f"{description}\n\n{TARGET_FORMS}",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    command.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    command.add_argument("task_id", metavar="TASK_ID", help=TASK_ID_HELP)
    command.add_argument("--session", metavar="SESSION_ID", help=SESSION_HELP)
    add_store_option(command, LOOKUP_HELP)
