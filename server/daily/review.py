"""Which daily results a human could hardly have played: the review's thresholds
(docs/daily.md, "Review of implausible times"). Pure: offsets in, a reason or None.

A daily attempt's actions carry the server time at which each was stored (ms after the
start). Two signs of a program, each over at least :data:`MIN_ACTIONS` actions (fewer
is too little evidence; a win takes about 100 to 150):

- **too fast**: the median time between two actions below :data:`MEDIAN_FLOOR_MS`.
  In the browser a move is a tap on a card and a tap on its target (or a drag, or two
  keys), each after finding a legal move on a board of 28 piles: a human's pace is a
  second or more per move, bursts of quick foundation moves included. A median (not a
  mean) ignores the thinking pauses and the bursts alike: half of all the moves made
  faster than a quarter of a second is beyond reading the board each time. The daily
  room has no auto-finish and no hints, so every action is the player's own.
- **too regular**: the intervals' coefficient of variation (standard deviation over
  mean) below :data:`REGULARITY_FLOOR`. A human's pace varies with every decision (a
  coefficient of 0.5 to 1.5 is usual); a program that waits a fixed delay between
  moves, to look slow, is metronomic.

Neither proves anything: a flagged result is shown "under review", and an operator
looks at the replay and confirms or disqualifies it (``python3 -m server review``).

>>> assess([i * 200 for i in range(60)])
'median 200 ms between actions over 60 actions (floor 250 ms)'
>>> assess([i * 900 for i in range(60)])
'intervals too regular: variation 0.00 over 60 actions (floor 0.15)'
>>> import random; rng = random.Random(1)
>>> human = [sum(rng.randint(400, 4000) for _ in range(i)) for i in range(60)]
>>> assess(human) is None, assess([0, 10, 20]) is None
(True, True)
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from crescent_wire.daily import CONFIRMED as CONFIRMED
from crescent_wire.daily import UNDER_REVIEW as UNDER_REVIEW
from server.lobby.values import record_of, value_of

MIN_ACTIONS: Final = 50
MEDIAN_FLOOR_MS: Final = 250
REGULARITY_FLOOR: Final = 0.15

# The states as the boards show them (crescent_wire.daily), and the one they do not.
DISQUALIFIED: Final = "disqualified"
STATES: Final = (UNDER_REVIEW, CONFIRMED, DISQUALIFIED)


def intervals(offsets: Sequence[int]) -> list[int]:
    return [later - earlier for earlier, later in itertools.pairwise(offsets)]


def assess(offsets: Sequence[int]) -> str | None:
    """Why the pace of these action times (ms after the start, in order) is implausible
    for a human, or None (too few actions to tell, or nothing unusual)."""
    if len(offsets) < MIN_ACTIONS:
        return None
    gaps = intervals(offsets)
    median = statistics.median(gaps)
    if median < MEDIAN_FLOOR_MS:
        return (
            f"median {median:.0f} ms between actions over {len(offsets)} actions "
            f"(floor {MEDIAN_FLOOR_MS} ms)"
        )
    mean = statistics.fmean(gaps)
    variation = statistics.pstdev(gaps) / mean if mean > 0 else 0.0
    if variation < REGULARITY_FLOOR:
        return (
            f"intervals too regular: variation {variation:.2f} over {len(offsets)} actions "
            f"(floor {REGULARITY_FLOOR})"
        )
    return None


@dataclass(frozen=True, slots=True)
class Review:
    """A daily result's review as stored (the ``DailyStorage`` port's): its state (one
    of :data:`STATES`), the player's name, the reason (flagged or disqualified), the
    attempt's archived game, when it was flagged; who decided, and when (confirmed or
    disqualified by an operator).

    >>> r = Review(UNDER_REVIEW, "Ada", "median 90 ms", game="G1", flagged_at=5)
    >>> Review.from_record(r.decided(CONFIRMED, by="op", at=9).to_record()).state
    'confirmed'
    """

    state: str
    name: str = ""
    reason: str = ""
    game: str | None = None
    flagged_at: int | None = None
    by: str | None = None
    at: int | None = None

    def decided(
        self, state: str, *, by: str, at: int, name: str | None = None, reason: str | None = None
    ) -> Review:
        """This review with an operator's decision (and the name and reason shown, if
        given)."""
        return replace(
            self,
            state=state,
            name=self.name if name is None else name,
            reason=self.reason if reason is None else reason,
            by=by,
            at=at,
        )

    def to_record(self) -> dict[str, Any]:
        return record_of(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Review:
        return value_of(cls, record)
