"""The WSGI (PEP 3333) shapes that the MCP app and the HTTP gateway share, here so that neither
imports the other: the app runs under any WSGI server, the gateway serves any WSGI app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Environ", "StartResponse", "WsgiApp"]

StartResponse = Callable[..., Any]
Environ = dict[str, Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]
