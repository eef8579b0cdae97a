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
"""

from __future__ import annotations

__all__ = ["GATHER", "KEEP_GATHER", "MAX_MERGE_GATHER", "MERGE_GATHER", "MERGE_GROWTH", "Gather"]

GATHER = 0.02
"""Seconds new ids are gathered before another stream is opened under a cap (a stream of the cap each)..."""
MERGE_GATHER = 0.25
"""...and before the open streams are merged with them into one (a larger stream, reopened less often)..."""
MERGE_GROWTH = 2.0
"""...a gather that grows by this factor with each merge of a burst..."""
MAX_MERGE_GATHER = 1.0
"""...up to this many seconds (a task made in a burst is on a stream by then)."""
KEEP_GATHER = 0.25
"""Seconds ids that only the keeper wants (tasks made, no wait yet) are gathered before a stream."""


class Gather:
    """When the ids waiting for a stream are placed: `noticed` the first, `wait` says how long
    to gather, `placed` starts over. Kept by the watch's manager alone.
    """

    def __init__(self) -> None:
        self.noticed: float | None = None  # when the first id waiting now was seen
        self.merge = MERGE_GATHER  # the gather before the next merge (grows in a burst)
        self._last: float | None = None  # when the last placement was done
        self._merging = False  # whether the placement `wait` last timed is a merge

    def notice(self, now: float) -> None:
        """Ids are waiting for a stream (seen at `now`, unless seen before)."""
        if self.noticed is not None:
            return
        if self._last is not None and now - self._last > self.merge:
            self.merge = MERGE_GATHER  # nothing new for a whole gather: the burst is over
        self.noticed = now

    def wait(self, now: float, *, streams: int, room: int, capped: bool, waited: bool) -> float:
        """Seconds to gather before placing: `streams` open, `room` for that many, `capped` when
        the server's cap on ids per stream is learnt, `waited` when a wait wants one of the ids.
        """
        noticed = now if self.noticed is None else self.noticed
        self._merging = streams >= room
        if streams == 0 and not capped and waited:
            return 0.0
        if not waited:
            gather = max(KEEP_GATHER, self.merge if self._merging else GATHER)
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
