"""The processes of bench/fleet_faults.py: the MCP server it runs, a worker that starts tasks
and follows them (`submit`), and the worker that runs ``adopt(forever=True)``. Each worker
prints one JSON line per event on stdout (flushed at once, so a worker SIGKILLed leaves what it
did before): ``ready``, a delivered outcome (``d``), a probe wait's overshoot (``probe``), a
call's overshoot (``call``), a first status read after a claim (``claim``), ``close``.
"""

from __future__ import annotations

import concurrent.futures
import json
import random
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import mcp_tasks as mt
from mcp_tasks.server import Server, ToolContext

PROBE = 1.0
"""The deadline of each probe wait (s): how far past it the wait ends is the overshoot measured."""
CALL_TIMEOUT = 5.0
"""The deadline of each ``tools/call`` (s): a call that cannot record its intent fails by then."""
GIVE_UP = 180.0
"""A start tried again for this long at most (store or link down), then given up and counted."""
TOOLS = ("job", "asking")


def make_server() -> Server:
    """The server: `job` sleeps, `asking` asks one form half way, `hold` runs until `finish_holds`;
    `tally` says which tasks each tool made and how often each input key was answered (counted
    per ``tasks/update`` that brought it, so an answer sent twice is seen twice).
    """
    created: dict[str, list[str]] = {name: [] for name in (*TOOLS, "hold")}
    answers: Counter[str] = Counter()
    lock = threading.Lock()
    holds = threading.Event()

    def count(method: str, params: dict[str, Any]) -> None:
        if method == "tasks/update" and isinstance(params.get("inputResponses"), dict):
            with lock:
                for key in params["inputResponses"]:
                    answers[f"{params.get('taskId')}/{key}"] += 1

    server = Server("faults", poll_interval=0.5, task_ttl=7200, max_jobs=5000, max_tasks=100_000, on_request=count)

    def made(ctx: ToolContext, tool: str) -> None:
        with lock:
            created[tool].append(str(ctx.task_id))

    @server.tool(task="optional")
    def job(ctx: ToolContext, seconds: float) -> dict[str, Any]:
        made(ctx, "job")
        ctx.sleep(seconds)
        return {"done": True}

    @server.tool(task="optional")
    def asking(ctx: ToolContext, seconds: float) -> dict[str, Any]:
        made(ctx, "asking")
        ctx.sleep(seconds / 2)
        answer = ctx.elicit("go", "Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        ctx.sleep(seconds / 2)
        return {"done": True, "answer": answer.get("action")}

    @server.tool(task="optional")
    def hold(ctx: ToolContext) -> dict[str, Any]:
        made(ctx, "hold")
        while not holds.wait(0.1):
            ctx.check_cancelled()
        return {"held": True}

    @server.tool()
    def finish_holds(ctx: ToolContext) -> dict[str, Any]:
        holds.set()
        return {}

    @server.tool()
    def tally(ctx: ToolContext) -> dict[str, Any]:
        with lock:
            return {"created": {k: list(v) for k, v in created.items()}, "answers": dict(answers)}

    return server


def answer(status: mt.Status) -> dict[str, Any]:
    """Every form asked is accepted."""
    return {key: {"action": "accept", "content": {"ok": True}} for key in status.input_requests}


class Out:
    """JSON lines on stdout, one at a time, flushed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def put(self, **row: Any) -> None:
        line = json.dumps(row)
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def delivered(out: Out, future: concurrent.futures.Future[Any], task_id: str | None) -> None:
    """Say how `future` ended: an outcome (completed, failed, cancelled) or an error that is none."""
    try:
        future.result()
        kind = "completed"
    except (mt.TaskFailed, mt.ToolError):
        kind = "failed"
    except mt.TaskCancelled:
        kind = "cancelled"
    except BaseException as exc:  # a bench counts what it sees
        kind = f"error:{type(exc).__name__}"
    out.put(d=task_id, t=time.monotonic(), k=kind)


def _as_host(name: str) -> None:
    """Each worker plays a machine of its own: a lease frees only when its time runs out."""
    import mcp_tasks._store._holder as holder

    holder.machine_id = lambda: name  # type: ignore[assignment]


def submitter(cfg: dict[str, Any]) -> None:
    """Start cfg["tasks"] tasks at an even pace over cfg["spread"] s from a "go" line on stdin (a quarter
    asking input), each with a key of its own and tried again under it while the store or the link
    is down; follow each with a future; a probe thread waits PROBE s at a time on a task that never
    ends meanwhile; then close.
    """
    _as_host(f"host-{cfg['n']}")
    out = Out()
    rng = random.Random(cfg["n"])
    store = mt.PostgresTaskStore(cfg["db"], lease_ttl=cfg["lease"])
    client = mt.Client.http(cfg["mcp"], store=store, timeout=30)
    out.put(ready=cfg["n"])
    sys.stdin.readline()
    began = time.monotonic()
    stop = threading.Event()
    probing = threading.Thread(target=probe, args=(client, cfg, out, stop), daemon=True)
    probing.start()
    futures: list[concurrent.futures.Future[Any]] = []
    for i in range(cfg["tasks"]):
        time.sleep(max(0.0, began + i * cfg["spread"] / cfg["tasks"] - time.monotonic()))
        tool = "asking" if i % 4 == 0 else "job"
        arguments = {"seconds": round(rng.uniform(*cfg["seconds"]), 2)}
        future = start(client, tool, arguments, f"w{cfg['n']}-{i}", out)
        if future is not None:
            futures.append(future)
    concurrent.futures.wait(futures, timeout=cfg["patience"])
    stop.set()
    probing.join(60)
    closing = time.monotonic()
    client.close()
    closed = time.monotonic()
    store.close()
    out.put(close=closed - closing, store_close=time.monotonic() - closed, t=closing)


def start(client: mt.Client, tool: str, arguments: dict[str, Any], key: str, out: Out) -> mt.TaskFuture | None:
    """Submit under `key`, again under the same key while it fails; None when it is given up."""
    first = time.monotonic()
    while True:
        began = time.monotonic()
        try:
            future = mt.submit(client, tool, arguments, key=key, timeout=CALL_TIMEOUT, input=answer)
        except mt.OutcomeUnknown:
            out.put(call=time.monotonic() - began - CALL_TIMEOUT, k="OutcomeUnknown", key=key, t=began)
            return None  # the intent names no id: the bench counts it against the server's tasks
        except (mt.StoreError, mt.McpError) as exc:
            out.put(call=time.monotonic() - began - CALL_TIMEOUT, k=type(exc).__name__, key=key, t=began)
            if time.monotonic() - first > GIVE_UP:
                out.put(gave_up=key)
                return None
            time.sleep(0.5)
            continue
        returned = time.monotonic()
        out.put(call=returned - began - CALL_TIMEOUT, k="ok", key=key, tid=future.task_id, t=began, r=returned)
        future.add_done_callback(_deliver_to(out, future.task_id))
        return future


def _deliver_to(out: Out, task_id: str | None) -> Callable[[concurrent.futures.Future[Any]], None]:
    """A done-callback saying how the future of `task_id` ended."""
    return lambda future: delivered(out, future, task_id)


def probe(client: mt.Client, cfg: dict[str, Any], out: Out, stop: threading.Event) -> None:
    """Wait PROBE s at a time on a `hold` task, through every fault, saying how late each wait ended."""
    task = None
    tries = 0
    while task is None and not stop.is_set():
        tries += 1  # a key each try: a call cut after its intent was kept is not replayed
        try:
            made = mt.call_tool(client, "hold", {}, key=f"w{cfg['n']}-probe-{tries}", timeout=CALL_TIMEOUT)
        except (mt.StoreError, mt.McpError):
            time.sleep(0.5)
            continue
        task = made if isinstance(made, mt.Status) else None
    while task is not None and not stop.is_set():
        began = time.monotonic()
        try:
            mt.wait_task(client, task, timeout=PROBE)
            kind = "ended"
        except BaseException as exc:  # a bench counts what it sees
            kind = type(exc).__name__
        out.put(probe=time.monotonic() - began - PROBE, k=kind, t=began)
        if kind == "ended":
            return
        if kind != "TaskTimeout":
            time.sleep(0.2)  # an error at once (a refused connection): not a busy loop
    if task is not None:
        try:  # the probe's task is let go: its end recorded, so no worker adopts it
            mt.cancel_task(client, task)
            mt.wait_task(client, task, timeout=10)
        except BaseException:  # a probe's tidying; the counts say the rest
            pass


def adopter(cfg: dict[str, Any]) -> None:
    """``adopt(forever=True)`` until SIGTERM: each first status read of a task it claimed, each
    outcome it delivers, and how long it took to stop once told.
    """
    _as_host(f"host-{cfg['n']}")
    out = Out()
    told: list[float] = []

    def terminate(signum: int, frame: object) -> None:
        told.append(time.monotonic())
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    store = mt.PostgresTaskStore(cfg["db"], lease_ttl=cfg["lease"])
    seen: set[str] = set()

    def read(status: mt.Status) -> None:
        if status.task_id not in seen:
            seen.add(status.task_id)
            out.put(claim=status.task_id, t=time.monotonic())

    out.put(ready=cfg["n"])
    try:
        for future in mt.adopt(store, forever=True, input=answer, on_status=read):
            delivered(out, future, future.task_id)
    except KeyboardInterrupt:
        pass
    stopped = time.monotonic()
    store.close()
    out.put(close=stopped - (told[0] if told else stopped), store_close=time.monotonic() - stopped, t=stopped)
