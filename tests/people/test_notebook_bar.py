"""A task's progress in a real notebook kernel (nbclient, ipykernel): `StatusDisplay` keeps one
output of the task up to date, its HTML a ``<progress>`` bar with the value, total and message the
2025-era server reported (tests/foreign/progress_http.py), its text the terminal's bar.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    f"import sys; sys.path.insert(0, {str(ROOT)!r})",
    """\
import threading

import mcp_tasks as mt
from tests.foreign.progress_http import LegacyProgressServer

server = LegacyProgressServer()
server.start()
client = mt.Client.http(server.url)
status = mt.call_tool(client, "report", {"before": [[1, 4, "rows"]]})
heard = threading.Event()


def finish_when_heard():
    heard.wait(120)
    server.finish(status.task_id)


def ear(progress, total, message):
    if progress == 3:
        heard.set()


finisher = threading.Thread(target=finish_when_heard)
finisher.start()
server.step(status.task_id, 3, 4, "rows")
with mt.StatusDisplay() as show:
    final = mt.wait_task(client, status, on_status=show, on_progress=ear)
finisher.join()
client.close()
server.close()
print(final.wire_status)
""",
]


def displays(cell: Any) -> list[Any]:
    return [o for o in cell.outputs if o["output_type"] in ("display_data", "update_display_data")]


def test_a_task_progress_is_a_progress_bar_in_one_updating_output() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    errors = [o for cell in nb.cells for o in cell.outputs if o["output_type"] == "error"]
    assert not errors, errors
    cell = nb.cells[1]
    (shown,) = displays(cell)  # one output, updated in place
    assert "<progress value='3' max='4'></progress>" in shown["data"]["text/html"], shown
    assert "3/4 (75%) rows" in shown["data"]["text/html"]
    assert "▕█████████   ▏ 3/4 (75%) rows" in shown["data"]["text/plain"]
    assert cell.outputs[-1]["text"].strip() == "completed"
