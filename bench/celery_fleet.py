"""MCP calls as Celery tasks (issue 35), with real parts: a redis-server, 2 prefork workers of
concurrency 2, the reference server over HTTP in this process. Not a test: it prints a table.

    python bench/celery_fleet.py [--tasks 1000] [--seconds 10] [--naive 20] [--same-queue] [--json PATH]

The checks go to a queue of their own (``check_queue="mcp-checks"``, the workers run with
``-Q celery,mcp-checks``), as the guide recommends; ``--same-queue`` sends them to the call's.

Rows:

  mcp_tasks.celery  --tasks calls of a tool that sleeps --seconds, through `McpTasks`
  naive             --naive calls through a task that waits in its worker (`call_and_await`)
  mcp_tasks.celery  the same --naive calls through `McpTasks` (the ratio's other side)
  killed            --tasks calls through `McpTasks`, one worker SIGKILLed mid-run (a third starts)

Columns: `wall`, from the first delay() to the last result read; `started`, when the last MCP
task was made (the starts' share of the wall); `late`, how long after the ideal the last result
was ready (its ``date_done`` in the backend; the ideal: the moment the last MCP task ended on
the server); `read`, when the bench had read them all, against the same ideal;
broker messages per task (Redis LPUSH calls: every message sent to a queue, checks included);
`tasks/get` per task (as the server counts them); tools called twice; outcomes unknown (a worker
killed between sending a call and recording its task id: a FAILURE that says so, the window the
guide states); results missing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench._results import Results  # noqa: E402
from mcp_tasks.celery import TaskError  # noqa: E402
from mcp_tasks.server import Server, ToolContext, serve_http  # noqa: E402
from tests.celery.conftest import Redis, Worker  # noqa: E402


class Served:
    """The reference server: `nap` sleeps and notes when it ended; calls and tasks/get counted."""

    def __init__(self) -> None:
        self.server = Server("celery-fleet", poll_interval=1.0, task_ttl=3600, max_jobs=50_000, max_tasks=100_000)
        self.lock = threading.Lock()
        self.calls: Counter[int] = Counter()
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.gets = 0
        self.server.on_request = self._noted

        @self.server.tool(task="optional")
        def nap(ctx: ToolContext, n: int, seconds: float) -> dict[str, Any]:
            with self.lock:
                self.calls[n] += 1
                self.starts.append(time.time())
            ctx.sleep(seconds)
            with self.lock:
                self.ends.append(time.time())
            return {"n": n}

        self.http = serve_http(self.server)
        self.url = self.http.url

    def _noted(self, method: str, params: dict[str, Any]) -> None:
        if method == "tasks/get":
            with self.lock:
                self.gets += 1

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.starts.clear()
            self.ends.clear()
            self.gets = 0

    def close(self) -> None:
        self.http.close()
        self.server.close()


def lpushes(url: str) -> int:
    with redis.Redis.from_url(f"{url}/0") as broker:
        stats = broker.info("commandstats")
    return int(stats.get("cmdstat_lpush", {}).get("calls", 0))


def _epoch(when: Any) -> float:
    """A result's ``date_done`` (a datetime, naive meaning UTC) in epoch seconds."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return float(when.timestamp())


def run(
    name: str, served: Served, redis_url: str, task: Any, count: int, seconds: float, kill: Any = None
) -> dict[str, Any]:
    """Send `count` calls through `task`, read every result; the row."""
    served.reset()
    pushed = lpushes(redis_url)
    began = time.time()
    results = [task.delay(served.url, "nap", {"n": n, "seconds": seconds}) for n in range(count)]
    if kill is not None:
        while len(served.calls) < count // 2:
            time.sleep(0.05)
        kill()
    missing, unknown, ready = 0, 0, []
    for result in results:
        try:
            result.get(timeout=max(600.0, 4 * seconds * count))
        except TaskError as exc:
            if "outcome is unknown" not in exc.message:
                raise
            unknown += 1  # its worker died between the call and its task id: the stated window
            ready.append(_epoch(result.date_done))
        except Exception as exc:
            print(f"{name}: a result is missing: {exc!r}", file=sys.stderr)
            missing += 1
        else:
            ready.append(_epoch(result.date_done))
    done = time.time()
    ideal = max(served.ends) if served.ends else done
    return {
        "row": name,
        "tasks": count,
        "wall": done - began,
        "started": (max(served.starts) if served.starts else done) - began,
        "late": (max(ready) if ready else done) - ideal,
        "read": done - ideal,
        "messages": (lpushes(redis_url) - pushed) / count,
        "gets": served.gets / count,
        "twice": sum(1 for n in served.calls.values() if n > 1),
        "unknown": unknown,
        "missing": missing + (count - len(served.calls)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--naive", type=int, default=20)
    parser.add_argument("--same-queue", action="store_true", help="checks on the call's queue (no check_queue)")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON to PATH")
    options = parser.parse_args()
    checks = "" if options.same_queue else "mcp-checks"
    sizes = {"workers": 2, "concurrency": 2, "tasks": options.tasks, "seconds": options.seconds, "naive": options.naive}
    sizes["check_queue"] = checks or None
    out = Results("celery_fleet", options.json, sizes)
    where = Path(tempfile.mkdtemp())
    server = Redis(where)
    served = Served()
    env = {
        "MCP_CELERY_REDIS": server.url,
        "MCP_CELERY_STORE": str(where / "tasks.sqlite3"),
        "PYTHONPATH": str(ROOT),
        "MCP_CELERY_CHECKS": checks,
    }
    os.environ.update(env)
    from bench._celery_app import mcp, naive

    queues = ",".join(filter(None, ("celery", checks)))
    workers = [Worker(name, env, queue=queues, app="bench._celery_app") for name in ("a", "b")]
    rows = []
    try:
        rows.append(run("mcp_tasks.celery", served, server.url, mcp.call, options.tasks, options.seconds))
        rows.append(run("naive", served, server.url, naive, options.naive, options.seconds))
        rows.append(run("mcp_tasks.celery", served, server.url, mcp.call, options.naive, options.seconds))

        def kill() -> None:
            workers.pop(0).kill()
            workers.append(Worker("c", env, queue=queues, app="bench._celery_app"))

        rows.append(run("killed", served, server.url, mcp.call, options.tasks, options.seconds, kill))
    finally:
        for worker in workers:
            worker.close()
        served.close()
        server.close()
    heads: tuple[str, ...] = ("tasks", "wall s", "started s", "late s", "read s", "msgs/task", "gets/task")
    heads += ("twice", "unknown", "missing")
    widths = (6, 8, 9, 7, 7, 9, 9, 5, 7, 7)
    print(f"{'row':18} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    for r in rows:
        print(
            f"{r['row']:18} {r['tasks']:>6} {r['wall']:>8.1f} {r['started']:>9.1f} {r['late']:>7.2f} {r['read']:>7.2f} "
            f"{r['messages']:>9.2f} {r['gets']:>9.2f} {r['twice']:>5} {r['unknown']:>7} {r['missing']:>7}"
        )
        out.add(**{key: round(value, 3) if isinstance(value, float) else value for key, value in r.items()})
    ratio = rows[1]["wall"] / rows[2]["wall"]
    print(f"naive / mcp_tasks.celery wall at {options.naive} tasks: {ratio:.1f}x")
    out.extra["naive_ratio"] = round(ratio, 2)
    out.write()


if __name__ == "__main__":
    main()
