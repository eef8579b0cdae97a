"""fastmcp-tasks' own async client with asyncio.gather against its own server, N tasks at once
(run with .venv-peers' python; bench/many_tasks.py starts it).

python bench/_fastmcp_many.py (http URL | stdio SERVER_SCRIPT) N SECONDS   -> prints one JSON line

Each task is made with ``call_tool_task`` one after another, then ``asyncio.gather`` drives every
``ToolTask.result()`` (each polls ``tasks/get`` on its own schedule). The server's tool does not
say when it finished, so the ideal is taken as the moment the last task was made plus SECONDS (a
lower bound: "late" is then an upper bound for this peer).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from fastmcp import Client  # type: ignore[import-not-found]
from fastmcp.client.transports import StdioTransport  # type: ignore[import-not-found]
from fastmcp_tasks.client import call_tool_task  # type: ignore[import-not-found]


async def measure(target: Any, size: int, seconds: float) -> dict[str, float]:
    async with Client(target) as client:
        started = time.monotonic()
        cpu = time.process_time()
        tasks = [await call_tool_task(client, "slow", {"seconds": seconds, "label": str(i)}) for i in range(size)]
        ideal = time.monotonic() + seconds
        results = await asyncio.gather(*(task.result() for task in tasks))
        ended = time.monotonic()
        cpu = time.process_time() - cpu
    assert len(results) == size
    return {"late": ended - ideal, "ideal": ideal - started, "cpu_ms": 1000 * cpu / size}


def main(argv: list[str]) -> None:
    kind, where, size, seconds = argv[0], argv[1], int(argv[2]), float(argv[3])
    target = where if kind == "http" else StdioTransport(sys.executable, [where, "stdio"])
    print(json.dumps(asyncio.run(measure(target, size, seconds))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
