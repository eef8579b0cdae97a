"""Many tasks in a real notebook kernel (nbclient, ipykernel): `StatusDisplay` keeps one output
of the set up to date (updated in place, not one output per status), and two tasks that ask at
once are asked one after the other through the kernel's ``input()``, each question naming its task.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import ROOT

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from tests.people.test_notebook import AnsweringClient  # noqa: E402 (after the skips)

CELLS = [
    f"import sys; sys.path.insert(0, {str(ROOT)!r})",
    """\
import concurrent.futures
import threading

import mcp_tasks as mt
from mcp_tasks.server import Server

server = Server(poll_interval=0.02)
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
answered = threading.Event()
names = []


@server.tool(task="required")
def step(ctx, n: int) -> dict:
    ctx.report(f"step {n} under way")
    answered.wait(60)
    return {"n": n}


@server.tool(task="required")
def ask(ctx, who: str) -> dict:
    name = ctx.elicit("form", f"Tell me, {who}", FORM)["content"]["name"]
    names.append(name)
    if len(names) == 2:
        answered.set()
    return {"who": who, "name": name}


@server.tool(task="required")
def boom(ctx) -> dict:
    raise RuntimeError("boom on purpose")


import logging
logging.getLogger("mcp_tasks.server").setLevel(logging.ERROR)
client = mt.Client.direct(server, input_handlers=mt.InputHandlers.interactive())
with mt.StatusDisplay() as show:
    futures = [mt.submit(client, "step", {"n": n}, on_status=show) for n in (1, 2)]
    futures.append(mt.submit(client, "boom", on_status=show))
    futures += [mt.submit(client, "ask", {"who": who}, on_status=show) for who in ("first", "second")]
    concurrent.futures.wait(futures, timeout=120)
""",
    """\
tasks = mt.wait_all(client, [f.task_id for f in futures], timeout=30, on_status=mt.StatusDisplay())
client.close()
server.close()
print(sorted(f.result()["structuredContent"]["name"] for f in futures[3:]))
""",
]


def displays(cell: Any) -> list[Any]:
    return [o for o in cell.outputs if o["output_type"] in ("display_data", "update_display_data")]


def test_a_set_is_one_updating_output_and_two_questions_come_one_after_the_other() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    client = AnsweringClient(nb, ["Ada", "Bob"], timeout=120, kernel_name="python3")
    client.execute()
    errors = [o for cell in nb.cells for o in cell.outputs if o["output_type"] == "error"]
    assert not errors, errors
    batch, again = nb.cells[1], nb.cells[2]
    # One output for the whole set, updated in place: it shows the end.
    (shown,) = displays(batch)
    assert "4/5 done, 1 failed" in shown["data"]["text/plain"], shown
    assert "<progress value='5' max='5'>" in shown["data"]["text/html"]
    assert "4/5 tasks over" not in shown["data"]["text/html"] and "5/5 tasks over" in shown["data"]["text/html"]
    # The questions: each names its task by its call, asked whole (the prompt follows its own header).
    text = "".join(o.get("text", "") for o in batch.outputs if o["output_type"] == "stream")
    headers = re.findall(r'\[ask \{"who": "(\w+)"\} \S+…\S+\] The server asks: Tell me, (\w+)', text)
    assert all(called == who for called, who in headers), text  # each names its call
    assert [who for _, who in headers] in (["first", "second"], ["second", "first"]), text
    assert sorted(client.prompts) == [
        f"Tell me, {who} — name [string] (empty to decline): " for who in ("first", "second")
    ]
    # A set wait with a display of its own: one output, already at the end.
    (ended,) = displays(again)
    assert "4/5 done, 1 failed" in ended["data"]["text/plain"]
    assert again.outputs[-1]["text"].strip() == "['Ada', 'Bob']"
