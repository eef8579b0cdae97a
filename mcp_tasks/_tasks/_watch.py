"""One client's shared watch on its tasks: the listen stream(s) that carry every task id being
waited on, by any thread, and the news they bring to the waits (a channel attachment).

- Waits `want()` task ids into an `Inbox` and take news out of it in their own thread: a full
  Status (a notification that carries what the status needs) or a cue (`READ`: read the task once).
  A task placed on a stream, or given up to polling, is cued once: its wait reads it then (not
  before: one read per task when the stream brings the rest). The manager helps with the reads
  a new stream calls for (`claim`): it reads from the last cued back while the waits read from
  the first on, so that 10,000 tasks made first and then waited on are caught up with two reads
  in flight.
- On a 2026-07-28 connection one manager thread (``mcp_tasks-watch``) opens the streams: new ids are
  gathered for a moment and placed on a stream of their own while fewer than `MAX_STREAMS` are open,
  else merged with the open ones into one stream (opened before the old ones close, so no
  notification falls between). A server's cap on ids per stream is learnt only from a -32602 that
  says so (it names a limit: the chunk is halved), or when the chunk without its new ids is refused
  too; a refusal of new ids alone has those ids polled (their waits hear why). A learnt cap is tried
  doubled again after `CAP_TRUST` streams opened under it. Ids beyond `MAX_STREAMS` streams, ids the
  acknowledgement leaves out, and ids whose stream dropped `MAX_REOPENS` times are polled by their
  waits. Each stream costs one thread, its reader (``mcp_tasks-listen-<id>``), which turns its
  events into news here; so the watch runs at most ``1 + MAX_STREAMS + 1`` threads (the manager, and
  the readers while a merged stream replaces the old one) for all the client's waits, whatever their
  number.
- On a 2025-11-25 session the status notifications the session pushes unasked are cues.
"""

from __future__ import annotations

import contextvars
import enum
import logging
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcp_tasks._status import Status
from mcp_tasks._subscription import Closed, Dropped, Event, Subscription
from mcp_tasks._tasks._protocol import TaskProtocol, decode, protocol_of
from mcp_tasks._tasks._side import TaskSide, side_of
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from mcp_tasks._channel import Channel

__all__ = ["MAX_REOPENS", "MAX_STREAMS", "READ", "Inbox", "Watch", "watch_of"]

log = logging.getLogger("mcp_tasks")


class Cue(enum.Enum):
    """News that is not a Status."""

    READ = "read"
    """Read the task once (a notification without the full status, lost events, a new stream)."""


READ = Cue.READ
News = Status | Cue
TASK_NOTIFICATIONS = frozenset({"notifications/tasks", "notifications/tasks/status"})
MAX_STREAMS = 1
"""One stream, widened by reopening: with the futures watcher the library's threads stay at most 4
(a server that caps ids per stream has the rest polled: each costs a tasks/get per poll interval).
"""
MAX_REOPENS = 3
MAX_OPEN_FAILURES = 3
GATHER = 0.02
"""Seconds new ids are gathered before a stream is opened for them (10,000 creations, few opens)..."""
MERGE_GATHER = 0.25
"""...and before the open streams are merged with them into one (a larger stream, reopened less often)."""
CAP_TRUST = 8
"""Streams opened under a learnt cap before it is tried doubled (a server's limit may be lifted)."""
CAP_REFUSAL = re.compile(r"at most|too many|maximum|\bmax\b|limit|exceed", re.IGNORECASE)
"""What a -32602 refusing a stream says when it is about the number of ids."""
OPEN_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0


class Inbox:
    """The news of one wait (a group of tasks): task id -> the latest Status, or `READ`. Its
    `changed` (on the watch's lock) is notified only when news of its own tasks comes, or the
    watch closes: a thousand waits are not all woken by each one's news.
    """

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.news: dict[str, News] = {}
        self.changed = threading.Condition(watch.lock)
        watch.register(self)

    def take(self) -> dict[str, News]:
        """Everything that came since the last take (the watch's lock held by the caller)."""
        news, self.news = self.news, {}
        return news


