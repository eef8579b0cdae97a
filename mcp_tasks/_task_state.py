"""A task's state, the one enumeration every layer reads: which states are terminal, and which
payload each implies on the wire.
"""

from __future__ import annotations

import enum
from typing import Literal

__all__ = ["KNOWN_STATES", "MAX_SAFE_INT", "PAYLOAD", "TERMINAL", "Era", "TaskState"]

Era = Literal["modern", "legacy"]
"""Which revision's tasks a status belongs to: 2026-07-28 (modern) or 2025-11-25 (legacy)."""

MAX_SAFE_INT = 2**53 - 1
"""The largest integer every JSON peer reads exactly: a larger ttlMs or pollIntervalMs is ignored
(seconds from it would overflow a float), a larger error code refused."""


class TaskState(str, enum.Enum):
    """A task's status. `UNKNOWN` stands for a value this client does not know (kept in
    ``Status.raw``); it is not terminal, and a wait treats it like `WORKING`.
    """

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


KNOWN_STATES = {state.value: state for state in TaskState if state is not TaskState.UNKNOWN}
TERMINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELLED})
PAYLOAD = {
    TaskState.INPUT_REQUIRED: "inputRequests",
    TaskState.COMPLETED: "result",
    TaskState.FAILED: "error",
}
