"""The Performance page is what docs/performance.py makes of the bench results committed under
bench/results/ (CI never runs the benches: it checks the page against their files).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_performance", ROOT / "docs" / "performance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_what_the_committed_results_say() -> None:
    generator = _generator()
    page = generator.PAGE.read_text()
    assert page == generator.render(), "docs/src/performance.md is stale: run python docs/performance.py"
    assert page.startswith("# Performance\n")
    committed = sorted(p.name for p in (ROOT / "bench" / "results").glob("*.json"))
    known = {section.file for section in generator.SECTIONS}
    assert set(committed) <= known, "a results file the page does not show: add it to SECTIONS"
    for section in generator.SECTIONS:
        assert (f"## {section.title}\n" in page) == (section.file in committed)


def _without_renderers(generator: ModuleType) -> None:
    """Every section shown as the plain table of a file without code of its own."""
    sections = tuple(generator.Section(s.file, s.title) for s in generator.SECTIONS)
    setattr(generator, "SECTIONS", sections)  # noqa: B010 (a module loaded from a file: no attributes typed)


def test_a_results_file_is_shown_when_committed_without_code_of_its_own(tmp_path: Path) -> None:
    generator = _generator()
    _without_renderers(generator)
    data = {
        "bench": "celery_fleet",
        "date": "2026-12-06",
        "machine": {"cores": 2, "cpu": "Some CPU", "python": "3.11.7", "load_before": [1.5], "load_after": [2.25]},
        "sizes": {"workers": 4},
        "rows": [{"fault": "store down", "late": 1.23456}, {"fault": "server restart", "late": 12.5, "lost": 0}],
    }
    (tmp_path / "celery_fleet.json").write_text(json.dumps(data))
    page = generator.render(tmp_path)
    assert "## A Celery fleet" in page and "## A fleet of workers" not in page
    assert "| fault | late | lost |" in page
    assert "| store down | 1.23 | – |" in page and "| server restart | 12.5 | 0 |" in page
    assert "2 cores of Some CPU" in page and "load average 1.50 before, 2.25 after" in page
    assert generator.render(tmp_path / "none").endswith("No bench results are committed yet.\n")


def test_a_results_file_without_rows_shows_its_measures(tmp_path: Path) -> None:
    generator = _generator()
    _without_renderers(generator)
    data = {"size": {"workers": 4}, "tasks": 1445, "kinds": {"ok": 3}, "detail": [{"a": 1}] * 9, "p50": 0.0017}
    (tmp_path / "celery_fleet.json").write_text(json.dumps(data))
    page = generator.render(tmp_path)
    assert "| tasks | 1,445 |" in page and "| kinds | ok 3 |" in page and "| detail | 9 entries |" in page
    assert "| p50 | 0.0017 |" in page
    assert "does not say which machine it ran on" in page and "Sizes: workers 4." in page


def test_a_fleet_under_faults_shows_each_measure_against_its_goal(tmp_path: Path) -> None:
    generator = _generator()
    rows = [
        {"measure": "delivered twice, outside the windows", "value": "0", "goal": "0", "met": True},
        {"measure": "  twice, window: worker died", "value": "2", "goal": "counted apart", "met": None},
    ]
    data = {
        "bench": "fleet_faults",
        "sizes": {"workers": 4},
        "rows": rows,
        "faults": [{"fault": "stop", "start": 39.05}],
    }
    (tmp_path / "fleet_faults.json").write_text(json.dumps(data))
    page = generator.render(tmp_path)
    assert "| delivered twice, outside the windows | 0 | 0 | yes |" in page
    assert "| ↳ twice, window: worker died | 2 | counted apart | – |" in page
    assert "Faults (seconds from the start): stop at 39.0 s." in page


def test_a_celery_fleet_shows_each_run_and_the_ratio_against_the_naive_task(tmp_path: Path) -> None:
    generator = _generator()
    row = {"tasks": 20, "wall": 12.5, "started": 1.0, "late": 0.4, "read": 0.5, "messages": 2.0, "gets": 1.0}
    rows = [
        {"row": "naive", **row, "wall": 80.0},
        {"row": "mcp_tasks.celery", **row, "twice": 0, "unknown": 1, "missing": 0},
    ]
    data = {"bench": "celery_fleet", "sizes": {"naive": 20}, "rows": rows, "naive_ratio": 6.4}
    (tmp_path / "celery_fleet.json").write_text(json.dumps(data))
    page = generator.render(tmp_path)
    assert "| run | calls | wall s | late s | msgs/call | tasks/get per call | twice | unknown | missing |" in page
    assert "| mcp_tasks.celery | 20 | 12.5 | 0.40 | 2.00 | 1.00 | 0 | 1 | 0 |" in page
    assert "For the same 20 calls the naive task took 6.40 × the wall time." in page
