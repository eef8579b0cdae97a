"""One protocol object per era, chosen once from what the channel agreed: create a task, read it,
answer its input, cancel it, list tasks.

- `Modern` (2026-07-28, the Tasks extension, in `_modern`): every request declares the extension
  in ``_meta``; a ``tools/call`` may answer ``resultType: "task"``; ``tasks/get`` carries the
  payload.
- `Legacy` (2025-11-25 experimental tasks, in `_legacy`): the client opts in per call, the
  creation result nests the task, a completed task's result comes from ``tasks/result``.

What they share (the base `TaskProtocol`, `decode`) is in `_era`; this module chooses between
them and holds the public `capabilities` and `invalid_task`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError
from mcp_tasks._session._channel import Channel
from mcp_tasks._tasks._era import TaskProtocol, decode, malformed_task, tasks_declared
from mcp_tasks._tasks._legacy import Legacy
from mcp_tasks._tasks._modern import Modern

__all__ = ["Legacy", "Modern", "TaskProtocol", "capabilities", "decode", "invalid_task", "protocol_of"]


def capabilities(caps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`caps` (client capabilities) with the Tasks extension declared; other entries stay.

    Pass the result as a client's ``client_capabilities`` to declare Tasks on every request.
    """
    return tasks_declared(caps)


def invalid_task(result: object, cause: BaseException | None = None) -> McpError:
    """The error for a task from the server that does not decode: the server broke the protocol."""
    return malformed_task(result, cause)


def protocol_of(channel: Channel, deadline: Deadline, *, discovered: bool = False) -> TaskProtocol:
    """The task protocol of what `channel` agreed (negotiated within `deadline` if need be).
    `discovered`: a modern connection pinned to its version asks ``server/discover`` first.
    """
    agreed = channel.agree(deadline)
    if discovered and not agreed.legacy and agreed.discovered is None:
        agreed = channel.discover(deadline)
    return Legacy(channel, agreed) if agreed.legacy else Modern(channel, agreed)
