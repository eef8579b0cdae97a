"""One client's shared watch on its tasks: the listen stream(s) that carry every task id being
waited on, by any thread, and the news they bring to the waits (a channel attachment).

- Waits `want()` task ids into an `Inbox` and take news out of it in their own thread: a full
  Status (a notification that carries what the status needs) or a cue (`READ`: read the task once).
  A task placed on a stream, or given up to polling, is cued once: its wait reads it then (not
  before: one read per task when the stream brings the rest). The manager helps with the reads
  a new stream calls for (`claim`): it and the waits each read the oldest one the other has not,
  so that 10,000 tasks made first and then waited on are caught up with two reads in flight; a
  task whose status comes on its stream first is not read (the newest of a batch end so).
- The tasks this client makes (`keep`, from `call_tool`) are followed from their creation, as if
  a wait wanted them (the keeper's): a set waited on once all are made finds what their stream
  said meanwhile, and reads only those it said nothing of (a task that ended before the set
  began costs no read). A wait that wants a kept id takes the keeper's place and news; a kept
  task heard to end leaves its stream (its end is kept for the wait); ids no wait takes are let
  go after a while (_kept.py).
- On a 2026-07-28 connection one manager thread (``mcp_tasks-watch``) opens the streams: new ids
  are placed on a stream of their own while fewer than `MAX_STREAMS` are open (at once when none
  is, so that a fresh wait hears of its task without delay; else gathered: _gather.py), else
  merged with the open ones into one stream (opened before the old ones close, so no
  notification falls between; an old one is read on for a moment, `Linger`, and the new one's
  reader starts once it is closed). A refused listen is read by _cap.py: a -32602 that names a
  limit teaches a cap on ids per stream (then up to `MAX_CAPPED_STREAMS` streams of it), any other
  -32602 has the refused ids found by halving, left off the stream and polled (their waits hear
  why), and teaches no cap; a learnt cap grows back. Ids beyond the streams, ids the
  acknowledgement leaves out, and ids whose stream dropped `MAX_REOPENS` times are polled by their
  waits. Each stream costs one thread, its reader (``mcp_tasks-listen-<id>``), which turns its
  events into news here; the manager reads a new stream's acknowledgement itself, and a merged
  stream's reader starts only once the stream it replaced is closed, so the watch runs at most
  ``1 + MAX_STREAMS`` threads for all the client's waits, whatever their number
  (``1 + MAX_CAPPED_STREAMS`` under a server's cap).
- On a 2025-11-25 session the status notifications the session pushes unasked are cues.
"""

from __future__ import annotations

import contextvars
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from mcp_tasks._errors import McpError
from mcp_tasks._session._subscription import Closed, Dropped, Event, Notification
from mcp_tasks._status import Status
from mcp_tasks._tasks._cap import MAX_STREAMS
from mcp_tasks._tasks._news import READ, Inbox, Linger, News, Stream, replayed
from mcp_tasks._tasks._protocol import decode
from mcp_tasks._tasks._side import TaskSide, side_of
from mcp_tasks._tasks._streams import MAX_REOPENS, Streams
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = ["MAX_REOPENS", "MAX_STREAMS", "READ", "Inbox", "Watch", "watch_of"]

log = logging.getLogger("mcp_tasks")


TASK_NOTIFICATIONS = frozenset({"notifications/tasks", "notifications/tasks/status"})
CLOSE_TIMEOUT = 5.0


