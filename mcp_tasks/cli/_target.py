"""The command line's TARGET: which kind of server it names (an http(s) URL, ``module:attr`` in
this process, or a command line that starts a stdio server), the server a ``module:attr`` names,
and the URL a person meant when they left out the ``http://``.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import re
import shlex
import shutil
import sys
from typing import Any, Literal

from mcp_tasks.cli._parser import UsageError

__all__ = ["check_target", "kind_of", "load_server"]

Kind = Literal["http", "module", "stdio"]

# host:port, maybe a path: what a URL is without its scheme (never a module:attr, whose attr is
# a Python name, nor a command line, which has no ":digits").
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*):(?P<port>\d{1,5})(?:/\S*)?$")
# host/path with no port: localhost, an IP address, or a dotted name ending in letters.
_HOST_PATH = re.compile(r"^(?P<host>localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/\S*$")


def kind_of(target: str) -> Kind:
    """``http`` for an http(s) URL, ``module`` for ``module:attr`` (both Python names), else
    ``stdio`` (a command line).
    """
    if target.startswith(("http://", "https://")):
        return "http"
    head, sep, attr = target.partition(":")
    if sep and attr.isidentifier() and all(part.isidentifier() for part in head.split(".")):
        return "module"
    return "stdio"


def _local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _meant(target: str) -> str | None:
    """The URL `target` looks like once given a scheme, or None when it does not look like one."""
    if " " in target.strip() or kind_of(target) != "stdio":
        return None
    text = target.strip()
    matched = _HOST_PORT.match(text)
    if matched is not None:
        return f"http://{text}"
    matched = _HOST_PATH.match(text)
    if matched is None or os.path.exists(text) or shutil.which(text) is not None:
        return None
    host = matched["host"]
    if not _local(host) and not host.rsplit(".", 1)[-1].isalpha():
        return None
    return f"{'http' if _local(host) else 'https'}://{text}"


def check_target(target: str) -> Kind:
    """The kind of `target`; a `UsageError` saying "did you mean http://…?" for a URL without its
    scheme, and for an empty target.
    """
    if not target.strip():
        raise UsageError("the TARGET is empty")
    meant = _meant(target)
    if meant is not None:
        raise UsageError(
            f"TARGET {target!r} looks like a URL without its scheme: did you mean {meant}? "
            "(a TARGET is an http(s) URL, module:attr, or a quoted command line)"
        )
    kind = kind_of(target)
    if kind == "stdio" and not shlex.split(target):
        raise UsageError("the TARGET is empty")
    return kind


def load_server(target: str) -> Any:
    """Import ``module:attr`` from the current directory; the Server it names (or makes)."""
    from mcp_tasks.server import Server

    module_name, _, attr = target.partition(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r} (looked in {here} and sys.path): {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    server = obj() if callable(obj) and not isinstance(obj, Server) else obj
    if not callable(getattr(server, "handle", None)):
        raise UsageError(f"{target} is not a server (a mcp_tasks.server.Server, or a function returning one)")
    return server
