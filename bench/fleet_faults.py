"""A fleet through faults (issue 33's goals): N worker processes on PostgreSQL, one of them
running ``adopt(forever=True)``, the others each starting M tasks (a quarter asking input) over
`--spread` seconds and following them with futures, while the database is frozen, stopped, the
connections cut, one worker's links slowed and one worker SIGKILLed. Not a test: it prints a
table (and writes it as JSON with ``--json PATH``).

    python bench/fleet_faults.py [--workers 4] [--tasks 500] [--lease 15] [--quick] [--json PATH]

Its parts: a PostgreSQL cluster of its own (tests/pg.py, in a temporary folder, removed after);
the reference server in a process of its own (bench/_fleet_workers.py: `job`, `asking`, which
asks one form, `hold`); a TCP proxy (bench/_proxy.py) between the workers and each of the two,
one shared and one for the slow worker's links. Each worker plays a machine of its own (its
leases free only when their time runs out). The faults, in order, `--gap` seconds apart:

  freeze   the database's processes stopped with SIGSTOP for `--freeze` s, then SIGCONT
  stop     ``pg_ctl stop -m immediate``, `--stop` s later started again
  cut      every connection through the proxies shut at once (new ones go through)
  slow     worker 1's links (to the database and to the server) answer `--slow` s late, for
           `--slow-for` s
  kill     the last worker SIGKILLed while its tasks run

Then the workers drain and close; the adopter follows the dead worker's tasks and is stopped
with SIGTERM once the store lists nothing unfinished. Counted: outcomes delivered per task (by
any worker, from their own lines), the three windows where a second delivery is allowed counted
apart (a worker that died; an outage longer than the lease; a close() that did not reach the
store); ends recorded per task (a trigger on the store's table: a write that makes a record
finished); tasks the server made whose id the store never got; input keys answered twice (on
the server: each ``tasks/update`` that brings the key); how far past its deadline each wait ends
(a probe in each worker waits 1 s at a time through everything; each ``tools/call`` has 5 s);
close() times; how long the dead worker's tasks wait for a claim.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from bench._fleet_faults_report import report, table  # noqa: E402
from bench._fleet_workers import adopter, submitter  # noqa: E402
from bench._proxy import Proxy  # noqa: E402
from tests.pg import Cluster, running_cluster  # noqa: E402

SIZES = {
    "full": {"workers": 4, "tasks": 500, "lease": 15.0, "freeze": 5.0, "stop": 10.0, "slow": 1.0, "slow_for": 15.0,
             "gap": 17.0, "spread": 130.0, "seconds": (2.0, 6.0)},
    "quick": {"workers": 3, "tasks": 12, "lease": 4.0, "freeze": 1.0, "stop": 1.0, "slow": 1.0, "slow_for": 2.0,
              "gap": 2.0, "spread": 20.0, "seconds": (0.5, 1.5)},
}  # fmt: skip
AUDIT = """
CREATE TABLE public.ends (task_id text, was_finished boolean, finished boolean, status text, at timestamptz);
CREATE FUNCTION public.note_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.ends VALUES (NEW.task_id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.finished END, NEW.finished,
                                  NEW.ref::jsonb #>> '{lastStatus,status}', clock_timestamp());
  RETURN NEW;
END $$;
CREATE TRIGGER note_end AFTER INSERT OR UPDATE ON mcp_tasks.tasks FOR EACH ROW EXECUTE FUNCTION public.note_end();
"""


class Worker:
    """A worker process and the JSON lines it printed (read as they come)."""

    def __init__(self, role: str, cfg: dict[str, Any]) -> None:
        self.role = role
        self.n = cfg["n"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, __file__, f"--{role}", json.dumps(cfg)]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.rows: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            self.rows.append(row)
            if "ready" in row:
                self.ready.set()

    def go(self) -> None:
        """Tell it to begin (a submitter waits for this line)."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def wait(self, timeout: float) -> int | None:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(10)
        return code

    def end(self) -> None:
        """Kill it if it still runs; close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self._reader.join(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


@contextmanager
def served() -> Iterator[str]:
    """The server in a process of its own; its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "mcp_tasks.server", "bench._fleet_workers:make_server", "--http", "127.0.0.1:0"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)
    assert process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


def cluster_pids(cluster: Cluster) -> list[int]:
    """The postmaster and its children."""
    postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["ps", "--ppid", str(postmaster), "-o", "pid="], capture_output=True, text=True)
    return [postmaster, *(int(pid) for pid in children.stdout.split())]


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def run_faults(size: dict[str, Any], cluster: Cluster, proxies: list[Proxy], slow: list[Proxy], victim: Worker,
               t0: float) -> list[dict[str, Any]]:  # fmt: skip
    """The schedule of faults, from `t0`; each fault's start and end (monotonic)."""
    faults: list[dict[str, Any]] = []
    at = t0 + size["gap"]

    def pause_until(when: float) -> None:
        time.sleep(max(0.0, when - time.monotonic()))

    pause_until(at)
    pids = cluster_pids(cluster)
    begun = time.monotonic()
    signal_all(pids, signal.SIGSTOP)
    time.sleep(size["freeze"])
    signal_all(pids, signal.SIGCONT)
    faults.append({"fault": "freeze", "start": begun, "end": time.monotonic(), "outage": True})
    pause_until(time.monotonic() + size["gap"])
    begun = time.monotonic()
    cluster.stop()
    time.sleep(size["stop"])
    cluster.resume()
    faults.append({"fault": "stop", "start": begun, "end": time.monotonic(), "outage": True})
    pause_until(time.monotonic() + size["gap"])
    begun = time.monotonic()
    cut = sum(proxy.cut() for proxy in proxies)
    faults.append({"fault": "cut", "start": begun, "end": time.monotonic(), "connections": cut})
    pause_until(time.monotonic() + size["gap"])
    begun = time.monotonic()
    for proxy in slow:
        proxy.delay = size["slow"]
    time.sleep(size["slow_for"])
    for proxy in slow:
        proxy.delay = 0.0
    faults.append({"fault": "slow", "start": begun, "end": time.monotonic(), "worker": 1})
    pause_until(time.monotonic() + size["gap"])
    begun = time.monotonic()
    victim.process.send_signal(signal.SIGKILL)
    faults.append({"fault": "kill", "start": begun, "end": begun, "worker": victim.n})
    return faults


