"""When the shared watch's manager (_streams.py) places the ids it has gathered on a listen stream:
a pure decision (times in, seconds to wait out; the waiting and the listens are _streams.py's).

- No stream open, no cap learnt, and a wait wants one of the ids: at once. A fresh wait then
  learns of its task as soon as the server can say (the first ids of a burst get a stream of their
  own; those made while it opens go on with the next placement: one open more, no stream more).
- Only kept ids (tasks just made, no wait yet: _kept.py): `KEEP_GATHER`, so that a burst of
  creations is placed in a few opens, and a task whose wait polls (and lets it go) costs none.
- Room for another stream (under a cap): `GATHER` after the first id waiting was noticed, so a
  burst fills a stream of the cap rather than a stream per id.
- No room: a merge (the open stream replaced by one for all), after the merge gather: it starts
  at `MERGE_GATHER` and doubles with each merge that follows the last one closely (a burst of
  creations, its stream growing), up to `MAX_MERGE_GATHER`; once nothing new came for a whole
  merge gather after a placement (the stream quiet), it starts over. So 10,000 tasks made in a
  minute cost a few dozen streams, not one each 0.25 s, while a task made in the burst is still
  on the stream within `MAX_MERGE_GATHER` of its creation (before it ends, unless it is
  shorter: then it is read once, as it would be with no keeping).
- Only kept ids and a merge, in a burst of tasks that live long: once the merge gather has grown
  to `MAX_MERGE_GATHER`, it may grow past it, to the tasks' patience: half the shortest life heard of a task followed
  from its creation, or, before any ended, the age of the oldest one kept (none has ended in
  that time: the ones made now are taken to live as long), up to `MAX_PATIENCE`. A burst of
  tasks that outlive it is then placed in a number of opens that grows with the logarithm of
  its length (each placement about doubles the time since the burst began, while none of it is
  let go: past `MAX_KEPT` ids, _kept.py, the oldest kept is younger, and the gathers shorter),
  not with the length; a burst of short tasks is placed as before (their first ends set the
  patience), so none costs a read more. A wait that wants an id ends any of these gathers.
"""

from __future__ import annotations

__all__ = [
    "BURST_QUIET",
    "GATHER",
    "KEEP_GATHER",
    "MAX_MERGE_GATHER",
    "MAX_PATIENCE",
    "MERGE_GATHER",
    "MERGE_GROWTH",
    "Gather",
]

GATHER = 0.02
"""Seconds new ids are gathered before another stream is opened under a cap (a stream of the cap each)..."""
MERGE_GATHER = 0.25
"""...and before the open streams are merged with them into one (a larger stream, reopened less often)..."""
MERGE_GROWTH = 2.0
"""...a gather that grows by this factor with each merge of a burst..."""
MAX_MERGE_GATHER = 1.0
"""...up to this many seconds (a task made in a burst is on a stream by then)."""
BURST_QUIET = 1.0
"""A burst is over once nothing new arrives for this many of its merge gathers."""
KEEP_GATHER = 0.25
"""Seconds ids that only the keeper wants (tasks made, no wait yet) are gathered before a stream."""
MAX_PATIENCE = 8.0
"""Seconds a merge of ids only the keeper wants may gather at most, however long the tasks live
(a task made in a burst is on a stream by then)."""


class Gather:
    """When the ids waiting for a stream are placed: `noticed` the first, `wait` says how long
    to gather, `placed` starts over; `ended` hears how long a task followed from its creation
    lived. Kept by the watch (under its lock, or by its manager alone).
    """

    def __init__(self) -> None:
        self.noticed: float | None = None  # when the first id waiting now was seen
        self.merge = MERGE_GATHER  # the gather before the next merge (grows in a burst)
        self.shortest: float | None = None  # the shortest life heard of a task followed from its creation
        self._last: float | None = None  # when the last placement was done
        self._merging = False  # whether the placement `wait` last timed is a merge

    def ended(self, life: float) -> None:
        """A task followed from its creation was heard to end `life` seconds after it was made."""
        if self.shortest is None or life < self.shortest:
            self.shortest = max(life, 0.0)

    def patience(self, now: float, oldest: float | None) -> float:
        """How long ids only the keeper wants may wait for a merge (see the module's docstring):
        `oldest` is when the oldest task kept was made (None: none is).
        """
        lives = [] if self.shortest is None else [self.shortest / 2]
        lives += [] if oldest is None else [now - oldest]
        return min(min(lives, default=0.0), MAX_PATIENCE)

    def notice(self, now: float) -> None:
        """Ids are waiting for a stream (seen at `now`, unless seen before)."""
        if self.noticed is not None:
            return
        if self._last is not None and now - self._last > self.merge * BURST_QUIET:
            self.merge = MERGE_GATHER  # nothing new for a whole gather: the burst is over
        self.noticed = now

    def wait(
        self, now: float, *, streams: int, room: int, capped: bool, waited: bool, oldest: float | None = None
    ) -> float:
        """Seconds to gather before placing: `streams` open, `room` for that many, `capped` when
        the server's cap on ids per stream is learnt, `waited` when a wait wants one of the ids,
        `oldest` when the oldest task kept for no wait was made.
        """
        noticed = now if self.noticed is None else self.noticed
        self._merging = streams >= room
        if streams == 0 and not capped and waited:
            return 0.0
        if not waited and self._merging:
            grown = self.merge >= MAX_MERGE_GATHER  # a burst long enough that patience counts
            gather = max(KEEP_GATHER, self.merge, self.patience(noticed, oldest) if grown else 0.0)
        elif not waited:
            gather = max(KEEP_GATHER, GATHER)
        else:
            gather = self.merge if self._merging else GATHER
        return max(noticed + gather - now, 0.0)

    def placed(self, now: float) -> None:
        """The ids gathered were placed (done at `now`): the next ones are gathered anew, and a
        merge makes the next merge's gather longer.
        """
        if self._merging:
            self.merge = min(self.merge * MERGE_GROWTH, MAX_MERGE_GATHER)
        self._merging = False
        self._last = now
        self.noticed = None
