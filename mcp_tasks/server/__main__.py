"""``python -m mcp_tasks.server module:attr``: serve a `Server` over stdio (or HTTP with --http).

`attr` names a `Server`, or a function that returns one. ``--latency tasks/get=2.5`` delays a
method, to play a slow server.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from mcp_tasks.server._server import Server
from mcp_tasks.server._stdio import serve_stdio


def load_server(target: str) -> Server:
    """Import ``module:attr`` and return the server it names (calling a factory if needed)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"expected module:attr, got {target!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    server = obj() if callable(obj) and not isinstance(obj, Server) else obj
    if not isinstance(server, Server):
        raise SystemExit(f"{target} is not a mcp_tasks.server.Server")
    return server


def _latency(text: str) -> tuple[str, float]:
    method, _, seconds = text.partition("=")
    try:
        return method, float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected METHOD=SECONDS, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and serve until stdin ends (or until interrupted, over HTTP)."""
    parser = argparse.ArgumentParser(prog="python -m mcp_tasks.server", description=__doc__)
    parser.add_argument("target", help="module:attr naming a Server or a function returning one")
    parser.add_argument("--latency", type=_latency, action="append", default=[], metavar="METHOD=SECONDS")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--verbose", action="store_true", help="log to stderr at debug level")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    server = load_server(args.target)
    server.latency.update(dict(args.latency))
    if args.http:
        from mcp_tasks.server._http_server import serve_forever

        host, _, port = args.http.rpartition(":")
        serve_forever(server, host or "127.0.0.1", int(port))
    else:
        serve_stdio(server)


if __name__ == "__main__":
    main()
