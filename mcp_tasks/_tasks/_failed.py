"""`FailedWait`: what a wait on many tasks gives in place of a task whose own wait failed."""

from __future__ import annotations

import attrs

from mcp_tasks._redact import short_id
from mcp_tasks._status import Status

__all__ = ["FailedWait"]


@attrs.frozen(repr=False)
class FailedWait(Status):
    """The last Status a wait on many tasks saw of a task whose wait failed (`status` is
    ``unknown`` when it read none), with the `exception` that ended it: a task the server does
    not know (-32602), reads that kept failing, an input handler that raised. `outcome()` of it
    raises that exception. A 2025-era task whose ``tasks/result`` the server refused after
    ``tasks/get`` said completed is read as one too (by `get_task` and every wait): its status
    ``completed``, its exception saying the result could not be fetched.
    """

    exception: Exception = attrs.field(kw_only=True, eq=False)

    @classmethod
    def of(cls, last: Status, exception: Exception) -> FailedWait:
        """`last` (the last Status seen) with the `exception` that ended its wait."""
        fields = {f.name: getattr(last, f.name) for f in attrs.fields(Status) if f.init}
        return cls(**fields, exception=exception)

    def __repr__(self) -> str:
        return f"FailedWait({short_id(self.task_id)}, {self.wire_status}, {type(self.exception).__name__})"
