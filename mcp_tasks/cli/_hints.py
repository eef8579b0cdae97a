"""The library's advice in the command line's terms.

The library's messages speak to Python callers (``timeout=None``, ``Client.http(url,
session_id=...)``); where the command shows one, the advice is said as a person at the shell
follows it (``--timeout``, ``--session``, ``mcp-tasks get``). The library's messages themselves stay
as they are, for the API's users.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["HINTS", "OAUTH_FLAGS", "in_cli_terms", "oauth_in_cli_terms"]

Rewrite = Callable[["re.Match[str]"], str]

HINTS: tuple[tuple[str, str | Rewrite], ...] = (
    # TaskTimeout
    (
        r" \(timeout=None waits as long as it takes\)",
        " (without --timeout it waits as long as it takes)",
    ),
    (r" \(cancel_on_timeout\)", ""),
    # a 2025-era server's unknown task (_tasks/_legacy.py)
    (
        r"join that session with Client\.http\(url, session_id=status\.session_id\)",
        "join that session with --session SESSION_ID (printed with the task's id)",
    ),
    # InputRequired
    (
        r"answer it with update_task, or wait with input handlers that can",
        "wait for it again with mcp-tasks wait where stdin can answer",
    ),
    # outcome() on a status that lacks its payload
    (r"read it again with get_task", "read it again with mcp-tasks get"),
    # an answer the prompt could not get (_input.py): stdin closed, say
    (r"The input handler for (?P<whose>.+?) could not answer", lambda m: f"mcp-tasks could not answer {m['whose']}"),
    # a server's request of a kind the command cannot answer (_channel.py)
    (
        r"No input handler for the server's (?P<kind>.+?) request",
        lambda m: f"mcp-tasks cannot answer the server's {m['kind']} request (it answers form and URL questions)",
    ),
)
"""Each library phrase (a regular expression) and what the command says instead."""

_COMPILED = tuple((re.compile(pattern), instead) for pattern, instead in HINTS)


def in_cli_terms(message: str) -> str:
    """`message` with each of the library's Python-side hints said in the command line's terms."""
    for pattern, instead in _COMPILED:
        message = pattern.sub(instead, message)
    return message


OAUTH_FLAGS = {
    "private_key_id": "--private-key-id",
    "private_key": "--private-key",
    "client_id": "--client-id",
    "client_secret": "--client-secret-file",
    "assertion": "--assertion-file",
    "id_token": "--id-token-file",
    "idp_token_endpoint": "--idp-token-endpoint",
    "idp_client_id": "--idp-client-id",
    "idp_client_secret": "--idp-client-secret-file",
    "issuer": "--issuer",
    "scope": "--scope",
}
"""`OAuth`'s options, as the flags of the command that set them."""

_GRANT = re.compile(r"\bgrant='(?P<grant>\w+)'")
_OPTION = re.compile(r"(?<![\w-])(?P<name>" + "|".join(OAUTH_FLAGS) + r")(?![\w-])=?")


def oauth_in_cli_terms(message: str) -> str:
    """A message about `OAuth`'s options (a ValueError it raised for the flags given) with each
    option named by its flag: ``grant='jwt_bearer'`` is ``--grant jwt_bearer``, ``client_id`` is
    ``--client-id``.
    """
    message = _GRANT.sub(lambda m: f"--grant {m['grant']}", message)
    message = message.replace(" (the workload's JWT, or a function)", "")
    return _OPTION.sub(lambda m: OAUTH_FLAGS[m["name"]], message)
