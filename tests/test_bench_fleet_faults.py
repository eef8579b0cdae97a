"""bench/fleet_faults.py still runs: one tiny round of its scenario (a cluster of its own, the
server and three worker processes, every fault of the schedule, short) makes a report whose counts
add up. Its numbers are the bench's to state, never asserted here (the machine may be loaded).
Its ``--quick`` mode takes 35 to 50 s on a 2-core machine: too long for the suite.
"""

from __future__ import annotations

import json

import pytest

from bench._fleet_faults_report import WINDOWS, table
from bench.fleet_faults import SIZES, run

pytestmark = pytest.mark.timeout(600)  # a hang guard only: the round takes 15 to 60 s

TINY = {**SIZES["quick"], "tasks": 4, "lease": 2.0, "freeze": 0.3, "stop": 0.3, "slow_for": 0.5, "gap": 0.5,
        "spread": 3.0, "seconds": (0.2, 0.4)}  # fmt: skip


def test_one_tiny_round_of_the_fleet_through_faults_adds_up() -> None:
    results = run(TINY)
    assert [fault["fault"] for fault in results["faults"]] == ["freeze", "stop", "cut", "slow", "kill"]
    assert results["tasks"] > 0
    twice = results["delivered_twice"]
    assert results["delivered_once"] + results["delivered_never"] + twice == results["tasks"]
    assert sum(results["twice_in_windows"].values()) + results["twice_outside_windows"] == twice
    assert set(results["twice_in_windows"]) == set(WINDOWS)
    ends = results["ends_recorded_once"] + results["ends_recorded_twice"] + results["ends_never_recorded"]
    assert ends == results["tasks"]
    assert results["probe_waits"] > 0
    assert {"0", "1"} <= set(results["close_s"])  # the adopter and the worker that lived
    assert json.loads(json.dumps(results))["tasks"] == results["tasks"]
    assert "input keys answered twice" in table(results)
