"""Write docs/src/performance.md from the bench results committed under bench/results/: no number
on that page is typed by hand. CI checks that the committed page is what this script makes of the
committed results (tests/test_performance_page.py); it never runs the benches.

    python docs/performance.py            # write the page
    python docs/performance.py --check    # exit 1 if the page is not what the results say

Each bench writes its file with ``--json bench/results/NAME.json`` (bench/_results.py: its rows,
the sizes it ran at, the machine). `SECTIONS` is the page's order: a known file that is absent is
left out, so a bench's results are added by committing its file; one without a renderer of its
own is shown as a plain table of its rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "src" / "performance.md"

Render = Callable[[dict[str, Any]], list[str]]


def number(value: object) -> str:
    """A cell: three significant figures or so, thousands separated; a dash for none."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "–"
        size = abs(value)
        if size >= 100:
            return f"{value:,.0f}"
        if size >= 10:
            return f"{value:.1f}"
        if 0 < size < 0.01:
            return f"{value:.2g}"
        return f"{value:.2f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {number(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(number(v) for v in value)
    return str(value).replace("|", "\\|")


def table(heads: list[str], rows: Iterable[list[object]]) -> list[str]:
    """A Markdown table: a column of text left-aligned, a column of numbers right-aligned."""
    cells = [list(row) for row in rows]
    numeric = [
        any(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in cells)
        for i in range(len(heads))
    ]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join(" ---: " if n else " --- " for n in numeric) + "|"]
    lines += ["| " + " | ".join(number(cell) for cell in row) + " |" for row in cells]
    return lines


META_KEYS = ("bench", "command", "date", "machine", "sizes", "size", "note", "rows")
"""What every results file may carry beside its measures (bench/_results.py)."""


def plain(data: dict[str, Any]) -> list[str]:
    """Any bench's results as they are: its rows, one column per key in the order they first
    appear; a file without rows, one line per measure at its top level (a long list of details
    counted, not shown).
    """
    rows = data.get("rows")
    if not rows:
        measures = [(key, value) for key, value in data.items() if key not in META_KEYS]
        if not measures:
            return ["(no rows)"]
        return table(["measure", "value"], ([key.replace("_", " "), _brief(value)] for key, value in measures))
    heads: list[str] = []
    for row in rows:
        heads += [key for key in row if key not in heads]
    return table(heads, ([row.get(key) for key in heads] for row in rows))


def _brief(value: object) -> object:
    """A value fit for one cell: a list longer than a few items, or of objects, said by its length."""
    if isinstance(value, list) and (len(value) > 5 or any(isinstance(v, (dict, list)) for v in value)):
        return f"{len(value)} entries"
    return value


def _http(data: dict[str, Any]) -> list[str]:
    ours = [r for r in data["rows"] if r["server"] == "mcp_tasks"]
    lines = [
        "Against the mcp_tasks reference server (its own process): each client polls one task, the",
        "clients taking turns every 50 polls; the floor is the stdlib's `http.client` sending the same",
        "bytes on one kept-alive connection. CPU is the median over rounds; × floor is the median of",
        "the ratios taken round by round (a round slowed by load slows every client alike).",
        "",
        *table(["client", "CPU µs per poll", "× stdlib floor"], ([r["client"], r["us"], r["floor"]] for r in ours)),
    ]
    peer = [r for r in data["rows"] if r["server"] == "fastmcp-tasks"]
    if peer:
        lines += [
            "",
            "Against fastmcp-tasks' own server, its own async client beside ours:",
            "",
            *table(["client", "CPU µs per poll", "× fastmcp"], ([r["client"], r["us"], r["fastmcp"]] for r in peer)),
        ]
    else:
        lines += ["", "(fastmcp-tasks' client was not installed for this run.)"]
    return lines


def _stdio(data: dict[str, Any]) -> list[str]:
    return [
        "Against the reference server over stdio (a process of its own per client); the floor is a",
        "bare pipe loop writing the same request line and reading the answer line. The two take",
        "turns every 50 polls; × floor is the median of the ratios taken round by round.",
        "",
        *table(
            ["client", "CPU µs per poll", "× stdlib floor"], ([r["client"], r["us"], r["floor"]] for r in data["rows"])
        ),
    ]


def _direct(data: dict[str, Any]) -> list[str]:
    return [
        "The server in the client's process (`Client.direct`): with a timeout each request runs on",
        "one of the transport's long-lived workers (so that a stalled one can be given up); without",
        "one, in the caller's thread. CPU is the whole process's, server included.",
        "",
        *table(
            ["timeout", "µs per poll", "× no timeout", "CPU µs per poll", "threads started"],
            ([r["way"], r["us"], r["ratio"], r["cpu_us"], r["threads"]] for r in data["rows"]),
        ),
    ]


