"""Servers to try a script against, each runnable over stdio with ``python -m``.

- ``python -m mcp_tasks.examples.export_server``: the reference server (2026-07-28, Tasks) with an
  ``export`` task tool that asks for confirmation and reports progress;
- ``python -m mcp_tasks.examples.legacy_export_server``: the same tool on a 2025-11-25 server (the
  handshake era, experimental tasks), written with the standard library only, as the servers people
  run today behave.
"""
