"""Where OAuth keeps what it obtained: tokens and client registrations, one record per server and client.

A store is any object with ``get(key) -> dict | None`` and ``set(key, record) -> None``.
`MemoryTokenStore` (the default) forgets everything when the process ends; `FileTokenStore` keeps
records in one JSON file that only its owner may read, so a script or the CLI does not have to ask
the user again on its next run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mcp_tasks._oauth.filelock import locked

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "default_config_dir"]


@runtime_checkable
class TokenStore(Protocol):
    """What `OAuth` needs of a store: a record per key, read and replaced whole."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The record for `key`, or None."""

    def set(self, key: str, tokens: dict[str, Any]) -> None:
        """Replace the record for `key`."""


class MemoryTokenStore:
    """Records in this process's memory (the default store): nothing is written anywhere."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        """The record for `key` (a copy), or None."""
        with self._lock:
            record = self._records.get(key)
            return json.loads(json.dumps(record)) if record is not None else None

    def set(self, key: str, tokens: dict[str, Any]) -> None:
        """Replace the record for `key` (a copy is kept)."""
        copy = json.loads(json.dumps(tokens))
        with self._lock:
            self._records[key] = copy

    def __repr__(self) -> str:
        with self._lock:
            return f"<MemoryTokenStore {len(self._records)} record(s)>"


def default_config_dir() -> Path:
    """The user's configuration directory for mcp_tasks (XDG on Linux, APPDATA on Windows)."""
    if os.name == "nt":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "mcp_tasks"


class FileTokenStore:
    """Records in one JSON file, readable and writable by its owner only (mode 0600, in a 0700
    directory it creates). Each `set` rewrites the file atomically under a file lock (``fcntl`` on
    POSIX, ``msvcrt`` on Windows), so a reader never sees half of it and two writers never lose
    each other's records; records are read from the file on every `get`, and `OAuth` reads its
    record again before it refreshes, so processes (a script and the CLI) can share it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> FileTokenStore:
        """The store in the user's configuration directory (``…/mcp_tasks/tokens.json``)."""
        return cls(default_config_dir() / "tokens.json")

    def get(self, key: str) -> dict[str, Any] | None:
        """The record for `key`, or None (also when the file does not exist yet)."""
        with self._lock:
            record = self._read().get(key)
        return record if isinstance(record, dict) else None

    def set(self, key: str, tokens: dict[str, Any]) -> None:
        """Replace the record for `key`, rewriting the file with owner-only permissions. The file
        is locked (against other processes too) from reading it to replacing it, so a record
        another process wrote meanwhile is kept.
        """
        with self._lock, locked(self.path):
            records = self._read()
            records[key] = tokens
            self._write(records)

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            records = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the token store {self.path} is not JSON: {exc}") from None
        if not isinstance(records, dict):
            raise ValueError(f"the token store {self.path} does not hold a JSON object")
        return records

    def _write(self, records: dict[str, Any]) -> None:
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".tokens-", dir=folder)  # created 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump(records, out)
                out.flush()
                os.fsync(out.fileno())
            if os.name != "nt":
                os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.path)!r}>"
