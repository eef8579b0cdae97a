"""The manager of a client's listen streams (``mcp_tasks-watch``), the lower half of its shared
watch (_watch.py, which adds the waits' side and the news): it gathers the ids the waits want,
opens a stream for them (reading its acknowledgement itself) or merges them with the open one (the
old one still read for a moment, `Linger`, before the new one's reader starts), follows a `Plan`
when a listen is refused (a server's cap on ids per stream, `StreamCap`, or ids it refuses: _cap.py),
closes the streams no wait wants, and reads what a new stream calls for (`CatchUp`); when to place
the ids is `Gather`'s decision (_gather.py), when to let go of ids kept for no wait `Kept`'s
(_kept.py). See _watch.py's docstring for the whole.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from mcp_tasks._clock import Deadline, wait_condition
from mcp_tasks._errors import METHOD_NOT_FOUND, McpError
from mcp_tasks._session._subscription import Event, Subscription
from mcp_tasks._tasks._cap import MAX_STREAMS, Plan, Refusal, StreamCap, refusal
from mcp_tasks._tasks._gather import GATHER, MERGE_GATHER, Gather
from mcp_tasks._tasks._kept import Kept
from mcp_tasks._tasks._news import READ, CatchUp, Inbox, Linger, News, Stream
from mcp_tasks._tasks._protocol import TaskProtocol, protocol_of

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = ["GATHER", "MAX_REOPENS", "MAX_STREAMS", "MERGE_GATHER", "OPEN_TIMEOUT", "Streams"]

log = logging.getLogger("mcp_tasks")

MAX_REOPENS = 3
MAX_OPEN_FAILURES = 3
OPEN_TIMEOUT = 10.0


class Streams:
    """The streams' state and the manager thread's work (the lock `changed` guards it all)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # the manager's: ids to place, streams to close, reads
        self.opens = 0  # streams opened so far (the benchmark reports it)
        self._wanted: dict[str, list[Inbox]] = {}
        self._unplaced: set[str] = set()  # wanted, on no stream yet, not polled for good
        self._streamed: dict[str, Stream] = {}  # acknowledged on a stream
        self._polled: set[str] = set()  # polled for good (left out, dropped too often, no listen)
        self._drops: dict[str, int] = {}
        self._streams: list[Stream] = []
        self._closing: list[Stream] = []
        self._starting: list[Stream] = []  # taken on, their readers not started yet
        self._lingering: list[Linger] = []  # streams merged into a newer one, read until caught up
        self._cap = StreamCap()
        self._listen = True
        self._failures = 0
        self._stop = threading.Event()
        self._manager: threading.Thread | None = None
        self._meta: Any = None
        self._protocol: TaskProtocol | None = None
        self._catch = CatchUp()
        self._scopes: dict[str, Callable[[], AbstractContextManager[None]]] = {}
        self._context: contextvars.Context | None = None  # the next placement's (a wait's, or a creator's)
        self._context_kept = False  # `_context` is a creating call's: a wait's replaces it
        self._gather = Gather()
        self._urgent = False  # a wait wants some id to place (else only the keeper does)
        self._kept = Kept()  # ids of tasks made here that no wait wants yet (see _kept.py)
        self._keeper = Inbox(self.lock)  # what the streams said of them (nobody takes it)

    # -- what the watch does with news (_watch.py) ----------------------------------------------

    def _tell(self, task_id: str, news: News) -> None:
        raise NotImplementedError

    def _event(self, stream: Stream, event: Event) -> None:
        raise NotImplementedError

    def _let_go(self, ids: list[str]) -> None:
        raise NotImplementedError

    # -- the manager thread -------------------------------------------------------------------

    def _manage(self) -> None:
        while not self._stop.is_set():
            with self.changed:
                now = time.monotonic()
                self._let_go(self._kept.due(now))
                self._end_lingering()
                closing, self._closing = self._closing, []
                starting, self._starting = self._starting, []
                placing = self._may_place()
                if self._unplaced:
                    self._gather.notice(now)  # (a linger may hold them)
                gather = self._gather_for(now) if placing else 0.0
                if not closing and not starting and (gather > 0 if placing else not self._catch.due):
                    if not self._stop.is_set():  # read under the lock: `close` notifies under it
                        wakes = [x.until for x in self._lingering] + ([now + gather] if placing else [])
                        kept = self._kept.next()
                        wakes += [] if kept is None else [kept]
                        wait_condition(self.changed, min(wakes, default=None))  # (a wait's id cuts it short)
                    continue
            self._shut(closing)  # (a lingering stream's reader is joined before its successor's starts)
            self._start(starting)
            if not placing:
                self._catch_up()
                continue
            if gather > 0:
                continue  # gathering on (what was to close or start is done)
            with self.changed:
                batch = set(self._unplaced)
                self._unplaced.clear()
                self._urgent = False
                context, self._context, self._context_kept = self._context, None, False
                streams = len(self._streams)
                merged = set(self._streamed)  # wanted ids on the open streams
            if batch and not self._stop.is_set():
                run = context.run if context is not None else _call
                if streams < self._cap.streams():
                    run(self._place, Plan(batch, (), streams, self._cap))
                elif streams == 1 and (self._cap.value is None or len(merged) + len(batch) <= self._cap.value):
                    run(self._place, Plan(batch, merged, streams, self._cap))
                else:
                    self._place(Plan(batch, (), streams, self._cap))  # no room: polled
            self._gather.placed(time.monotonic())  # (only this thread notices: none came meanwhile)

    def _gather_for(self, now: float) -> float:
        """Seconds to gather the ids waiting for a stream on (the lock held): `Gather`'s say."""
        capped = self._cap.value is not None
        streams, room = len(self._streams), self._cap.streams()
        oldest = self._kept.oldest()
        return self._gather.wait(now, streams=streams, room=room, capped=capped, waited=self._urgent, oldest=oldest)

    def _catch_up(self) -> None:
        """Read tasks a new stream took, the oldest first, while their waits read them too
        (`claim`: never both): two reads in flight instead of one, and no thread more. Returns
        as soon as streams are to be opened or closed.
        """
        while not self._stop.is_set() and self._protocol is not None:
            with self.changed:
                if self._may_place() or self._closing or any(x.due(time.monotonic()) for x in self._lingering):
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

    def _may_place(self) -> bool:
        """Whether there are ids to place, and room: no merge opens while a merged stream lingers
        (the lock held).
        """
        return bool(self._unplaced) and not (self._lingering and len(self._streams) >= MAX_STREAMS)

    def _linger(self, old: Stream, new: Stream) -> None:
        """`old`'s ids are all on `new` now: read it on until it has caught up (the lock held)."""
        self._streams.remove(old)
        self._lingering.append(Linger(old, new))
        self.changed.notify_all()  # the manager times its end

    def _end_lingering(self, stream: Stream | None = None) -> None:
        """Close the lingering streams that are due, or those `stream` was or succeeded, and have
        their successors' readers started (the lock held).
        """
        now = time.monotonic()
        for linger in list(self._lingering):
            if linger.due(now) or stream in (linger.old, linger.new):
                self._lingering.remove(linger)
                linger.old.closing = True
                self._closing.append(linger.old)
                linger.new.replayed |= linger.heard
                if self._lingered(linger.new) is None:
                    self._starting.append(linger.new)

    def _lingered(self, stream: Stream) -> Linger | None:
        """The `Linger` that `stream` is the old or the new stream of (the lock held)."""
        for linger in self._lingering:
            if stream is linger.old or stream is linger.new:
                return linger
        return None

    def _retire(self, stream: Stream) -> None:
        stream.closing = True
        self._streams.remove(stream)
        self._end_lingering(stream)  # the one it replaced has nothing left to say either
        for task_id in stream.ids:
            if self._streamed.get(task_id) is stream:
                del self._streamed[task_id]
        self._closing.append(stream)  # closed by the manager, outside the lock

    @staticmethod
    def _start(streams: list[Stream]) -> None:
        for stream in streams:
            if stream.subscription is not None and not stream.closing:
                stream.subscription.start()  # (not once closed: `close` may have raced it)

    @staticmethod
    def _shut(streams: list[Stream]) -> None:
        for stream in streams:
            if stream.subscription is not None:
                stream.subscription.close()  # joins its reader (bounded)

    def _place(self, plan: Plan) -> None:
        """Try the listens `plan` calls for (a stream for its ids, merged with the open one's, or
        probes for the ids the server refuses); what finds no place is polled.
        """
        while self._listen and not self._stop.is_set():
            attempt = plan.next()
            if attempt is None:
                break
            refused = self._open(attempt.ids, probe=attempt.probe)
            if refused is None:
                plan.opened()
            elif isinstance(refused, Refusal):
                plan.refused(refused)
            else:
                plan.failed()
        with self.changed:
            for task_id in plan.pending:
                if task_id in self._wanted and task_id not in self._streamed:
                    self._poll(task_id)
            for task_id in plan.bad:
                if task_id in self._wanted and task_id not in self._streamed:
                    self._poll(task_id)  # (its wait hears from tasks/get why)

    def _open(self, ids: list[str], *, probe: bool = False) -> Refusal | str | None:
        """Open a stream for `ids` (a `probe`: closed at once): None when it opened; else why not:
        the `Refusal` (a -32602), or ``"other"``.
        """
        try:
            if self._protocol is None:
                self._protocol = protocol_of(self.channel, Deadline(OPEN_TIMEOUT))
                self._meta = self._protocol.meta()
            stream = Stream()
            subscription = self.channel.open_listen(
                {"taskIds": ids},
                Deadline(OPEN_TIMEOUT),
                self._meta,
                sink=lambda event: self._event(stream, event),
                start=False,  # the acknowledgement is read here: no thread more while it comes
            )
        except McpError as exc:
            return self._open_failed(exc)
        accepted = subscription.accepted.get("taskIds")
        if not isinstance(accepted, list):
            with self.changed:
                stream.closing = True
            subscription.close()
            log.debug("the listen acknowledgement has no taskIds: the client's tasks are polled")
            self._no_listen()
            return "other"
        self.opens += 1
        with self.changed:
            if not self._stop.is_set() and not probe:
                self._add_stream(stream, subscription, accepted, ids)
                return None
            stream.closing = True
        subscription.close()  # a probe, or the watch closed while this stream was opening
        return None if probe and not self._stop.is_set() else "other"

    def _add_stream(self, stream: Stream, subscription: Subscription, accepted: list[Any], ids: list[str]) -> None:
        """Start following a new stream (the lock held): cue the ids it took, poll those it left;
        its reader starts (the manager) once no stream it replaced lingers.
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
                    if self._waited(task_id):
                        self._catch.add(task_id)  # (its wait, or the manager, reads it)
                else:
                    was.live -= 1  # merged into the new stream
            elif task_id not in self._streamed:
                self._poll(task_id)  # left out: its wait polls it
        for old in list(self._streams):
            if old.live <= 0:
                if old is not stream and old.ids & stream.ids:
                    self._linger(old, stream)  # merged: read on until it has caught up
                else:
                    self._retire(old)  # narrowed to nothing meanwhile
        if self._lingered(stream) is None:
            self._starting.append(stream)  # (else once the stream it replaced is closed)

    def _waited(self, task_id: str) -> bool:
        """Whether a wait wants `task_id` (not only the keeper: its read waits for a wait)."""
        return any(inbox is not self._keeper for inbox in self._wanted.get(task_id, ()))

    def _open_failed(self, exc: McpError) -> Refusal | str:
        refused = refusal(exc)
        if refused is not None:
            return refused
        if exc.code == METHOD_NOT_FOUND:
            log.debug("the server has no subscriptions/listen: the client's tasks are polled")
            self._no_listen()
            return "other"
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

    def polled(self, task_id: str) -> bool:
        """Whether `task_id` is on no stream for good (the server has no listen, refused the id,
        or its stream dropped too often): its waits poll it.
        """
        with self.changed:
            return task_id in self._polled

    def _poll(self, task_id: str) -> None:
        """`task_id` is on no stream for good: its waits poll it, starting now (the lock held)."""
        self._polled.add(task_id)
        self._tell(task_id, READ)


def _call(function: Callable[..., object], *args: object) -> object:
    return function(*args)
