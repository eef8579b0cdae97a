"""The ``mcp-tasks`` command: a demo, and call / get / cancel against any server.

    mcp-tasks demo [--transport direct|stdio|http]
    mcp-tasks call TARGET TOOL ['{"json": "arguments"}'] [--timeout S] [--listen]
    mcp-tasks get TARGET TASK_ID
    mcp-tasks cancel TARGET TASK_ID

TARGET is an http(s) URL, ``module:attr`` naming a reference `Server`, or a command line that
starts a stdio server (``"python my_server.py"``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from mcp_tasks._client import Client
from mcp_tasks._errors import InputError, InputRequired, McpError, TaskCancelled
from mcp_tasks._input import InputHandlers
from mcp_tasks._status import Status
from mcp_tasks._tasks import call_tool, cancel_task, get_task
from mcp_tasks._wait import await_task

__all__ = ["main"]


def _connect(target: str, handlers: InputHandlers) -> Client:
    if target.startswith(("http://", "https://")):
        return Client.http(target, input_handlers=handlers)
    if ":" in target and " " not in target and not target.startswith(("/", ".")):
        from mcp_tasks.server.__main__ import load_server

        return Client.direct(load_server(target), input_handlers=handlers)
    argv = shlex.split(target)
    if not argv:
        raise SystemExit("empty target")
    return Client.stdio(argv[0], argv[1:], input_handlers=handlers)


def _prompt_form(params: dict[str, Any]) -> dict[str, Any]:
    """Ask the person at the terminal to fill in an elicitation form."""
    print(f"\nThe server asks: {params.get('message', '(no message)')}", file=sys.stderr)
    schema = params.get("requestedSchema") or {}
    properties = schema.get("properties") or {}
    content: dict[str, Any] = {}
    try:
        for name, spec in properties.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            raw = input(f"  {name} ({kind or 'text'}, empty to decline): ").strip()
            if not raw:
                return {"action": "decline"}
            if kind == "boolean":
                content[name] = raw.lower() in ("y", "yes", "true", "1")
            elif kind in ("integer", "number"):
                content[name] = int(raw) if kind == "integer" else float(raw)
            else:
                content[name] = raw
    except (EOFError, ValueError) as exc:
        raise InputError(f"no usable answer: {exc}") from exc
    return {"action": "accept", "content": content}


def _status_line(status: Status) -> None:
    message = f" - {status.status_message}" if status.status_message else ""
    print(f"[{status.status}]{message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="mcp-tasks", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a task end to end on the embedded reference server")
    demo.add_argument("--transport", choices=("direct", "stdio", "http"), default="direct")
    call = commands.add_parser("call", help="call a tool and wait for its result")
    call.add_argument("target")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}")
    call.add_argument("--timeout", type=float, default=None, help="seconds to wait (default: no limit)")
    call.add_argument("--listen", action="store_true", help="follow a listen stream instead of polling")
    for name in ("get", "cancel"):
        sub = commands.add_parser(name, help=f"{name} a task by id")
        sub.add_argument("target")
        sub.add_argument("task_id")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from mcp_tasks._demo import run_demo

        run_demo(args.transport)
        return 0
    handlers = InputHandlers(form=_prompt_form)
    try:
        with _connect(args.target, handlers) as client:
            if args.command == "call":
                arguments = json.loads(args.arguments)
                called = call_tool(client, args.tool, arguments)
                if isinstance(called, Status):
                    _status_line(called)
                    result = await_task(
                        client, called, timeout=args.timeout, listen=args.listen, on_status=_status_line
                    )
                else:
                    result = called
                print(json.dumps(result, indent=2, ensure_ascii=False))
                return 1 if result.get("isError") else 0
            if args.command == "get":
                print(json.dumps(get_task(client, args.task_id).raw, indent=2, ensure_ascii=False))
                return 0
            cancel_task(client, args.task_id)
            print("cancel requested", file=sys.stderr)
            return 0
    except (TaskCancelled, InputRequired) as exc:
        print(f"mcp-tasks: {exc}", file=sys.stderr)
        return 1
    except McpError as exc:
        print(f"mcp-tasks: error {exc.code}: {exc}", file=sys.stderr)
        return 1
    except json.JSONDecodeError as exc:
        print(f"mcp-tasks: arguments are not JSON: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
