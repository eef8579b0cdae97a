"""The clients of a worker process: one per endpoint, made on first use with that endpoint's
auth and headers, closed when the process ends. Keyed by process id, so a prefork child never
uses a client (or a store connection) it inherited from the process that forked it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, Union

from mcp_tasks._client import Client
from mcp_tasks._input import InputHandlers
from mcp_tasks._store import TaskStore, open_store

if TYPE_CHECKING:
    from requests.auth import AuthBase

__all__ = ["AuthOption", "Clients", "HeadersOption", "StoreOption", "per_endpoint"]

T = TypeVar("T")
AuthOption = Union[
    "Mapping[str, AuthBase | tuple[str, str]]",
    "Callable[[str], AuthBase | tuple[str, str] | None]",
    None,
]
HeadersOption = Union[Mapping[str, Mapping[str, str]], Callable[[str], "Mapping[str, str] | None"], None]
StoreOption = Union[str, "os.PathLike[str]", TaskStore]


def per_endpoint(name: str, option: object) -> Callable[[str], object]:
    """An ``auth=``/``headers=`` option as a function of the endpoint (a mapping looked up, a
    function called, None for none); TypeError for anything else.
    """
    if option is None:
        return lambda endpoint: None
    if isinstance(option, Mapping):
        given = dict(option)
        return lambda endpoint: given.get(endpoint)
    if callable(option):
        return option
    raise TypeError(f"{name} must be a mapping from endpoint to value, a function of the endpoint, or None")


class Clients:
    """A worker process's store and its clients by endpoint (made on first use)."""

    def __init__(
        self,
        store: StoreOption,
        input_handlers: InputHandlers | None,
        auth: Callable[[str], object],
        headers: Callable[[str], object],
    ) -> None:
        self._location = store
        self._handlers, self._auth, self._headers = input_handlers, auth, headers
        self._lock = threading.Lock()
        self._pid = -1
        self._store: TaskStore | None = None
        self._clients: dict[str, Client] = {}

    @property
    def answers_input(self) -> bool:
        """Whether the workers answer input themselves (handlers were given)."""
        return self._handlers is not None

    def _mine(self) -> None:
        # Under the lock: what another process made is dropped, never closed from here.
        if self._pid != os.getpid():
            self._pid, self._store, self._clients = os.getpid(), None, {}

    def store(self) -> TaskStore:
        """The store of the calling process (opened on first use when given as a location)."""
        with self._lock:
            self._mine()
            if self._store is None:
                given = self._location
                self._store = open_store(given) if isinstance(given, (str, Path, os.PathLike)) else given
            return self._store

    def client(self, endpoint: str) -> Client:
        """The calling process's client of `endpoint` (made on first use)."""
        store = self.store()
        with self._lock:
            self._mine()
            client = self._clients.get(endpoint)
            if client is None:
                auth: AuthBase | tuple[str, str] | None = self._auth(endpoint)  # type: ignore[assignment]
                headers: Mapping[str, str] | None = self._headers(endpoint)  # type: ignore[assignment]
                client = Client.http(endpoint, auth=auth, headers=headers, input_handlers=self._handlers, store=store)
                self._clients[endpoint] = client
            return client

    def close(self) -> None:
        """Close this process's clients, then its store if it opened it (the worker process ends)."""
        with self._lock:
            if self._pid != os.getpid():
                return
            clients, self._clients = list(self._clients.values()), {}
            store, self._store = self._store, None
        for client in clients:
            client.close()
        closing = getattr(store, "close", None)
        if callable(closing) and store is not self._location:
            closing()
