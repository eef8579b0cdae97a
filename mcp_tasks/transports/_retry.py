"""The retry policy: which failures are worth another attempt, how long to wait, and how often.

Retries live below the client, in the transport's `request`, and always inside the call's one
deadline: a retry that could not start before the deadline is not made, and the last error is
raised with the number of attempts in its data.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

import attrs

from mcp_tasks._clock import pause
from mcp_tasks._errors import ProtocolError, TransportError

if TYPE_CHECKING:
    from mcp_tasks._clock import Deadline

__all__ = ["RETRY_WATCH", "Retry"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")

RETRY_WATCH: ContextVar[Callable[[int, float, TransportError], None] | None] = ContextVar(
    "mcp_tasks_retry_watch", default=None
)
"""Told (retry number, delay, the failure) before each retry made in this context: how a traced
request records its retries as events. Read only when a retry happens.
"""


def _non_negative(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"Retry.{attribute.name} must be a non-negative number, got {value!r}")


def _count(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"Retry.{attribute.name} must be a non-negative int, got {value!r}")


@attrs.frozen
class Retry:
    """How a transport retries a request that failed transiently.

    Idempotent requests (``tasks/get``, ``tasks/cancel``, ``server/discover``, ``tools/list``,
    ``ping``, a listen's opening…) are retried on any retryable failure: a reset or refused
    connection, a dropped keep-alive connection, HTTP 429, 502, 503 and 504. ``tools/call`` and
    ``tasks/update`` are sent again only when they provably never reached the server (the
    connection was refused). Delays grow from `backoff` by doubling up to `max_backoff`, with up to
    `jitter` of each delay added at random; a server's ``Retry-After`` is honoured up to
    `max_retry_after` seconds. `attempts` counts the retries after the first try; ``Retry(0)``
    (or ``retries=0`` on a Client) turns retrying off. A `ProtocolError` (the server broke the
    protocol) is never retried: the same request would get the same answer.

    Why these defaults: the retries bridge what a rolling restart or a load balancer switching
    instances looks like from here (a reset, a refused connect, a 502/503 for a moment): three
    quick retries, 0.05 s, 0.1 s and 0.2 s apart (up to half again with jitter: 0.525 s at
    worst). A server that stays down is reported within a second: a wait polling every 250 ms
    raises at most about 0.8 s after the server died. Longer outages are announced by servers
    with ``Retry-After``, which is honoured within the call's deadline.
    """

    attempts: int = attrs.field(default=3, validator=_count)
    backoff: float = attrs.field(default=0.05, validator=_non_negative)
    max_backoff: float = attrs.field(default=2.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.5, validator=_non_negative)
    max_retry_after: float = attrs.field(default=30.0, validator=_non_negative)

    @classmethod
    def of(cls, value: Retry | int) -> Retry:
        """A policy from a `Retry` or a number of retries (0: none)."""
        if isinstance(value, Retry):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"retries must be a Retry or an int, got {value!r}")
        return cls(attempts=value)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base: float = min(self.backoff * 2.0 ** (retry - 1), self.max_backoff)
        return base + random.uniform(0.0, base * self.jitter)

    def run(self, attempt: Callable[[], T], deadline: Deadline, *, idempotent: bool, what: str) -> T:
        """Call `attempt` until it succeeds, fails for good, or the policy or deadline says stop."""
        retry = 0
        while True:
            try:
                return attempt()
            except TransportError as exc:
                error = exc
            if not self._again(error, idempotent, retry):
                raise self._final(error, retry + 1)
            retry += 1
            delay = self.delay(retry, error.retry_after)
            left = deadline.remaining()
            if left is not None and delay >= left:
                raise self._final(error, retry)
            log.debug("%s failed (%s); retry %d of %d in %.2fs", what, error.message, retry, self.attempts, delay)
            watch = RETRY_WATCH.get()
            if watch is not None:
                watch(retry, delay, error)
            pause(delay)

    def _again(self, error: TransportError, idempotent: bool, retried: int) -> bool:
        if isinstance(error, ProtocolError):  # not a TransportError today; never retried, whatever it becomes
            return False
        return retried < self.attempts and error.retryable and (idempotent or not error.sent)

    @staticmethod
    def _final(error: TransportError, attempts: int) -> TransportError:
        if attempts > 1:
            data = dict(error.data) if isinstance(error.data, dict) else {}
            data["attempts"] = attempts
            error.data = data
        return error
