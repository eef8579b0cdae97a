"""A completed task whose result the server will not give: ``tasks/get`` said completed, then
``tasks/result`` was refused (-32602, as ``mcp-celery`` 0.2.0 answers; or the method is
missing). The task is not lost, and reading its status is no failure: the status read is the
completed one, carrying the refusal, and `outcome()` of it raises an error that says the result
could not be fetched, with the server's own words.
"""

from __future__ import annotations

from mcp_tasks._errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError, ProtocolError, TransportError
from mcp_tasks._redact import redact_server_text, short_id
from mcp_tasks._status import Status
from mcp_tasks._tasks._failed import FailedWait

__all__ = ["refused", "unfetched"]


def refused(exc: McpError) -> bool:
    """Whether `exc`, the answer to ``tasks/result``, is the server refusing the result for good
    (not a connection that failed, nor an answer that broke the protocol).
    """
    if isinstance(exc, (TransportError, ProtocolError)):
        return False
    return exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND)


def unfetched(status: Status, refusal: McpError) -> FailedWait:
    """The completed `status`, whose ``outcome()`` raises the error saying its result could not
    be fetched (the server's refusal is its cause).
    """
    said = redact_server_text(refusal.message, status.task_id)
    error = McpError(
        refusal.code,
        f"Task {short_id(status.task_id)} completed, but its result could not be fetched: the server "
        f"refused tasks/result ({said}, error {refusal.code}) after tasks/get said completed",
        {"taskId": status.task_id, "reason": "result_refused"},
        "protocol",
        refusal,
    )
    return FailedWait.of(status, error)
