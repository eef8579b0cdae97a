"""A script as a person runs it in a terminal: five tasks in a batch of futures on a server in this
process, shown by one `StatusDisplay`; two ask a question each (interactive handlers, on the
terminal), one fails, two report a long message and end once both questions are answered. Prints
the results, and the failed task's short id, as JSON on stdout.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from typing import Any

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks.server import Server

LONG = "copying the quarterly export to the archive, one very long status message " * 3
FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
answered = threading.Event()
asked = [0]
lock = threading.Lock()
server = Server(poll_interval=0.02)


@server.tool(task="required")
def step(ctx: Any, n: int) -> dict[str, Any]:
    ctx.report(f"{n}: {LONG}")
    answered.wait(60)
    return {"n": n}


@server.tool(task="required")
def ask(ctx: Any, who: str) -> dict[str, Any]:
    answer = ctx.elicit("form", f"Tell me, {who}", FORM)["content"]
    with lock:
        asked[0] += 1
        if asked[0] == 2:
            answered.set()
    return {"who": who, "name": answer["name"], "age": answer["age"]}


@server.tool(task="required")
def boom(ctx: Any, report: str, token: str) -> dict[str, Any]:
    raise RuntimeError("boom on purpose")


def main() -> None:
    logging.getLogger("mcp_tasks.server").setLevel(logging.ERROR)  # its warning about boom: not on the line
    with mt.Client.direct(server, input_handlers=mt.InputHandlers.interactive()) as client:
        with mt.StatusDisplay(tick=0) as show:
            futures = [mt.submit(client, "step", {"n": n}, on_status=show) for n in (1, 2)]
            futures.append(mt.submit(client, "boom", {"report": "q3", "token": "tok-0123456789"}, on_status=show))
            futures += [mt.submit(client, "ask", {"who": who}, on_status=show) for who in ("first", "second")]
            concurrent.futures.wait(futures, timeout=120)
        results = [f.result()["structuredContent"] for f in futures if f.exception() is None]
        print(json.dumps({"results": results, "failed": short_id(futures[2].task_id)}))
    server.close()


if __name__ == "__main__":
    main()