class _Stream:
    """One listen stream: its ids, and the events its reader brought before the watch took it on."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None  # set once acknowledged and taken on
        self.ids: set[str] = set()
        self.live = 0  # how many of its ids are wanted and followed on it
        self.closing = False
        self.early: list[Event] = []  # events that came between its acknowledgement and then


class CatchUp:
    """The reads a new stream calls for (its ids' state before it): the waits read them from the
    first on (`claim`), the manager from the last back (`next`), so that two reads are in flight.
    Kept under the watch's lock.
    """

    def __init__(self) -> None:
        self.due: set[str] = set()  # ids a new stream took, not yet read since
        self.order: list[str] = []  # the same, in the order they came
        self.reading: str | None = None  # the id the manager reads now
        self.caught: set[str] = set()  # ids the manager read (or reads): their waits need not
        self.overtaken = False  # news of `reading` came on its stream meanwhile

    def add(self, task_id: str) -> None:
        self.due.add(task_id)
        self.order.append(task_id)

    def forget(self, task_id: str) -> None:
        self.due.discard(task_id)
        self.caught.discard(task_id)

    def claim(self, task_id: str) -> bool:
        """Whether a wait should read `task_id` itself (False: the manager read it: news comes)."""
        self.due.discard(task_id)
        if task_id in self.caught:
            self.caught.discard(task_id)
            return False
        return True

    def next(self) -> str | None:
        """The next id for the manager to read (the last one due), now `reading`."""
        while self.order:
            candidate = self.order.pop()
            if candidate in self.due:
                self.due.discard(candidate)
                self.reading, self.overtaken = candidate, False
                self.caught.add(candidate)
                return candidate
        return None

    def news(self, task_id: str) -> None:
        """News of `task_id` came on its stream: fresher than a catch-up read in flight."""
        if task_id == self.reading:
            self.overtaken = True

    def read(self, status: News) -> bool:
        """The manager's read of `reading` ended with `status` (`READ`: it failed); whether to
        tell it (not when the stream's news overtook it).
        """
        task_id, self.reading = self.reading, None
        if (status is READ or self.overtaken) and task_id is not None:
            self.caught.discard(task_id)  # its wait reads it if its news says so
        return not self.overtaken


class Watch:
    """See the module docstring. Safe to share between threads; `close()` joins its threads."""

    def __init__(self, channel: Channel, side: TaskSide) -> None:
        self.channel = channel
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # the manager's: ids to place, streams to close, reads
        self._inboxes: weakref.WeakSet[Inbox] = weakref.WeakSet()
        self.opens = 0  # streams opened so far (the benchmark reports it)
        self._wanted: dict[str, list[Inbox]] = {}
        self._unplaced: set[str] = set()  # wanted, on no stream yet, not polled for good
        self._streamed: dict[str, _Stream] = {}  # acknowledged on a stream
        self._polled: set[str] = set()  # polled for good (left out, dropped too often, no listen)
        self._drops: dict[str, int] = {}
        self._streams: list[_Stream] = []
        self._closing: list[_Stream] = []
        self._cap: int | None = None
        self._under_cap = 0  # streams opened under the learnt cap
        self._listen = True
        self._failures = 0
        self._stop = threading.Event()
        self._manager: threading.Thread | None = None
        self._meta: Any = None
        self._protocol: TaskProtocol | None = None
        self._catch = CatchUp()
        self._scopes: dict[str, Callable[[], AbstractContextManager[None]]] = {}
        self._context: contextvars.Context | None = None
        side.listeners.append(self._session_notification)

    # -- the waits' side ----------------------------------------------------------------------

    def register(self, inbox: Inbox) -> None:
        """`inbox` is woken when the watch closes."""
        with self.lock:
            self._inboxes.add(inbox)

    def want(
        self,
        inbox: Inbox,
        ids: Iterable[str],
        *,
        stream: bool,
        scopes: Mapping[str, Callable[[], AbstractContextManager[None]]] | None = None,
    ) -> None:
        """Send news of `ids` to `inbox`; `stream`: put them on a listen stream (2026-07-28).
        `scopes`: per id, the block in which a read the watch makes for it is that wait's (its span).
        """
        with self.changed:
            for task_id in ids:
                self._wanted.setdefault(task_id, []).append(inbox)
                if scopes is not None and task_id in scopes:
                    self._scopes.setdefault(task_id, scopes[task_id])
                if not stream:
                    continue
                if self._listen and task_id not in self._streamed and task_id not in self._polled:
                    self._unplaced.add(task_id)  # the cue comes when a stream takes it, or not
                    if self._context is None:  # the stream opens in the first waiter's context
                        self._context = contextvars.copy_context()  # (its trace span, say)
                else:
                    inbox.news[task_id] = READ  # already placed (or no listen): read it now
            if stream and self._unplaced and self._manager is None and not self._stop.is_set():
                self._manager = start_thread("watch", self._manage)
            self.changed.notify_all()

    def drop(self, inbox: Inbox, ids: Iterable[str]) -> None:
        """`inbox` no longer wants news of `ids` (their streams close when no wait wants them)."""
        with self.changed:
            for task_id in ids:
                inboxes = self._wanted.get(task_id, [])
                if inbox in inboxes:
                    inboxes.remove(inbox)
                if not inboxes:
                    self._wanted.pop(task_id, None)
                    self._unplaced.discard(task_id)
                    self._polled.discard(task_id)
                    self._drops.pop(task_id, None)
                    self._catch.forget(task_id)
                    self._scopes.pop(task_id, None)
                    stream = self._streamed.pop(task_id, None)
                    if stream is not None:
                        stream.live -= 1
                        if stream.live <= 0 and stream in self._streams:
                            self._retire(stream)  # narrowed to nothing: the manager closes it
            self.changed.notify_all()

    def claim(self, task_id: str) -> bool:
        """Whether a wait should read `task_id` now: False while the manager reads it to catch up
        (its status comes as news). A wait that reads it first spares the manager that read.
        """
        with self.changed:
            return self._catch.claim(task_id)

    def placed(self) -> set[str]:
        """The ids acknowledged on an open stream now."""
        with self.changed:
            return set(self._streamed)

    def streamed(self, task_id: str) -> bool:
        """Whether a stream acknowledged `task_id` (its wait then reads it rarely)."""
        return task_id in self._streamed

    # -- news ---------------------------------------------------------------------------------

    def _tell(self, task_id: str, news: News) -> None:
        """Give `news` of a task to the waits that want it, and wake them (the lock held)."""
        for inbox in self._wanted.get(task_id, ()):
            kept = inbox.news.get(task_id)
            if not (isinstance(kept, Status) and kept.terminal):  # the first terminal one stays
                inbox.news[task_id] = news
            inbox.changed.notify()

    def _session_notification(self, method: str, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        if isinstance(task_id, str):
            with self.changed:
                self._tell(task_id, READ)  # a 2025-era status never carries the result

    def _event(self, stream: _Stream, event: Event) -> None:
        """An event of `stream`, in its reader thread (the subscription's worker: no thread of
        the watch's own): news, or at its end a reopen or polls.
        """
        with self.changed:
            if stream.subscription is None:
                if not stream.closing:
                    stream.early.append(event)  # taken on by `_add_stream`, which replays it
                return
            self._take_event(stream, event)

    def _take_event(self, stream: _Stream, event: Event) -> None:
        """`event` of a stream the watch follows (the lock held)."""
        if isinstance(event, Closed):
            if not stream.closing:
                stream.closing = True
                self._dropped(stream, event.error)
        elif isinstance(event, Dropped):
            for task_id in stream.ids:
                self._tell(task_id, READ)
        elif event.method in TASK_NOTIFICATIONS and not stream.closing:
            self._notified(event.params, stream)

    def _notified(self, params: dict[str, Any], stream: _Stream) -> None:
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or task_id not in stream.ids:
            return
        self._catch.news(task_id)  # at least as fresh as a catch-up read in flight
        status: Status | None
        try:
            status = decode(params, "modern", task_id)
        except McpError:
            status = None
        self._tell(task_id, status if status is not None and status.detailed else READ)

    def _dropped(self, stream: _Stream, error: McpError | None) -> None:
        log.debug("a listen stream of %d tasks ended (%s); reopening or polling", len(stream.ids), error)
        if stream in self._streams:
            self._streams.remove(stream)
        self._closing.append(stream)  # its reader has ended: the manager closes and joins it
        for task_id in stream.ids:
            if self._streamed.get(task_id) is stream:
                del self._streamed[task_id]
            if task_id not in self._wanted:
                continue
            self._drops[task_id] = drops = self._drops.get(task_id, 0) + 1
            if drops >= MAX_REOPENS:
                self._polled.add(task_id)
            else:
                self._unplaced.add(task_id)
            self._tell(task_id, READ)  # what the stream said before it ended may be lost
        self.changed.notify_all()  # the manager reopens or closes

    # -- the manager thread -------------------------------------------------------------------

    def _manage(self) -> None:
        while not self._stop.is_set():
            with self.changed:
                closing, self._closing = self._closing, []
                if not closing and not self._unplaced and not self._catch.due:
                    if not self._stop.is_set():  # read under the lock: `close` notifies under it
                        self.changed.wait()
                    continue
            self._shut(closing)
            if not self._unplaced:
                self._catch_up()
                continue
            self._stop.wait(GATHER if len(self._streams) < MAX_STREAMS else MERGE_GATHER)
            with self.changed:
                batch = set(self._unplaced)
                self._unplaced.clear()
                context, self._context = self._context, None
                streams = len(self._streams)
                merged = set(self._streamed)  # wanted ids on the open streams
            if not batch or self._stop.is_set():
                continue
            run = context.run if context is not None else _call
            if streams < MAX_STREAMS:
                run(self._place, batch, set(), MAX_STREAMS - streams)
            elif streams == MAX_STREAMS and (self._cap is None or len(merged) + len(batch) <= self._cap):
                run(self._place, batch, merged, 1, False)
            else:
                self._place(batch, set(), 0)  # no room: polled

    def _catch_up(self) -> None:
        """Read tasks a new stream took, from the last cued back, while their waits read them from
        the first on (`claim`): two reads in flight instead of one, and no thread more. Returns
        as soon as streams are to be opened or closed.
        """
        while not self._stop.is_set() and self._protocol is not None:
            with self.changed:
                if self._unplaced or self._closing:
                    return
                task_id = self._catch.next()
                if task_id is None:
                    return
                scope = self._scopes.get(task_id, nullcontext)
            status: News
            try:
                with scope():
                    status = self._protocol.read(task_id, Deadline(OPEN_TIMEOUT), self._meta)
            except McpError:
                status = READ  # its wait reads it, and hears why it failed
            with self.changed:
                if self._catch.read(status):
                    self._tell(task_id, status)

    def _retire(self, stream: _Stream) -> None:
        stream.closing = True
        self._streams.remove(stream)
        for task_id in stream.ids:
            if self._streamed.get(task_id) is stream:
                del self._streamed[task_id]
        self._closing.append(stream)  # closed by the manager, outside the lock

    @staticmethod
    def _shut(streams: list[_Stream]) -> None:
        for stream in streams:
            if stream.subscription is not None:
                stream.subscription.close()  # joins its reader (bounded)

    def _place(self, batch: set[str], merged: set[str], slots: int, split: bool = True) -> None:
        """Open up to `slots` streams for `batch` (and `merged`, ids already on streams: their
        streams close once the new one is acknowledged; never `split` then, so that the streams
        stay at most ``MAX_STREAMS + 1``); what finds no place is polled.
        """
        ids = sorted(merged) + sorted(batch - merged)
        while ids and slots > 0 and self._listen and not self._stop.is_set():
            chunk = ids if self._cap is None else ids[: self._cap]
            refused = self._open(chunk)
            if refused is None:
                ids = ids[len(chunk) :]
                slots -= 1
                continue
            old = [i for i in chunk if i in merged]
            if refused == "ids" and old and len(old) < len(chunk):
                # Not said to be about the number of ids: one of the new ids may be what the server
                # refuses. The stream without them: when it opens, the new ones are polled.
                if self._open(old) is None:
                    break
                refused = "cap"  # the old ids alone were refused too: a cap after all
            if refused in ("cap", "ids") and len(chunk) > 1:  # (new ids alone: halving finds a bad one)
                self._learn_cap(len(chunk) // 2)
                continue  # try the smaller chunk
            break
        with self.changed:
            for task_id in ids:
                if task_id in self._wanted and task_id not in self._streamed:
                    self._poll(task_id)

    def _learn_cap(self, cap: int) -> None:
        self._cap, self._under_cap = max(cap, 1), 0
        log.debug("the server refused more ids on one stream; trying %d", self._cap)

    def _opened_under_cap(self) -> None:
        """One more stream opened: a learnt cap is tried doubled after `CAP_TRUST` of them."""
        if self._cap is not None:
            self._under_cap += 1
            if self._under_cap >= CAP_TRUST:
                self._cap, self._under_cap = self._cap * 2, 0

    def _open(self, ids: list[str]) -> str | None:
        """Open a stream for `ids`: None when it opened; else why not: ``"cap"`` (a -32602 that
        names a limit), ``"ids"`` (another -32602), ``"other"``.
        """
        try:
            if self._protocol is None:
                self._protocol = protocol_of(self.channel, Deadline(OPEN_TIMEOUT))
                self._meta = self._protocol.meta()
            stream = _Stream()
            subscription = self.channel.open_listen(
                {"taskIds": ids}, Deadline(OPEN_TIMEOUT), self._meta, sink=lambda event: self._event(stream, event)
            )
        except McpError as exc:
            return self._open_failed(ids, exc)
        accepted = subscription.accepted.get("taskIds")
        if not isinstance(accepted, list):
            with self.changed:
                stream.closing = True
            subscription.close()
            log.debug("the listen acknowledgement has no taskIds: the client's tasks are polled")
            self._no_listen()
            return "other"
        self.opens += 1
        self._opened_under_cap()
        with self.changed:
            if not self._stop.is_set():
                self._add_stream(stream, subscription, accepted, ids)
                return None
            stream.closing = True
        subscription.close()  # the watch closed while this stream was opening
        return "other"

    def _add_stream(self, stream: _Stream, subscription: Subscription, accepted: list[Any], ids: list[str]) -> None:
        """Start following a new stream (the lock held): cue the ids it took, poll those it left,
        then take the events that came meanwhile.
        """
        asked = set(ids)
        stream.subscription = subscription
        stream.ids = {i for i in accepted if isinstance(i, str) and i in asked}
        self._streams.append(stream)
        for task_id in ids:
            if task_id not in self._wanted:
                continue
            if task_id in stream.ids:
                was = self._streamed.get(task_id)
                self._streamed[task_id] = stream
                stream.live += 1
                if was is None:
                    self._tell(task_id, READ)  # catch up on what came before the stream
                    self._catch.add(task_id)  # (its wait, or the manager, reads it)
                else:
                    was.live -= 1  # merged into the new stream
            elif task_id not in self._streamed:
                self._poll(task_id)  # left out: its wait polls it
        for old in list(self._streams):
            if old.live <= 0:
                self._retire(old)  # nothing left on it (merged, or narrowed meanwhile)
        early, stream.early = stream.early, []
        for event in early:
            self._take_event(stream, event)

    def _open_failed(self, ids: list[str], exc: McpError) -> str:
        if exc.code == METHOD_NOT_FOUND:
            log.debug("the server has no subscriptions/listen: the client's tasks are polled")
            self._no_listen()
            return "other"
        if exc.code == INVALID_PARAMS and exc.kind != "transport":
            if len(ids) > 1 and CAP_REFUSAL.search(exc.message or ""):
                return "cap"
            return "ids"  # an id the server does not know (its wait polls it and hears why), or a cap unsaid
        self._failures += 1
        log.debug("could not open a listen stream (%s)", exc.message)
        if self._failures >= MAX_OPEN_FAILURES:
            self._no_listen()
        return "other"

    def _no_listen(self) -> None:
        with self.changed:
            self._listen = False
            for task_id in self._unplaced:
                self._poll(task_id)
            self._unplaced.clear()

    def _poll(self, task_id: str) -> None:
        """`task_id` is on no stream for good: its waits poll it, starting now (the lock held)."""
        self._polled.add(task_id)
        self._tell(task_id, READ)

    # -- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the streams (the channel's close calls this before the transport closes)."""
        self._stop.set()
        with self.changed:
            streams, self._streams = list(self._streams) + self._closing, []
            self._closing = []
            for stream in streams:
                stream.closing = True
            self.changed.notify_all()
            for inbox in list(self._inboxes):
                inbox.changed.notify_all()
        self._shut(streams)

    def join(self) -> None:
        """Join the manager thread (the channel's close calls this once the transport is closed,
        which ends a stream it may be opening).
        """
        if self._manager is not None:
            join_all([self._manager], CLOSE_TIMEOUT)


def _call(function: Callable[..., object], *args: object) -> object:
    return function(*args)


def watch_of(channel: Channel) -> Watch:
    """The channel's `Watch` (made on first use)."""
    side = side_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Watch, lambda made: Watch(made, side))