def _many(data: dict[str, Any]) -> list[str]:
    return [
        "N tasks of a few seconds on one client, the reference server in its own process. Ways:",
        "`listen` `wait_all` (the shared stream), `poll` `wait_all(listen=False)`, `futures`",
        "`submit` then `result()`, `threads` one thread per `await_task` (the baseline), `tlisten`",
        "one thread per `await_task(listen=True)` (thread-per-wait listening, a threaded web",
        "backend's shape), `fastmcp` fastmcp-tasks' own async client on its own server (N ≤ 1,000;",
        "its `late` is an upper bound and its CPU that client's process: see bench/_fastmcp_many.py).",
        "`late`: seconds from the last task ending on the server to the client knowing it; threads:",
        "the library's at the peak; connections: TCP connections to the server at the peak; errors:",
        "waits that failed (a server overloaded by thousands of polling threads drops requests);",
        "streams: listen streams the client opened (merges included).",
        "",
        *table(
            [
                "transport",
                "N",
                "way",
                "late s",
                "CPU ms/task",
                "CPU × threads",
                "wall × threads",
                "threads",
                "gets/task",
                "connections",
                "errors",
                "streams",
            ],
            (
                [
                    r["transport"],
                    r["size"],
                    r["way"],
                    r["late"],
                    r["cpu_ms"],
                    r.get("cpu_vs_threads"),
                    r.get("wall_vs_threads"),
                    r.get("threads"),
                    r.get("gets"),
                    r.get("connections"),
                    r.get("errors"),
                    r.get("opens"),
                ]
                for r in data["rows"]
            ),
        ),
    ]


def _listen(data: dict[str, Any]) -> list[str]:
    lines = [
        "From a task completing on the server to `await_task` returning, following the listen",
        "stream against polling (the server suggests polling every 100 ms); milliseconds.",
        "",
        *table(
            ["transport", "listen p50", "listen p95", "gets/wait", "poll p50", "poll p95", "poll ÷ listen"],
            (
                [
                    r["transport"],
                    r["listen_p50"],
                    r["listen_p95"],
                    r["gets_per_wait"],
                    r["poll_p50"],
                    r["poll_p95"],
                    r["poll_vs_listen"],
                ]
                for r in data["rows"]
            ),
        ),
    ]
    quiet = data.get("quiet")
    if quiet:
        lines += [
            "",
            f"Over HTTP, tasks ending {number(float(data['sizes']['quiet']))} s after their wait began (the stream",
            "quiet longer than the server's keep-alive): "
            f"p50 {number(quiet['p50'])} ms, max {number(quiet['max'])} ms, "
            f"{number(quiet['gets_per_wait'])} gets per wait.",
        ]
    return lines


def _fleet(data: dict[str, Any]) -> list[str]:
    lines = [
        "Worker processes, each starting its tasks on a client with the store and waiting for them",
        "(`wait_all`: all made, then waited for together; `submit`: a future per task), on the",
        "reference server over HTTP. `late`: seconds from the last task ending on the server to",
        "its worker knowing it; the store's CPU and round trips per task are the workers'.",
        "",
        *table(
            ["api", "store", "late s", "wall × none", "store CPU ms/task", "trips/task"],
            (
                [r["api"], r["store"], r.get("late"), r.get("wall_vs_none"), r.get("cpu_ms"), r.get("trips")]
                if "skipped" not in r
                else [r["api"], r["store"], f"skipped: {r['skipped']}", None, None, None]
                for r in data["rows"]
            ),
        ),
    ]
    for adoption in data.get("adoption", []):
        lines += [
            "",
            f"Adoption on {adoption['store']}: a killed worker's tasks followed "
            f"{number(adoption['adopted'])} s after the kill (goal ≤ {number(adoption['goal'])} s).",
        ]
    return lines


def _fleet_faults(data: dict[str, Any]) -> list[str]:
    faults = ", ".join(f"{f['fault']} at {number(float(f['start']))} s" for f in data.get("faults", []))
    lines = [
        "Worker processes sharing PostgreSQL, one running `adopt(forever=True)`, the others each",
        "starting tasks (a quarter asking input) and following them with futures, while the faults",
        "come one after another: the database frozen (SIGSTOP), stopped and started again, every",
        "connection cut, one worker's links slowed, one worker SIGKILLed. A task's outcome is to be",
        "delivered exactly once, apart from three windows counted apart (a worker that died; an",
        "outage longer than the lease; a `close()` that could not reach the store); no end lost,",
        "no input answered twice, no wait ending more than 0.5 s past its deadline.",
        "",
        *table(
            ["measure", "value", "goal", "met"],
            (
                [("↳ " if r["measure"].startswith(" ") else "") + r["measure"].strip(), r["value"], r["goal"], r["met"]]
                for r in data.get("rows", [])
            ),
        ),
    ]
    if faults:
        lines += ["", f"Faults (seconds from the start): {faults}."]
    return lines


