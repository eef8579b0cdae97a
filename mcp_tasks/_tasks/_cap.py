"""How the client's shared watch (_watch.py) places task ids on listen streams when a server refuses
a ``subscriptions/listen``: pure decisions (ids in, the listens to try out; the I/O is _streams.py's).

A -32602 (invalid params) refusing a listen is read one of two ways (`refusal`):

- It names a limit (a cap on ids per stream) when its message speaks of their number ("too many
  task ids", "taskIds must contain at most 8 entries", "maximum 10", "max 8", "a limit of 8", "no
  more than 8") or its ``data`` states a maximum: ``{"max": 8}``, ``{"maxTaskIds": 8}``,
  ``{"limit": 8}``, ``{"maximum": 8}`` (a key ``max…`` or ``limit``, a positive integer). The cap
  is then the maximum stated (the data's, else the first number after those words in the message),
  else half the ids asked for; a maximum not below the number asked for is not about them (the
  refusal is read as one of ids). Words of a limit with no number count only when they speak of
  ids or their number ("taskIds exceeds the maximum length", not "its maximum lifetime passed").
  Only such a refusal teaches a cap.
- Anything else refuses ids: an id the server does not know, or no longer (stale, expired).
  No server of shared/reference/peers.md refuses a listen by its size; for an unknown id they say
  "Task nope not found", "Failed to retrieve task: Task not found", "Unknown or inaccessible
  taskId". The refused ids are found by halving (`Plan`): the first half of the suspects is tried
  alone (a probe, closed at once when it opens), and the half that holds a refused id is halved
  again; each one found is left off (polled: its wait hears from tasks/get that it is gone) and
  the rest stream. No cap is learnt. At most `MAX_TRIES` listens per placement (the rest is polled).

A learnt cap grows back (`StreamCap`): after `CAP_TRUST` streams opened full under it, it is
doubled, and forgotten once it reaches the number whose refusal taught it; a later refusal that
states a maximum (larger or smaller) sets the cap to it. Under a cap, ids go on up to
`MAX_CAPPED_STREAMS` streams of the cap each (one reader thread each); without one on
`MAX_STREAMS`. Ids beyond are polled.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import NamedTuple

from mcp_tasks._errors import INVALID_PARAMS, McpError

__all__ = [
    "CAP_TRUST",
    "MAX_CAPPED_STREAMS",
    "MAX_STREAMS",
    "MAX_TRIES",
    "Plan",
    "Refusal",
    "StreamCap",
    "refusal",
]

log = logging.getLogger("mcp_tasks")

MAX_STREAMS = 1
"""One stream, widened by reopening: with the futures watcher the library's threads stay at most 4."""
MAX_CAPPED_STREAMS = 4
"""Streams when a server caps ids per stream (16 ids under a cap of 8: two streams of 8)."""
CAP_TRUST = 8
"""Streams opened full under a learnt cap before it is tried doubled (a server's limit may be lifted)."""
MAX_TRIES = 40
"""Listens one placement tries (each refused id costs about log2 of the ids more): the rest is polled."""

CAP_WORDS = re.compile(r"too many|at most|maximum|\bmax\b|\blimit\b|no more than", re.IGNORECASE)
CAP_SUBJECT = re.compile(r"too many|task ?ids|\bids\b|entries|items|length|size|count|number", re.IGNORECASE)
"""What a -32602 refusing a stream says when it is about the number of ids (both, or a number)."""
CAP_NUMBER = re.compile(
    r"(?:at most|maximum|\bmax\b|\blimit\b|no more than)\D{0,12}?(\d+)",
    re.IGNORECASE,
)
"""The maximum a refusal's message states ("at most 8", "maximum of 10", "max: 8", "limit is 8")."""
CAP_KEY = re.compile(r"max\w*|limit", re.IGNORECASE)


class Refusal(NamedTuple):
    """A listen refused with -32602: `cap` when it names a limit, `stated` the maximum it gives."""

    cap: bool
    stated: int | None = None


def refusal(exc: McpError) -> Refusal | None:
    """What a failed listen's error means (None: not a refusal of its ids, e.g. a transport error)."""
    if exc.code != INVALID_PARAMS or exc.kind == "transport":
        return None
    said = " ".join(text for text in (exc.message, exc.data) if isinstance(text, str))
    stated = _stated(exc.data)
    if stated is None:
        number = CAP_NUMBER.search(said)
        stated = int(number.group(1)) if number is not None and int(number.group(1)) > 0 else None
    limit = CAP_WORDS.search(said) is not None and CAP_SUBJECT.search(said) is not None
    return Refusal(stated is not None or limit, stated)


def _stated(data: object) -> int | None:
    """A maximum in a refusal's data: ``{"max": 8}``, ``{"maxTaskIds": 8}``, ``{"limit": 8}``."""
    if not isinstance(data, dict):
        return None
    for key, value in data.items():
        if isinstance(key, str) and CAP_KEY.fullmatch(key) and type(value) is int and value > 0:
            return value
    return None


