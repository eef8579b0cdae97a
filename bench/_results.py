"""What a bench writes with ``--json PATH``: its rows, the sizes it ran at, and the machine it
ran on (cores, CPU model, Python, the load average before and after), for the Performance page
(docs/performance.py renders bench/results/*.json; numbers are never typed by hand).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

__all__ = ["Results"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """The machine a bench runs on, as the page shows it."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
        "load_before": _load(),
    }


class Results:
    """One run's results: made at the start (the load before), written at the end (the load
    after). `path` None: nothing is written (the bench only prints).
    """

    def __init__(self, bench: str, path: str | None, sizes: dict[str, Any], note: str = "") -> None:
        self.bench = bench
        self.path = path
        self.sizes = sizes
        self.note = note
        self.machine = machine()
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.rows: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}

    def add(self, **row: Any) -> None:
        """One row of the bench's table."""
        self.rows.append(row)

    def write(self) -> None:
        """Write the JSON file (when a path was given)."""
        if self.path is None:
            return
        machine = {**self.machine, "load_after": _load()}
        data = {
            "bench": self.bench,
            "command": " ".join(["python", *[_relative(a) for a in sys.argv]]),
            "date": self.started.strftime("%Y-%m-%d"),
            "machine": machine,
            "sizes": self.sizes,
            "note": self.note,
            "rows": self.rows,
            **self.extra,
        }
        Path(self.path).write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def _relative(arg: str) -> str:
    """`arg`, a path under the repository said from its root (a command anyone can run again)."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(Path(arg).resolve().relative_to(root)) if os.path.exists(arg) else arg
    except ValueError:
        return arg
