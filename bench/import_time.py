"""What starting costs: wall time of a fresh interpreter that imports mcp_tasks (or runs
``mcp-tasks --help``) against one that imports requests, in the same run. Not a test: it prints a
table of medians and ratios.

    python bench/import_time.py [--runs 40]

Each case runs in a new process, many times, the cases taking turns run by run so that a load that
comes and goes on a shared machine weighs on each alike; the median counts. ``python -c pass`` is
shown as the interpreter's own start, which every case pays. ``--help`` runs the installed
command's own entry point (``from mcp_tasks.cli import main``), not a shell script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._results import Results  # noqa: E402

HELP = "import sys\nfrom mcp_tasks.cli import main\nsys.argv = ['mcp-tasks', '--help']\nmain()"

CASES = (
    ("python -c pass (the interpreter's start)", "pass"),
    ("import requests (the baseline)", "import requests"),
    ("import mcp_tasks", "import mcp_tasks"),
    ("mcp-tasks --help", HELP),
    ("import mcp_tasks; mt.Client, mt.call_and_await", "import mcp_tasks as mt\nmt.Client, mt.call_and_await"),
)


def wall(code: str) -> float:
    """Seconds a new interpreter takes to run `code` and exit (its output thrown away)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    """Run the cases and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/results/)")
    args = parser.parse_args()
    results = Results("import_time", args.json, {"runs": args.runs})
    for _, code in CASES:  # warm the file cache and the .pyc files
        wall(code)
    samples: list[list[float]] = [[] for _ in CASES]
    for _ in range(args.runs):
        for (_, code), taken in zip(CASES, samples, strict=True):
            taken.append(wall(code))
    medians = [statistics.median(taken) for taken in samples]
    baseline = medians[1]
    print(f"{args.runs} runs each, median wall time of a fresh process (python {sys.version.split()[0]})")
    print(f"{'case':<52} {'ms':>8} {'/ requests':>11}")
    for (name, _), median in zip(CASES, medians, strict=True):
        print(f"{name:<52} {median * 1000:8.1f} {median / baseline:10.2f}x")
        results.add(case=name, ms=round(median * 1000, 1), requests=round(median / baseline, 2))
    results.write()


if __name__ == "__main__":
    main()
