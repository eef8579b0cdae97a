"""fastmcp-tasks' own async client, timed: CPU per tasks/get (run with .venv-peers' python).

python bench/_fastmcp_client.py URL TASK_ID POLLS ROUNDS      -> prints seconds per poll
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import fastmcp_tasks  # type: ignore[import-not-found]  # noqa: F401  (registers the extension)
from fastmcp import Client  # type: ignore[import-not-found]
from fastmcp_tasks.client import _send_get  # type: ignore[import-not-found]


async def measure(url: str, task_id: str, polls: int, rounds: int) -> float:
    async with Client(url) as client:
        session = client.session
        for _ in range(50):
            await _send_get(session, task_id)
        samples = []
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(polls):
                await _send_get(session, task_id)
            samples.append((time.process_time() - start) / polls)
    return statistics.median(samples)


if __name__ == "__main__":
    url, task_id, polls, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(asyncio.run(measure(url, task_id, polls, rounds)))
