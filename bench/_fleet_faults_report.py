"""The counts of bench/fleet_faults.py, made from what its processes said, the server's tally
and the store's end state; and the table it prints.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

OUTCOMES = ("completed", "failed", "cancelled")
WINDOWS = ("worker died", "outage > lease", "close() cut short")
SOON = 2.0
"""A task claimed this soon after its start (the call's return: its record made) was taken
before its starter's wait held the lease."""


def _worst(values: list[float]) -> float | None:
    return max(values) if values else None


def _p(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else None


def report(size: dict[str, Any], faults: list[dict[str, Any]], workers: list[Any], tally: dict[str, Any],
           state: dict[str, Any], t0: float) -> dict[str, Any]:  # fmt: skip
    """The measures of one run, as plain JSON-able values (times in s from `t0`, when the workers began)."""
    victim = workers[-1]
    kill = next(f["start"] for f in faults if f["fault"] == "kill")
    made = set(tally["created"]["job"]) | set(tally["created"]["asking"])
    asking = set(tally["created"]["asking"])
    deliveries: dict[str, list[tuple[int, float]]] = defaultdict(list)
    errors: Counter[str] = Counter()
    starter: dict[str, int] = {}
    started: dict[str, float] = {}
    closes: dict[int, dict[str, float]] = {}
    probes: list[float] = []
    calls: list[float] = []
    call_kinds: Counter[str] = Counter()
    probe_kinds: Counter[str] = Counter()
    claims: dict[str, float] = {}
    gave_up = 0
    failed_calls: list[list[Any]] = []
    for worker in workers:
        for row in worker.rows:
            if "d" in row and row["d"] in made:
                if row["k"] in OUTCOMES:
                    deliveries[row["d"]].append((worker.n, row["t"]))
                else:
                    errors[row["k"]] += 1
            elif "call" in row:
                calls.append(row["call"])
                call_kinds[row["k"]] += 1
                if row["k"] != "ok":
                    failed_calls.append([worker.n, row["k"], round(row["t"] - t0, 2)])
                if row.get("tid"):
                    starter[row["tid"]] = worker.n
                    started[row["tid"]] = row["r"]  # its record made: claimable from then
            elif "probe" in row:
                probes.append(row["probe"])
                probe_kinds[row["k"]] += 1
            elif "claim" in row:
                claims[row["claim"]] = row["t"]
            elif "close" in row:
                closes[worker.n] = row
            elif "gave_up" in row:
                gave_up += 1
    twice: list[dict[str, Any]] = []
    windows: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for task_id, got in deliveries.items():
        if len(got) < 2:
            continue
        claimed, began = claims.get(task_id), started.get(task_id)
        inside, cause = _cause(size, faults, {n for n, _ in got}, starter.get(task_id), claimed, began, closes)
        (windows if inside else outside)[cause] += 1
        since = None if began is None or claimed is None else round(claimed - began, 2)
        twice.append({"task": task_id[:6], "started_by": starter.get(task_id), "cause": cause,
                      "claimed": None if claimed is None else round(claimed - t0, 2), "claimed_after_start": since,
                      "by": [[n, round(t - t0, 2)] for n, t in got]})  # fmt: skip
    per_task = Counter(min(len(deliveries.get(t, [])), 2) for t in made)
    recorded: Counter[str] = Counter()
    unfinishing = 0
    for task_id, was, now, _status in state["ends"]:
        if now and not was:
            recorded[task_id] += 1
        if was and not now:
            unfinishing += 1
    ends = Counter(min(recorded.get(t, 0), 2) for t in made)
    missing = made - set(state["tasks"])
    answered = Counter(v for k, v in tally["answers"].items() if k.split("/")[0] in asking)
    orphans = [claims[t] - kill for t, n in starter.items() if n == victim.n and t in claims and claims[t] > kill]
    return {
        "size": {k: v for k, v in size.items()},
        "faults": [{k: (round(v - t0, 2) if k in ("start", "end") else v) for k, v in f.items()} for f in faults],
        "tasks": len(made),
        "delivered_once": per_task[1],
        "delivered_never": per_task[0],
        "delivered_never_id_unknown": len({t for t in made if t not in deliveries} & missing),
        "delivered_twice": sum(windows.values()) + sum(outside.values()),
        "twice_in_windows": {w: windows[w] for w in WINDOWS},
        "twice_outside_windows": sum(outside.values()),
        "twice_outside_by_cause": dict(outside),
        "not_outcomes": dict(errors),
        "twice_detail": twice[:200],
        "ends_recorded_once": ends[1],
        "ends_never_recorded": ends[0],
        "ends_recorded_twice": ends[2],
        "finished_made_unfinished": unfinishing,
        "never_recorded": len(missing),
        "unrecorded_intents": state["unrecorded_intents"],
        "never_recorded_silently": max(0, len(missing) - state["unrecorded_intents"]),
        "starts_given_up": gave_up,
        "input_keys": sum(answered.values()),
        "input_keys_answered_twice": sum(c for n, c in answered.items() if n > 1),
        "input_keys_never_answered": len(asking) - sum(answered.values()),
        "probe_waits": len(probes),
        "probe_kinds": dict(probe_kinds),
        "probe_overshoot_p50": _p(probes, 0.5),
        "probe_overshoot_max": _worst(probes),
        "calls": len(calls),
        "call_kinds": dict(call_kinds),
        "call_overshoot_max": _worst(calls),
        "calls_failed": failed_calls[:50],
        "close_s": {str(n): round(c["close"], 3) for n, c in sorted(closes.items())},
        "orphans_claimed": len(orphans),
        "orphan_wait_max": _worst(orphans),
        "orphan_goal": size["lease"] + 1,
    }


def _cause(size: dict[str, Any], faults: list[dict[str, Any]], by: set[int], starter: int | None,
           claimed: float | None, began: float | None, closes: dict[int, Any]) -> tuple[bool, str]:  # fmt: skip
    """Why a task was delivered twice: (in one of the three windows, the cause)."""
    lease = size["lease"]
    kill = next(f for f in faults if f["fault"] == "kill")
    if claimed is None:
        return False, "delivered twice, never claimed"
    if began is not None and claimed - began <= SOON:
        return False, f"claimed <= {SOON:g} s after start (no lease yet)"
    if kill["worker"] in by and claimed >= kill["start"]:
        return True, "worker died"
    for fault in faults:
        if fault.get("outage") and fault["start"] <= claimed <= fault["end"] + lease + 1:
            if fault["end"] - fault["start"] >= lease:
                return True, "outage > lease"
            return False, f"lease lapsed, outage < lease ({fault['fault']})"
        if (
            fault["fault"] == "slow"
            and starter == fault["worker"]
            and fault["start"] <= claimed <= fault["end"] + lease + 1
        ):
            return False, "lease lapsed on the slow link"
    if any(n in closes and claimed >= closes[n]["t"] for n in by if n != 0):
        return True, "close() cut short"
    return False, f"other, claimed {_phase(faults, claimed)}"


def _phase(faults: list[dict[str, Any]], when: float | None) -> str:
    """The fault in whose span (its start to the next one's) `when` falls."""
    if when is None:
        return "never claimed"
    name = "before the faults"
    for fault in faults:
        if when >= fault["start"]:
            name = f"after {fault['fault']}"
    return name


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def table(r: dict[str, Any]) -> str:
    """The printed table: each measure, its value, its goal, and whether it was met."""
    size = r["size"]
    over = max(v for v in (r["probe_overshoot_max"], r["call_overshoot_max"], 0.0) if v is not None)
    adopter_stop = r["close_s"].get("0")
    closes = [v for n, v in r["close_s"].items() if n != "0"]
    rows = [
        ("tasks made on the server", str(r["tasks"]), "", None),
        ("outcome delivered exactly once", str(r["delivered_once"]), "all but the windows", None),
        ("outcome never delivered", str(r["delivered_never"]), "0", r["delivered_never"] == 0),
        ("  of which the id was never recorded", str(r["delivered_never_id_unknown"]), "", None),
        ("delivered twice, outside the windows", str(r["twice_outside_windows"]), "0", r["twice_outside_windows"] == 0),
        *((f"  {cause}", str(n), "", None) for cause, n in sorted(r["twice_outside_by_cause"].items())),
        *((f"  twice, window: {w}", str(n), "counted apart", None) for w, n in r["twice_in_windows"].items()),
        ("ends recorded once", str(r["ends_recorded_once"]), str(r["tasks"]), r["ends_recorded_once"] == r["tasks"]),
        ("ends recorded twice / never", f"{r['ends_recorded_twice']} / {r['ends_never_recorded']}", "0 / 0",
         r["ends_recorded_twice"] == 0 and r["ends_never_recorded"] == 0),
        ("finished records made unfinished", str(r["finished_made_unfinished"]), "0",
         r["finished_made_unfinished"] == 0),
        ("tasks whose id the store never got", str(r["never_recorded"]), "", None),
        ("  intents shown as 'id never recorded'", str(r["unrecorded_intents"]), "", None),
        ("  neither (never recorded, silently)", str(r["never_recorded_silently"]), "0",
         r["never_recorded_silently"] == 0),
        ("input keys answered twice (server)", str(r["input_keys_answered_twice"]), "0",
         r["input_keys_answered_twice"] == 0),
        ("worst overshoot of a wait's deadline", _s(over), "<= 0.50 s", over <= 0.5),
        ("  probe waits (1 s): p50 / max", f"{_s(r['probe_overshoot_p50'])} / {_s(r['probe_overshoot_max'])}",
         f"{r['probe_waits']} waits", None),
        ("  tools/call (5 s): max", _s(r["call_overshoot_max"]), f"{r['calls']} calls", None),
        ("close() of the workers: max", _s(max(closes) if closes else None), "", None),
        ("adopter stopped after SIGTERM", _s(adopter_stop), "", None),
        ("an orphan's wait for a claim: max", _s(r["orphan_wait_max"]), f"<= {r['orphan_goal']:.2f} s",
         None if r["orphan_wait_max"] is None else r["orphan_wait_max"] <= r["orphan_goal"]),
    ]  # fmt: skip
    head = (
        f"{size['workers']} workers (1 adopting) x {size['tasks']} tasks, lease {size['lease']:g} s; faults: "
        + ", ".join(f"{f['fault']} at {f['start']:.0f} s" for f in r["faults"])
    )
    lines = [head, f"{'measure':44} {'value':>15}  {'goal':20} met"]
    for name, value, goal, met in rows:
        lines.append(f"{name:44} {value:>15}  {goal:20} {'' if met is None else ('yes' if met else 'NO')}")
    extras = {"not outcomes": r["not_outcomes"], "probe ends": r["probe_kinds"], "calls": r["call_kinds"]}
    lines.extend(f"{name}: {value}" for name, value in extras.items())
    return "\n".join(lines)
