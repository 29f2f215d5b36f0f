"""The daily challenge's boards as clients see them (docs/daily.md, "Leaderboard"): a
board's rows with their reviews, the live pushes to the connections watching one, and
a player's own record (streaks, best times, history).

The storage's typed records (:class:`~server.core.ports.BoardEntry`,
:class:`~server.daily.ResultEntry`, :class:`~server.daily.review.Review`) become the
wire's typed values (:mod:`crescent_wire.daily`) here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from crescent_wire import protocol as p
from crescent_wire.daily import (
    REVIEW_STATES,
    BoardData,
    BoardRow,
    Disqualified,
    Flagged,
    HistoryRow,
    SummaryData,
    YourRow,
    replay_path,
)
from server.core import messages
from server.core.ports import BoardEntry, Connection, DailyStorage
from server.core.session import Sessions
from server.daily import Day, ResultEntry, reveal_at, streaks
from server.daily.review import DISQUALIFIED, Review

# The bus channel of the daily boards: a "room code" no room can have (lower case).
DAILY_CHANNEL: Final = "daily"
HISTORY_SHOWN: Final = 30

# The rows of the top lists, shared by the watchers of one push: (day, board, top).
Tops = dict[tuple[Day, str, int], tuple[BoardRow, ...]]


@dataclass
class Watch:
    day: Day
    board: str
    top: int
    around: int


def board_row(row: BoardEntry, reviews: Mapping[str, Review] | None = None) -> BoardRow:
    """A stored row as shown; a flagged result ("under_review" or "confirmed") also
    with its review's state and, when its game is known, the game and its replay."""
    e = row.entry
    review = (reviews or {}).get(row.player_id)
    flagged = review is not None and review.state in REVIEW_STATES
    game = review.game if review is not None and flagged and review.game else None
    return BoardRow(
        rank=row.rank,
        player=row.player_id,
        name=e.name,
        status=e.status,
        time_ms=e.time_ms,
        moves=e.moves,
        foundation=e.foundation,
        review=review.state if review is not None and flagged else None,
        game=game,
        replay=replay_path(game) if game else None,
    )


def flagged(reviews: Mapping[str, Review]) -> tuple[Flagged, ...]:
    """The day's results under review or confirmed, wherever they rank, by player id."""
    return tuple(
        Flagged(player, review.name, review.state, review.game or None)
        for player, review in sorted(reviews.items())
        if review.state in REVIEW_STATES
    )


def disqualified(reviews: Mapping[str, Review]) -> tuple[Disqualified, ...]:
    """The day's results taken off its boards, by player id, each with its reason."""
    return tuple(
        Disqualified(player, review.name, review.reason, review.game or None)
        for player, review in sorted(reviews.items())
        if review.state == DISQUALIFIED
    )


class Boards:
    """The boards shown and pushed: the connections watching one (one board each) and
    the days whose boards changed since the last push."""

    def __init__(self, storage: DailyStorage, sessions: Sessions, *, attempt_limit_ms: int) -> None:
        self.storage = storage
        self.sessions = sessions
        self.attempt_limit_ms = attempt_limit_ms  # a day's replays are revealed after it
        self.watchers: dict[Connection, Watch] = {}
        self.dirty: set[str] = set()

    @property
    def main_board_ranks(self) -> str:
        """What the main board ranks: ``accounts`` or ``identities`` (no accounts)."""
        return "identities" if self.sessions.accounts is None else "accounts"

    async def board_data(self, watch: Watch, player_id: str, tops: Tops) -> BoardData:
        """A board as a client sees it (two storage round trips); ``tops`` shares the
        top lists' rows within one push."""
        day = str(watch.day)
        view = await self.storage.board_view(day, watch.board, player_id, watch.top, watch.around)
        reviews = await self.storage.reviews(day)
        key = (watch.day, watch.board, watch.top)
        top = tops.setdefault(key, tuple(board_row(r, reviews) for r in view.top))
        placed = view.you
        return BoardData(
            day=day,
            board=watch.board,
            count=view.size,
            late_count=view.late_size,
            ranks=self.main_board_ranks,
            reveal_at=reveal_at(watch.day, self.attempt_limit_ms),
            top=top,
            around=tuple(board_row(r, reviews) for r in view.around),
            you=YourRow(placed[0], board_row(placed[1], reviews)) if placed else None,
            # The day's reviews, shown to everyone (docs/daily.md, "Review"): flagged
            # results wherever they rank, and those taken off the board, with the reason.
            flagged=flagged(reviews),
            disqualified=disqualified(reviews),
        )

    def on_bus(self, message: messages.DailyChanged) -> None:
        self.dirty.add(message.day)

    async def push(self) -> None:
        """Push the boards of the days that changed to those watching them."""
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, set()
        tops: Tops = {}
        for conn, watch in list(self.watchers.items()):
            if str(watch.day) not in dirty or conn.player is None:
                continue
            data = await self.board_data(watch, conn.player.id, tops)
            if conn in self.watchers:
                conn.send(p.encode(replace(data, watching=True).reply()))


def summary(history: dict[str, ResultEntry], today: Day) -> SummaryData:
    """A player's daily record (``daily_me``): streaks, best times, counts and the
    latest results."""
    streak = streaks(((Day.parse(d), e.status) for d, e in history.items()), today)
    won_times = [e.time_ms for e in history.values() if e.status == "won" and e.time_ms is not None]
    return SummaryData(
        streak_played=streak.played,
        streak_won=streak.won,
        best_time_ms=min(won_times) if won_times else None,
        best_times=tuple(sorted(won_times)[:5]),
        days_played=len(history),
        days_won=sum(1 for e in history.values() if e.status == "won"),
        history=tuple(
            HistoryRow(d, e.board, e.status, e.time_ms, e.moves, e.foundation)
            for d, e in sorted(history.items(), reverse=True)[:HISTORY_SHOWN]
        ),
    )


def daily_summary(history: dict[str, ResultEntry], today: Day) -> dict[str, Any]:
    """:func:`summary` as its map (the account page and public profile of
    docs/accounts.md, over HTTP)."""
    return summary(history, today).to_wire()


__all__ = [
    "DAILY_CHANNEL",
    "Boards",
    "Watch",
    "board_row",
    "daily_summary",
    "disqualified",
    "flagged",
    "summary",
]
