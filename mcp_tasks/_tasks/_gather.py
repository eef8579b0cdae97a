"""When the shared watch's manager (_streams.py) places the ids it has gathered on a listen stream:
a pure decision (times in, seconds to wait out; the waiting and the listens are _streams.py's).

- No stream open, no cap learnt, and a wait wants one of the ids: at once. A fresh wait then
  learns of its task as soon as the server can say (the first ids of a burst get a stream of their
  own; those made while it opens go on with the next placement: one open more, no stream more).
- Only kept ids (tasks just made, no wait yet: _kept.py): `KEEP_GATHER`, so that a burst of
  creations is placed in a few opens, and a task whose wait polls (and lets it go) costs none.
- Room for another stream (under a cap): `GATHER` after the first id waiting was noticed, so a
  burst fills a stream of the cap rather than a stream per id.
- No room: `MERGE_GATHER`, then the open stream is replaced by one for all (a merge: a larger
  stream, reopened less often).
"""

from __future__ import annotations

__all__ = ["GATHER", "KEEP_GATHER", "MERGE_GATHER", "Gather"]

GATHER = 0.02
"""Seconds new ids are gathered before another stream is opened under a cap (a stream of the cap each)..."""
MERGE_GATHER = 0.25
"""...and before the open streams are merged with them into one (a larger stream, reopened less often)."""
KEEP_GATHER = 0.25
"""Seconds ids that only the keeper wants (tasks made, no wait yet) are gathered before a stream."""


class Gather:
    """When the ids waiting for a stream are placed: `noticed` the first, `wait` says how long
    to gather, `placed` starts over. Kept under the watch's lock (or in the manager alone).
    """

    def __init__(self) -> None:
        self.noticed: float | None = None  # when the first id waiting now was seen

    def notice(self, now: float) -> None:
        """Ids are waiting for a stream (seen at `now`, unless seen before)."""
        if self.noticed is None:
            self.noticed = now

    def wait(self, now: float, *, streams: int, room: int, capped: bool, waited: bool) -> float:
        """Seconds to gather before placing: `streams` open, `room` for that many, `capped` when
        the server's cap on ids per stream is learnt, `waited` when a wait wants one of the ids.
        """
        noticed = now if self.noticed is None else self.noticed
        if streams == 0 and not capped and waited:
            return 0.0
        if not waited:
            gather = max(KEEP_GATHER, MERGE_GATHER if streams >= room else GATHER)
        else:
            gather = GATHER if streams < room else MERGE_GATHER
        return max(noticed + gather - now, 0.0)

    def placed(self) -> None:
        """The ids gathered were taken for placing: the next ones are gathered anew."""
        self.noticed = None