class Watch(Streams):
    """See the module docstring. Safe to share between threads; `close()` joins its threads."""

    def __init__(self, channel: Channel, side: TaskSide) -> None:
        super().__init__(channel)
        self._inboxes: weakref.WeakSet[Inbox] = weakref.WeakSet()
        side.listeners.append(self._session_notification)

    # -- the waits' side ----------------------------------------------------------------------

    def inbox(self) -> Inbox:
        """A new wait's `Inbox` (woken when the watch closes, too)."""
        inbox = Inbox(self.lock)
        with self.lock:
            self._inboxes.add(inbox)
        return inbox

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
                if scopes is not None and task_id in scopes:
                    self._scopes.setdefault(task_id, scopes[task_id])
                if self._kept.take(task_id):
                    self._take_over(inbox, task_id)
                    continue
                self._wanted.setdefault(task_id, []).append(inbox)
                if not stream:
                    continue
                if self._listen and task_id not in self._streamed and task_id not in self._polled:
                    self._unplaced.add(task_id)  # the cue comes when a stream takes it, or not
                    self._urgent = True
                    if self._context is None or self._context_kept:  # the stream opens in the first
                        self._context = contextvars.copy_context()  # waiter's context (its trace span)
                        self._context_kept = False
                else:
                    inbox.news[task_id] = READ  # already placed (or no listen): read it now
            if stream and self._unplaced and self._manager is None and not self._stop.is_set():
                self._manager = start_thread("watch", self._manage)
            self.changed.notify_all()

    def keep(self, ids: Iterable[str]) -> None:
        """Follow the tasks this client just made (2026-07-28) until a wait wants them, or for a
        while (_kept.py): on the streams, as a wait's would be, their news kept for that wait.
        Their stream opens in the context the first of them was made in (its trace span), unless a
        wait wants an id first (then in the wait's, as its own listens are: design §7.4).
        """
        with self.changed:
            if not self._listen or self._stop.is_set():
                return
            now = time.monotonic()
            for task_id in ids:
                if task_id in self._wanted or task_id in self._kept:
                    continue  # a wait wants it already
                self._let_go(self._kept.add(task_id, now))
                self._wanted[task_id] = [self._keeper]
                self._unplaced.add(task_id)
                if self._context is None:  # no wait's yet: the creating call's (its caller's span)
                    self._context, self._context_kept = contextvars.copy_context(), True
            if self._unplaced and self._manager is None:
                self._manager = start_thread("watch", self._manage)
            self.changed.notify_all()

    def unkeep(self, ids: Iterable[str]) -> None:
        """Stop following `ids` that no wait took (the wait they were made for ended first)."""
        with self.changed:
            self._let_go([task_id for task_id in ids if self._kept.take(task_id)])
            self.changed.notify_all()

    def _take_over(self, inbox: Inbox, task_id: str) -> None:
        """`inbox` wants a kept id: it takes the keeper's place, and what its stream said (the
        lock held). Nothing said yet: it is being placed (the cue comes), or its read is owed.
        """
        inboxes = self._wanted.setdefault(task_id, [])
        if self._keeper in inboxes:
            inboxes[inboxes.index(self._keeper)] = inbox  # on its stream still
        else:
            inboxes.append(inbox)  # its end was heard: it left its stream
        news = self._keeper.news.pop(task_id, None)
        self._urgent |= task_id in self._unplaced  # a wait wants it now: no more gathering for a keeper
        if news is READ and task_id in self._streamed:
            self._catch.add(task_id)  # owed since its stream took it: the manager helps read
        if news is not None:
            inbox.news[task_id] = news
            inbox.changed.notify()
        elif task_id in self._streamed or task_id in self._polled:
            inbox.news[task_id] = READ

    def _let_go(self, ids: list[str]) -> None:
        """No wait took these kept ids: stop following them, forget their news (the lock held)."""
        for task_id in ids:
            self._keeper.news.pop(task_id, None)
            if self._keeper in self._wanted.get(task_id, ()):
                self._unwant(self._keeper, task_id)

    def drop(self, inbox: Inbox, ids: Iterable[str]) -> None:
        """`inbox` no longer wants news of `ids` (their streams close when no wait wants them)."""
        with self.changed:
            for task_id in ids:
                self._unwant(inbox, task_id)
            self.changed.notify_all()

    def _unwant(self, inbox: Inbox, task_id: str) -> None:
        """`inbox` no longer wants news of `task_id` (the lock held)."""
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
        """Whether a stream acknowledged `task_id` for a wait (which then reads it rarely); not
        when only the keeper has it there (a polling wait's task, made here).
        """
        return task_id in self._streamed and self._waited(task_id)

    # -- news ---------------------------------------------------------------------------------

    def _tell(self, task_id: str, news: News) -> None:
        """Give `news` of a task to the waits that want it, and wake them (the lock held)."""
        inboxes = self._wanted.get(task_id, ())
        for inbox in inboxes:
            kept = inbox.news.get(task_id)
            if not (isinstance(kept, Status) and kept.terminal):  # the first terminal one stays
                inbox.news[task_id] = news
            inbox.changed.notify()
        if isinstance(news, Status) and news.terminal and self._keeper in inboxes:
            since = self._kept.since(task_id)
            if since is not None:
                self._gather.ended(time.monotonic() - since)  # how long the tasks made here live
            self._unwant(self._keeper, task_id)  # it ended: off its stream, its end kept for a wait

    def _session_notification(self, method: str, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        if isinstance(task_id, str):
            with self.changed:
                self._tell(task_id, READ)  # a 2025-era status never carries the result

    def _event(self, stream: Stream, event: Event) -> None:
        """An event of `stream`, in its reader thread (the subscription's worker: no thread of
        the watch's own): news, or at its end a reopen or polls.
        """
        with self.changed:
            self._take_event(stream, event)

    def _take_event(self, stream: Stream, event: Event) -> None:
        """`event` of a stream the watch follows (the lock held)."""
        linger = self._lingered(stream)
        if linger is not None and stream is linger.old:
            self._lingering_event(linger, event)
        elif isinstance(event, Closed):
            if not stream.closing:
                stream.closing = True
                self._dropped(stream, event.error)
        elif isinstance(event, Dropped):
            for task_id in stream.ids:
                self._tell(task_id, READ)
        elif event.method in TASK_NOTIFICATIONS and not stream.closing and not replayed(stream, event.params):
            self._notified(event.params, stream)

    def _lingering_event(self, linger: Linger, event: Event) -> None:
        """`event` of a stream merged into a newer one: news still, while it lingers."""
        old = linger.old
        if isinstance(event, Notification):
            if event.method in TASK_NOTIFICATIONS:
                linger.heard_on_old(event.params)
                self._notified(event.params, old)
            return
        if isinstance(event, Dropped) or event.error is not None:  # what it still had to say may be lost
            for task_id in old.ids:
                self._tell(task_id, READ)
        if isinstance(event, Closed):
            self._end_lingering(old)
            self.changed.notify_all()  # the manager joins its reader, and starts the new one's

    def _notified(self, params: dict[str, Any], stream: Stream) -> None:
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

    def _dropped(self, stream: Stream, error: McpError | None) -> None:
        log.debug("a listen stream of %d tasks ended (%s); reopening or polling", len(stream.ids), error)
        if stream in self._streams:
            self._streams.remove(stream)
        self._end_lingering(stream)  # the stream it replaced: its ids are read again now (below)
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
                self._urgent |= self._waited(task_id)
            self._tell(task_id, READ)  # what the stream said before it ended may be lost
        self.changed.notify_all()  # the manager reopens or closes

    # -- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the streams (the channel's close calls this before the transport closes)."""
        self._stop.set()
        with self.changed:
            lingering = [linger.old for linger in self._lingering]
            streams, self._streams = list(self._streams) + self._closing + lingering, []
            self._closing, self._lingering, self._starting = [], [], []
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


def watch_of(channel: Channel) -> Watch:
    """The channel's `Watch` (made on first use)."""
    side = side_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Watch, lambda made: Watch(made, side))
