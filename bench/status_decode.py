"""``Status.from_map`` on the maps a poll reads: microseconds per decode. Not a test: it prints a
table.

    python bench/status_decode.py [--number 20000] [--rounds 7]

Every poll decodes one map, so this is the client's own CPU per poll. A well-formed map takes the
fast path; a broken one (the last row) takes it and then cattrs' detailed validation, which names
the bad field.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_tasks as mt

TASK_ID = "786512e4-ee17-4f2a-9c1b-0d2f3a4b5c6d"
MAPS: dict[str, dict[str, Any]] = {
    "working": {
        "taskId": TASK_ID,
        "status": "working",
        "statusMessage": "row 2 of 3",
        "createdAt": "2026-11-30T10:00:00Z",
        "lastUpdatedAt": "2026-11-30T10:00:01Z",
        "ttlMs": 60000,
        "pollIntervalMs": 500,
        "resultType": "complete",
    },
    "completed": {
        "taskId": TASK_ID,
        "status": "completed",
        "createdAt": "2026-11-30T10:00:00Z",
        "lastUpdatedAt": "2026-11-30T10:00:01Z",
        "ttlMs": 60000,
        "result": {"content": [{"type": "text", "text": "done"}]},
    },
    "input_required": {
        "taskId": TASK_ID,
        "status": "input_required",
        "inputRequests": {"k1": {"method": "elicitation/create", "params": {}}},
    },
    "invalid (taskId 7)": {"taskId": 7, "status": "working"},
}


def per_decode(task: dict[str, Any], number: int, rounds: int) -> float:
    """The best of `rounds` timings, in microseconds per decode."""

    def decode() -> None:
        try:
            mt.Status.from_map(task)
        except mt.InvalidStatus:
            pass

    return min(timeit.repeat(decode, number=number, repeat=rounds)) / number * 1e6


def main() -> None:
    """Print µs per decode for each map."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}")
    for name, task in MAPS.items():
        print(f"{name:20s} {per_decode(task, args.number, args.rounds):6.2f} µs")


if __name__ == "__main__":
    main()
