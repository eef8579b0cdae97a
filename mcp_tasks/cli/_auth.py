"""The command line's authorization: the ``--oauth`` options made into the `OAuth` an HTTP client
authorizes with, the secrets read from files (or the environment) rather than from the command line.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, Literal

from mcp_tasks._errors import OAuthError
from mcp_tasks.cli._hints import oauth_in_cli_terms
from mcp_tasks.cli._parser import CLIENT_SECRET_ENV, UsageError
from mcp_tasks.cli._target import kind_of

__all__ = ["auth_of"]


def _client_secret(args: argparse.Namespace) -> str | None:
    """The client secret from ``--client-secret``, ``--client-secret-file`` or the environment
    (with ``--client-id``); a file or the environment keeps it out of ``ps`` and shell history.
    """
    given = [flag for flag in ("client_secret", "client_secret_file") if getattr(args, flag) is not None]
    if len(given) > 1:
        raise UsageError("give --client-secret or --client-secret-file, not both")
    if args.client_secret_file is not None:
        return _secret_file(args.client_secret_file, "--client-secret-file")
    if args.client_secret is not None:
        return str(args.client_secret)
    from_env = os.environ.get(CLIENT_SECRET_ENV)
    return from_env if from_env and args.client_id is not None else None


def _secret_file(path: str | None, flag: str) -> str | None:
    """The secret in the file at `path` (None without a path); an unreadable or empty file is a
    usage error naming the flag.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            secret = file.read().strip()
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror}") from None
    if not secret:
        raise UsageError(f"{flag} {path} is empty")
    return secret


def auth_of(args: argparse.Namespace) -> Any:
    """The ``auth=`` object for an HTTP target: `OAuth` with ``--oauth`` (None without)."""
    given = [
        flag
        for flag, value in (
            ("--client-id", args.client_id),
            ("--client-secret", args.client_secret),
            ("--client-secret-file", args.client_secret_file),
            ("--issuer", args.issuer),
            ("--scope", args.scope),
            ("--private-key", args.private_key),
            ("--private-key-id", args.private_key_id),
            ("--dpop", args.dpop or None),
            ("--assertion-file", args.assertion_file),
            ("--id-token-file", args.id_token_file),
            ("--idp-token-endpoint", args.idp_token_endpoint),
            ("--idp-client-id", args.idp_client_id),
            ("--idp-client-secret-file", args.idp_client_secret_file),
        )
        if value is not None
    ]
    if not args.oauth:
        if given:
            raise UsageError(f"{', '.join(given)} go with --oauth")
        return None
    if kind_of(args.target) != "http":
        raise UsageError("--oauth applies to http(s) targets only")
    if (args.client_secret is not None or args.client_secret_file is not None) and args.client_id is None:
        raise UsageError("--client-secret needs the --client-id it belongs to")
    if args.issuer is not None and args.client_id is None:
        raise UsageError("--issuer needs the --client-id it binds")
    secret = _client_secret(args)
    from mcp_tasks._oauth import cli_oauth

    grant: Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed"] = args.grant or (
        "client_credentials"
        if secret is not None or args.private_key is not None
        else "jwt_bearer"
        if args.assertion_file is not None
        else "enterprise_managed"
        if args.id_token_file is not None
        else "authorization_code"
    )
    if grant == "client_credentials" and secret is None and args.private_key is None:
        raise UsageError("--grant client_credentials needs --client-id and --client-secret (or --private-key)")
    try:
        return cli_oauth(
            client_id=args.client_id,
            client_secret=secret,
            scope=args.scope,
            grant=grant,
            issuer=args.issuer,
            private_key=args.private_key,
            private_key_id=args.private_key_id,
            dpop=args.dpop,
            assertion=_reads(args.assertion_file, "--assertion-file"),
            id_token=_reads(args.id_token_file, "--id-token-file"),
            idp_token_endpoint=args.idp_token_endpoint,
            idp_client_id=args.idp_client_id,
            idp_client_secret=_secret_file(args.idp_client_secret_file, "--idp-client-secret-file"),
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(oauth_in_cli_terms(str(exc))) from None
    except ImportError as exc:
        raise UsageError(str(exc)) from None


def _reads(path: str | None, flag: str) -> Callable[[], str] | None:
    """A function that reads the JWT in the file at `path` when called (a workload's token file is
    rotated under the running program), or None without a path.
    """
    if path is None:
        return None

    def read() -> str:
        try:
            with open(path, encoding="utf-8") as file:
                return file.read().strip()
        except OSError as exc:
            raise OAuthError(f"cannot read {flag} {path}: {exc.strerror}") from None

    return read
