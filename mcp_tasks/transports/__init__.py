"""The transports a `Client` talks over: direct (in process), stdio (a subprocess) and Streamable
HTTP. Each implements `Transport`; none knows anything of tasks.
"""

from mcp_tasks.transports._base import Stream, Transport

__all__ = ["Stream", "Transport"]
