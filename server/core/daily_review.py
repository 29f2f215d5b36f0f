"""The operator's review of daily results (docs/daily.md, "Review of implausible
times"): list the flagged results, confirm one (it stays on the board, marked
``confirmed``) or disqualify one (it leaves the board; the reason is shown under it).
Over the :class:`~server.core.ports.DailyStorage` port; ``python3 -m server review``
(server/review_cli.py) is the command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from server.core.ports import DailyStorage
from server.daily.review import CONFIRMED, DISQUALIFIED, UNDER_REVIEW, Review

MAX_REASON = 200  # characters of a disqualification's reason (shown to everyone)


class ReviewError(ValueError):
    """The decision cannot be made; the message says why."""


class ListedReview(NamedTuple):
    """A flagged or decided result: its day, its player, its review."""

    day: str
    player: str
    review: Review


async def list_reviews(storage: DailyStorage, days: Sequence[str]) -> list[ListedReview]:
    """Every flagged or decided result of ``days``, the undecided first."""
    rows = [
        ListedReview(day, player, review)
        for day in days
        for player, review in (await storage.reviews(day)).items()
    ]
    return sorted(rows, key=lambda r: (r.review.state != UNDER_REVIEW, r.day, r.player))


async def confirm(storage: DailyStorage, day: str, player: str, *, by: str, now: int) -> None:
    """The result stands: it stays on the board, marked ``confirmed``."""
    review = (await storage.reviews(day)).get(player)
    if review is None:
        raise ReviewError(f"{player}'s result of {day} is not under review")
    if review.state == DISQUALIFIED:
        raise ReviewError(f"{player}'s result of {day} was disqualified already")
    await storage.set_review(day, player, review.decided(CONFIRMED, by=by, at=now))


async def disqualify(
    storage: DailyStorage, day: str, player: str, reason: str, *, by: str, now: int
) -> None:
    """The result leaves the board; ``reason`` is shown in its place. Any result on the
    board may be disqualified (a flagged one, or one reported otherwise)."""
    reason = " ".join(reason.split())
    if not 0 < len(reason) <= MAX_REASON:
        raise ReviewError(f"a reason of 1 to {MAX_REASON} characters is shown to everyone")
    placed = await storage.board_entry(day, player)
    review = (await storage.reviews(day)).get(player)
    if placed is None and (review is None or review.state != DISQUALIFIED):
        raise ReviewError(f"{player} has no result on the board of {day}")
    name = placed[1].entry.name if placed else (review.name if review else "")
    decided = (review or Review(DISQUALIFIED)).decided(
        DISQUALIFIED, by=by, at=now, name=name, reason=reason
    )
    await storage.set_review(day, player, decided)
    await storage.remove_from_board(day, player)
