"""What one `OAuth` knows per server: a record per key (server URL, grant, client) of its tokens,
its client registration and where they came from, kept in the `TokenStore` and cached here, with
the refresh tokens a server refused (never tried again by this object).
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from mcp_tasks._oauth.tokens import TokenStore

__all__ = ["EXPIRY_MARGIN", "MARGIN_SHARE", "Records", "expired"]

EXPIRY_MARGIN = 30.0
"""A token this close to its expiry (seconds) is refreshed before it is sent; a short-lived one
(a lifetime under 300 s) a tenth of its lifetime before, so it is still used most of its life."""

MARGIN_SHARE = 0.1

Record = dict[str, Any]


class Records:
    """The records of one `OAuth` in `store`: `who` names its client in the keys, `dpop_jkt` the
    thumbprint of its DPoP key (None without DPoP). Safe to share between threads.
    """

    def __init__(self, store: TokenStore, grant: str, who: str, dpop_jkt: str | None) -> None:
        self.store = store
        self._grant = grant
        self._who = who
        self._jkt = dpop_jkt
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._refused: set[str] = set()  # refresh tokens the server refused (not tried again)

    def key(self, url: str) -> str:
        """The key of the records for the server at `url`."""
        parts = urllib.parse.urlsplit(url)
        server = urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))
        return f"{server} {self._grant} {self._who}"

    def get(self, key: str) -> Record:
        """The record for `key` (read from the store once, then this object's copy)."""
        with self._lock:
            if key not in self._records:
                self._records[key] = self._usable(self.store.get(key))
            return self._records[key]

    def token(self, key: str) -> str | None:
        """The access token of `key`'s record, if it has one."""
        token = self.get(key).get("access_token")
        return token if isinstance(token, str) else None

    def reload(self, key: str) -> Record:
        """The record as the store has it now (another process may have renewed it), kept as this
        object's copy.
        """
        record = self._usable(self.store.get(key))
        with self._lock:
            self._records[key] = record
        return record

    def save(self, key: str, record: Record) -> None:
        """Keep `record` for `key`, in the store and here."""
        self.store.set(key, record)
        with self._lock:
            self._records[key] = record

    def can_refresh(self, record: Mapping[str, Any]) -> bool:
        """Whether `record` has a refresh token the server has not refused."""
        with self._lock:
            return record.get("refresh_token") not in (None, *self._refused)

    def refuse(self, refresh_token: str) -> None:
        """The server refused `refresh_token`: it is not tried again."""
        with self._lock:
            self._refused.add(refresh_token)

    def _usable(self, stored: Any) -> Record:
        """A stored record as this object can use it: tokens bound to another DPoP key (an earlier
        run's) are left out, since only that key could prove possession of them.
        """
        record = stored if isinstance(stored, dict) else {}
        bound = record.get("dpop_jkt")
        if bound is not None and (self._jkt is None or bound != self._jkt):
            return {k: v for k, v in record.items() if k not in ("access_token", "refresh_token", "dpop_jkt")}
        return record


def expired(record: Mapping[str, Any] | None) -> bool:
    """Whether the token is expired or within its refresh margin: min(30 s, a tenth of its lifetime)."""
    at = (record or {}).get("expires_at")
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return False
    lifetime = (record or {}).get("lifetime")
    margin = EXPIRY_MARGIN
    if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0:
        margin = min(EXPIRY_MARGIN, lifetime * MARGIN_SHARE)
    return time.time() >= at - margin