def _celery(data: dict[str, Any]) -> list[str]:
    heads = ["run", "calls", "wall s", "late s", "msgs/call", "tasks/get per call", "twice", "unknown", "missing"]
    keys = ("tasks", "wall", "late", "messages", "gets", "twice", "unknown", "missing")
    lines = [
        "MCP tool calls as Celery tasks (`mcp_tasks.celery`, 2 prefork workers of concurrency 2, Redis)",
        "against the naive task that waits in its worker (`call_and_await`), on the reference server",
        "(`pollInterval` 1 s). `late`: from the last MCP task ending to the last result ready; broker",
        "messages and `tasks/get` per call; tools called twice; `unknown`: calls whose worker died",
        "between sending the call and recording its task id, a FAILURE that says the outcome is unknown",
        "(the window the guide states); results missing. `killed`: a worker SIGKILLed once half the",
        "calls have started (a third starts).",
        *(
            [f"The checks go to a queue of their own (`check_queue={checks!r}`)."]
            if (checks := data.get("sizes", {}).get("check_queue"))
            else []
        ),
        "",
        *table(heads, ([r["row"], *(r.get(k) for k in keys)] for r in data.get("rows", []))),
    ]
    if "naive_ratio" in data:
        naive, ratio = number(data.get("sizes", {}).get("naive")), number(float(data["naive_ratio"]))
        lines += ["", f"For the same {naive} calls the naive task took {ratio} × the wall time."]
    return lines


def _imports(data: dict[str, Any]) -> list[str]:
    return [
        "What starting costs: the median wall time of a fresh interpreter for each case, against",
        "one that imports `requests` in the same run (each name of `mcp_tasks` loads on first use).",
        "",
        *table(["case", "ms", "× import requests"], ([r["case"], r["ms"], r["requests"]] for r in data["rows"])),
    ]


class Section(NamedTuple):
    """One bench's part of the page: its results file, its title, how its rows are shown."""

    file: str
    title: str
    render: Render = plain


SECTIONS = (
    Section("http_overhead.json", "Client CPU per tasks/get over HTTP", _http),
    Section("stdio_overhead.json", "Client CPU per tasks/get over stdio", _stdio),
    Section("direct_overhead.json", "tasks/get over the direct transport", _direct),
    Section("many_tasks.json", "Many tasks on one client", _many),
    Section("listen_latency.json", "How soon a listening wait learns", _listen),
    Section("fleet.json", "A fleet of workers", _fleet),
    Section("fleet_faults.json", "A fleet under faults", _fleet_faults),
    Section("celery_fleet.json", "A Celery fleet", _celery),
    Section("import_time.json", "Import time", _imports),
)
"""The page's sections in order; a file not there yet is skipped."""

INTRO = """\
# Performance

<!-- Generated by docs/performance.py from bench/results/*.json: do not edit by hand. -->

What the benches under `bench/` measured, as they wrote it (`--json bench/results/NAME.json`);
this page is generated from those files, and CI checks that it matches them (it does not run
the benches). Each section names the machine and the load it ran under, and the sizes it ran
at: smaller than the benches' defaults where a run had to finish on a shared machine. The
machine was shared with other work, so compare the rows of one section (ratios against a
baseline measured in the same run), not absolute numbers across sections or machines.
"""


def machine(data: dict[str, Any]) -> str:
    """The line that says where and how a bench ran."""
    m = data.get("machine", {})
    before, after = m.get("load_before") or [], m.get("load_after") or []
    load = ""
    if before:
        load = f"; load average {number(float(before[0]))} before"
        load += f", {number(float(after[0]))} after" if after else ""
    given = data.get("sizes") or data.get("size") or {}
    sizes = ", ".join(f"{k} {number(v)}" for k, v in given.items()) if isinstance(given, dict) else number(given)
    if m:
        said = (
            f"Ran {data.get('date', '?')} on {m.get('cores', '?')} cores of {m.get('cpu', '?')}, "
            f"{m.get('implementation', 'Python')} {m.get('python', '?')}, {m.get('system', '?')}{load}. "
        )
    else:
        said = "The file does not say which machine it ran on (bench/_results.py records it). "
    said += f"Sizes: {sizes or 'the defaults'}."
    cores = m.get("cores")
    if isinstance(cores, int) and any(load and load[0] > cores for load in (before, after)):
        said += " The machine was busy with other work (a load average above its cores): wall times are longer than"
        said += " on a quiet one, and CPU ratios within the run hold best."
    if data.get("note"):
        said += f" {data['note']}"
    return said


def render(results: Path = RESULTS) -> str:
    """The page, from the result files in `results`."""
    parts = [INTRO]
    shown = 0
    for section in SECTIONS:
        path = results / section.file
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        command = data.get("command")
        body = [f"## {section.title}", "", *section.render(data), "", machine(data)]
        if command:
            body += ["", f"`{command}`"]
        parts.append("\n".join(body) + "\n")
        shown += 1
    if not shown:
        parts.append("No bench results are committed yet.\n")
    return "\n".join(parts)


def main() -> int:
    """Write the page, or with ``--check`` say whether it is up to date."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs from the results")
    args = parser.parse_args()
    page = render()
    if args.check:
        if PAGE.read_text() != page:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python docs/performance.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