class StreamCap:
    """The most ids a server takes on one stream, as far as the watch knows (None: no limit known).
    See the module docstring for how it is learnt and grows back.
    """

    def __init__(self) -> None:
        self.value: int | None = None
        self._taught = 0  # the number of ids whose refusal taught it
        self._full = 0  # streams opened full under it

    def chunk(self, ids: list[str]) -> list[str]:
        return ids if self.value is None else ids[: self.value]

    def streams(self) -> int:
        """How many streams the watch may open: more under a cap."""
        return MAX_STREAMS if self.value is None else MAX_CAPPED_STREAMS

    def learn(self, asked: int, stated: int | None) -> None:
        """A stream of `asked` ids was refused for their number (`stated`: the maximum said)."""
        self.value = stated if stated is not None and stated < asked else max(asked // 2, 1)
        self._taught, self._full = asked, 0
        log.debug("the server refused %d ids on one stream; trying %d", asked, self.value)

    def opened(self, carried: int) -> None:
        """A stream of `carried` ids opened."""
        if self.value is None or carried < self.value:
            return
        self._full += 1
        if self._full >= CAP_TRUST:
            self._full = 0
            self.value *= 2
            if self.value >= self._taught:
                self.value = None  # back where it was refused: tried without a cap again


class Try(NamedTuple):
    """A listen to try: a stream for `ids`, or (`probe`) a probe closed at once when it opens."""

    ids: list[str]
    probe: bool = False


class Plan:
    """Where one batch of ids goes: ids in, `Try`s out (`next`), told how each went (`opened`,
    `refused`, `failed`). `merged` are ids on the open stream (one): with them, one stream for all
    replaces it (a merge), unless a cap is learnt meanwhile (then the new ids get streams of their
    own). Ids on no stream in the end are polled by the caller.
    """

    def __init__(self, new: Iterable[str], merged: Iterable[str], streams: int, cap: StreamCap) -> None:
        self.cap = cap
        self.merged = sorted(merged)
        self.pending = sorted(set(new) - set(self.merged))  # on no stream yet, not found refused
        self.streams = streams  # open now (a merge replaces one)
        self.bad: list[str] = []  # ids found refused
        self.tries = 0
        self._proven: set[str] = set()  # in a probe that opened
        self._suspects: list[str] | None = None  # holding at least one refused id (the new ones first)
        self._last: Try | None = None
        self._done = False

    def next(self) -> Try | None:
        """The next listen to try (None: done; what is on no stream is polled)."""
        while not self._done and self.tries < MAX_TRIES:
            suspects = self._suspects
            if suspects is not None and len(suspects) == 1:
                self._found(suspects[0])  # the one left of a set refused
                continue
            attempt = Try(suspects[: len(suspects) // 2], probe=True) if suspects is not None else self._stream()
            if attempt is None:
                return None
            self.tries += 1
            self._last = attempt
            return attempt
        return None

    def _stream(self) -> Try | None:
        if self.merged:
            ids = self.merged + self.pending
            fits = self.cap.value is None or len(ids) <= self.cap.value
            return Try(ids) if self.pending and fits else None
        if not self.pending or self.streams >= self.cap.streams():
            return None
        return Try(self.cap.chunk(self.pending))

    def opened(self) -> None:
        """The last try opened (a probe is closed by the caller)."""
        last = self._take()
        if last.probe:
            self._proven.update(last.ids)
            self._suspects = [i for i in self._suspects or [] if i not in self._proven]
            return
        self.cap.opened(len(last.ids))
        if self.merged:
            self._done = True  # the one stream that replaces the open one
            return
        self.streams += 1
        taken = set(last.ids)
        self.pending = [i for i in self.pending if i not in taken]

    def refused(self, why: Refusal) -> None:
        """The last try was refused with -32602."""
        last = self._take()
        if why.cap and len(last.ids) > 1 and (why.stated is None or why.stated < len(last.ids)):
            self.cap.learn(len(last.ids), why.stated)
            self._suspects = None
            if self.merged and self.streams < self.cap.streams():
                self.merged = []  # they stay on their stream; the new ids go on streams of their own
            return
        if last.probe:
            self._suspects = list(last.ids)
            return
        merged = set(self.merged)
        unproven = [i for i in last.ids if i not in self._proven]
        self._suspects = [i for i in unproven if i not in merged] + [i for i in unproven if i in merged]
        if not self._suspects:
            self._done = True  # refused, though each id was taken alone: nothing more to learn

    def failed(self) -> None:
        """The last try failed otherwise: no more tries."""
        self._take()
        self._done = True

    def _take(self) -> Try:
        last, self._last = self._last, None
        if last is None:
            raise ValueError("no listen was tried")
        return last

    def _found(self, task_id: str) -> None:
        self.bad.append(task_id)
        self._suspects = None
        self.merged = [i for i in self.merged if i != task_id]
        self.pending = [i for i in self.pending if i != task_id]
        log.debug("the server refused a task id on a listen stream; it is polled")