def unfinished(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT count(*) FROM mcp_tasks.tasks WHERE NOT finished").fetchone()
        return int(row[0]) if row else 0


def store_state(url: str) -> dict[str, Any]:
    """What the store holds at the end: its records, the trigger's notes, the intents with no id."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tasks = {row[0]: row[1] for row in conn.execute("SELECT task_id, finished FROM mcp_tasks.tasks")}
        ends = [list(row) for row in conn.execute("SELECT task_id, was_finished, finished, status FROM public.ends")]
        row = conn.execute("SELECT count(*) FROM mcp_tasks.intents WHERE task_id IS NULL AND result IS NULL").fetchone()
    return {"tasks": tasks, "ends": ends, "unrecorded_intents": int(row[0]) if row else 0}


def run(size: dict[str, Any]) -> dict[str, Any]:
    """One run of the scenario at `size`; the measures (see `report`)."""
    with ExitStack() as stack:
        cluster = stack.enter_context(running_cluster())
        url = cluster.url(cluster.new_database())
        with mt.PostgresTaskStore(url) as store:
            store.unfinished()  # makes the schema, for the trigger
        cluster.sql(AUDIT, url.rsplit("/", 1)[1])
        mcp_url = stack.enter_context(served())
        host, port = mcp_url.split("//", 1)[1].split("/", 1)[0].split(":")
        path = mcp_url.split("//", 1)[1].split("/", 1)[1]
        shared = [stack.enter_context(Proxy(("127.0.0.1", cluster.port), "db")),
                  stack.enter_context(Proxy((host, int(port)), "mcp"))]  # fmt: skip
        slow = [stack.enter_context(Proxy(("127.0.0.1", cluster.port), "db-slow")),
                stack.enter_context(Proxy((host, int(port)), "mcp-slow"))]  # fmt: skip

        def links(proxies: list[Proxy]) -> dict[str, str]:
            db = url.replace(f":{cluster.port}/", f":{proxies[0].port}/")
            return {"db": db, "mcp": f"http://127.0.0.1:{proxies[1].port}/{path}"}

        common = {"lease": size["lease"], "tasks": size["tasks"], "spread": size["spread"],
                  "seconds": size["seconds"], "patience": 900.0}  # fmt: skip
        workers = [Worker("adopter", {**common, **links(shared), "n": 0})]
        for n in range(1, size["workers"]):
            workers.append(Worker("submitter", {**common, **links(slow if n == 1 else shared), "n": n}))
        for worker in workers:
            stack.callback(worker.end)
        for worker in workers:
            if not worker.ready.wait(60):
                raise SystemExit(f"worker {worker.n} did not start")
        t0 = time.monotonic()
        for worker in workers[1:]:
            worker.go()
        faults = run_faults(size, cluster, shared + slow, slow, workers[-1], t0)
        for worker in workers[1:]:
            if worker.wait(1200) is None:
                raise SystemExit(f"worker {worker.n} did not end")
        with mt.Client.http(mcp_url) as plain:
            mt.call_tool(plain, "finish_holds", {})
        settle = time.monotonic() + size["lease"] + 120
        while unfinished(url) and time.monotonic() < settle:
            time.sleep(0.5)
        workers[0].process.send_signal(signal.SIGTERM)
        workers[0].wait(60)
        with mt.Client.http(mcp_url) as plain:
            tally = mt.call_tool(plain, "tally", {})
        assert isinstance(tally, dict)
        state = store_state(url)
    return report(size, faults, workers, tally["structuredContent"], state, t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and short faults (a smoke run)")
    for name, kind in (("workers", int), ("tasks", int), ("lease", float), ("freeze", float), ("stop", float),
                       ("slow", float), ("slow-for", float), ("gap", float), ("spread", float)):  # fmt: skip
        default = SIZES["full"][name.replace("-", "_")]
        parser.add_argument(f"--{name}", type=kind, default=None, help=f"default {default}")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON to PATH")
    parser.add_argument("--submitter", help=argparse.SUPPRESS)
    parser.add_argument("--adopter", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.submitter:
        return submitter(json.loads(args.submitter))
    if args.adopter:
        return adopter(json.loads(args.adopter))
    size: dict[str, Any] = dict(SIZES["quick" if args.quick else "full"])
    for name in size:
        given = getattr(args, name, None)
        if given is not None:
            size[name] = given
    if size["workers"] < 3:
        parser.error("--workers must be at least 3 (an adopter, the slow worker, the one killed)")
    results = run(size)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
