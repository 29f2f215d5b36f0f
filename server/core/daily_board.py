"""A daily board as a client sees it (docs/protocol.md, "Daily challenge"): its rows,
and the day's reviews (docs/daily.md, "Review of implausible times") shown to
everyone: a flagged result stays on the board marked ``under_review`` (or
``confirmed``) with its replay one tap away once the day is revealed; a disqualified
one leaves the board and is listed apart with its reason. Pure: stored values in,
wire values out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crescent_wire.daily import REVIEW_STATES, BoardRow, Disqualified, Flagged
from server.core.ports import BoardEntry, BoardView
from server.daily.review import DISQUALIFIED

Reviews = Mapping[str, Mapping[str, Any]]  # player -> the stored review (daily_review.py)


def board_row(row: BoardEntry, reviews: Reviews | None = None) -> BoardRow:
    e = row.entry
    review = (reviews or {}).get(row.player_id) or {}
    state = review.get("state")
    flagged = state in REVIEW_STATES
    return BoardRow(
        rank=row.rank,
        player=row.player_id,
        name=str(e.get("name", "")),
        status=str(e["status"]),
        time_ms=e.get("time_ms"),
        moves=int(e["moves"]),
        foundation=int(e["foundation"]),
        review=str(state) if flagged else None,
        game=_game(review) if flagged else None,
    )


def flagged(reviews: Reviews) -> list[Flagged]:
    """The day's results under review or confirmed, by player id."""
    return [
        Flagged(player, str(review.get("name", "")), str(review["state"]), _game(review))
        for player, review in sorted(reviews.items())
        if review.get("state") in REVIEW_STATES
    ]


def disqualified(reviews: Reviews) -> list[Disqualified]:
    """The day's results taken off its boards, by player id, each with its reason."""
    return [
        Disqualified(
            player, str(review.get("name", "")), str(review.get("reason", "")), _game(review)
        )
        for player, review in sorted(reviews.items())
        if review.get("state") == DISQUALIFIED
    ]


def board_data(
    day: str,
    board: str,
    view: BoardView,
    reviews: Reviews,
    *,
    ranks: str,
    reveal_at: int,
    top: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``daily_board`` reply's fields but ``watching``; ``top`` the rows of the top
    list when another watcher's push built them already."""
    placed = view.you
    return {
        "day": day,
        "board": board,
        "count": view.size,
        "late_count": view.late_size,
        "ranks": ranks,
        "reveal_at": reveal_at,  # the replays of the day's games are readable from then
        "top": list(top) if top is not None else top_rows(view, reviews),
        "around": [board_row(r, reviews).to_wire() for r in view.around],
        "you": (
            {"board": placed[0], **board_row(placed[1], reviews).to_wire()} if placed else None
        ),
        **review_lists(reviews),
    }


def review_lists(reviews: Reviews) -> dict[str, list[dict[str, Any]]]:
    """``flagged`` and ``disqualified``: a board's, and a revealed day's in ``daily_days``."""
    return {
        "flagged": [f.to_wire() for f in flagged(reviews)],
        "disqualified": [d.to_wire() for d in disqualified(reviews)],
    }


def top_rows(view: BoardView, reviews: Reviews) -> list[dict[str, Any]]:
    return [board_row(r, reviews).to_wire() for r in view.top]


def _game(review: Mapping[str, Any]) -> str | None:
    game = review.get("game")
    return str(game) if game else None
