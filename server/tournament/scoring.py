"""Scoring a round, the standings with their tie-breaks, a round's live summary.

Pure functions (docs/tournaments.md has the tables these implement):

- placement scoring: a racer placed ``place`` of ``P`` racers seated in the round scores
  ``P - place + 1`` points; a round not played scores 0. More points is better.
- time scoring: a finisher is charged their time; a racer who did not finish, the
  round's time limit plus 10 s per card not on the foundations (104 cards); a round
  not played, the time limit plus 1,040 s. Less is better.
- tie-breaks, in order: more rounds won (place 1), better best place, earlier
  registration (``joined_at``, then join order).

>>> rows = round_rows([ResultRow(1, "a", "A", "won", 90_000, 200, 104),
...                    ResultRow(2, "b", "B", "timeout", 300_000, 80, 100)],
...                   scoring="time", time_limit_s=300)
>>> [(r.id, r.time_charged_ms) for r in rows]
[('a', 90000), ('b', 340000)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from server.lobby.race import RacerProgress, ResultRow, initial_progress, rank
from server.lobby.values import record_of, value_of
from server.tournament.player import TPlayer

ALL_CARDS = 104
CARD_PENALTY_MS = 10_000  # per card not on the foundations (time scoring)
MISSED_ROUND_EXTRA_MS = ALL_CARDS * CARD_PENALTY_MS  # a round not played: limit + 1,040 s


def charge_ms(status: str, time_ms: int | None, foundation: int, time_limit_s: int) -> int:
    """Time scoring's charge for one racer in one round.

    >>> charge_ms("won", 61_000, 104, 600), charge_ms("locked", 20_000, 54, 600)
    (61000, 1100000)
    """
    if status == "won" and time_ms is not None:
        return time_ms
    return time_limit_s * 1000 + CARD_PENALTY_MS * max(0, ALL_CARDS - foundation)


def missed_round_ms(time_limit_s: int) -> int:
    return time_limit_s * 1000 + MISSED_ROUND_EXTRA_MS


@dataclass(frozen=True, slots=True)
class RoundRow:
    """A racer's row of a finished round (docs/protocol.md ``t_results`` RoundRow):
    stored with the round (the tournament port's ``round_rows``), sent in ``t_results``
    and exported. Its record is the dict stored and sent since before it was typed: the
    same keys in the same order (:meth:`to_record`)."""

    place: int
    id: str
    name: str
    finished: bool
    time_ms: int | None  # a finisher's time; None for the others
    moves: int
    foundation: int
    points: int | None  # placement scoring's points; None under time scoring
    time_charged_ms: int | None  # time scoring's charge; None under placement scoring

    def to_record(self) -> dict[str, Any]:
        return record_of(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RoundRow:
        return value_of(cls, record)


def round_rows(results: Sequence[ResultRow], *, scoring: str, time_limit_s: int) -> list[RoundRow]:
    """A finished round's rows (docs/protocol.md ``t_results``) from the race room's
    results table (:func:`server.lobby.race.rank`: ``rank`` 1.. without ties)."""
    seated = len(results)
    rows = []
    for r in sorted(results, key=lambda r: r.rank):
        place = r.rank
        finished = r.status == "won"
        rows.append(
            RoundRow(
                place=place,
                id=r.player,
                name=r.name,
                finished=finished,
                time_ms=r.time_ms if finished else None,
                moves=r.moves,
                foundation=r.foundation,
                points=seated - place + 1 if scoring == "placement" else None,
                time_charged_ms=(
                    charge_ms(r.status, r.time_ms, r.foundation, time_limit_s)
                    if scoring == "time"
                    else None
                ),
            )
        )
    return rows


def total_ms(player: TPlayer, *, finished_rounds: int, time_limit_s: int) -> int:
    """Time scoring's total: the charges of the rounds played plus the charge of every
    finished round not played."""
    missed = max(0, finished_rounds - player.rounds_played)
    return player.charged_ms + missed * missed_round_ms(time_limit_s)


def _order_key(
    player: TPlayer, *, scoring: str, finished_rounds: int, time_limit_s: int
) -> tuple[int, ...]:
    primary = (
        -player.points
        if scoring == "placement"
        else total_ms(player, finished_rounds=finished_rounds, time_limit_s=time_limit_s)
    )
    best = player.best_place if player.best_place is not None else 1 << 30
    return (primary, -player.rounds_won, best, player.joined_at, player.seq)


def standings(
    players: Iterable[TPlayer], *, scoring: str, finished_rounds: int, time_limit_s: int
) -> list[dict[str, Any]]:
    """Every standings row, best first: active and withdrawn players ranked together
    (1, 2, … : the tie-breaks end at registration order, so no two rows tie), then the
    removed players, unranked (``rank`` None)."""

    def key(player: TPlayer) -> tuple[int, ...]:
        return _order_key(
            player, scoring=scoring, finished_rounds=finished_rounds, time_limit_s=time_limit_s
        )

    ranked = sorted((pl for pl in players if pl.status != "removed"), key=key)
    removed = sorted((pl for pl in players if pl.status == "removed"), key=key)
    rows = []
    for index, pl in enumerate([*ranked, *removed]):
        row: dict[str, Any] = {
            "rank": index + 1 if pl.status != "removed" else None,
            "id": pl.id,
            "name": pl.name,
            "status": pl.status,
        }
        if scoring == "placement":
            row["points"] = pl.points
        else:
            row["total_ms"] = total_ms(
                pl, finished_rounds=finished_rounds, time_limit_s=time_limit_s
            )
        row["rounds_won"] = pl.rounds_won
        row["best_place"] = pl.best_place
        row["rounds_played"] = pl.rounds_played
        rows.append(row)
    return rows


class LiveRow(NamedTuple):
    """A racer's provisional row in a running round (docs/protocol.md ``t_live``
    LiveRow). A named tuple: a tournament's tick makes one per racer (200 a tick). Its
    record (:meth:`to_record`) is the map ``t_live`` sends, keys in this order."""

    place: int
    id: str
    name: str
    finished: bool
    time_ms: int | None  # a finisher's time; None while racing
    foundation: int
    moves: int

    def to_record(self) -> dict[str, Any]:
        # Spelled out, not record_of(self): a tick makes one per watcher, and the
        # literal costs a third (tests/tournament/test_scoring.py checks they agree).
        place, id_, name, finished, time_ms, foundation, moves = self
        return {
            "place": place,
            "id": id_,
            "name": name,
            "finished": finished,
            "time_ms": time_ms,
            "foundation": foundation,
            "moves": moves,
        }


def live_rows(
    entrants: Iterable[tuple[str, str]],
    progress: Mapping[str, RacerProgress],
    *,
    start_at: int,
    now: int,
) -> list[LiveRow]:
    """A running round's provisional places (docs/protocol.md ``t_live`` LiveRow): as the
    race would rank it now (finishers by time, then by cards on the foundations).

    >>> live_rows([("a", "A"), ("b", "B")], {"b": initial_progress("b")._replace(
    ...           foundation=30)}, start_at=0, now=5)[0].id
    'b'
    """
    rows = []
    for r in rank(entrants, progress, start_at=start_at, now=now):
        finished = r.status == "won"
        rows.append(
            LiveRow(
                r.rank,
                r.player,
                r.name,
                finished,
                r.time_ms if finished else None,
                r.foundation,
                r.moves,
            )
        )
    return rows


__all__ = [
    "ALL_CARDS",
    "CARD_PENALTY_MS",
    "MISSED_ROUND_EXTRA_MS",
    "LiveRow",
    "RoundRow",
    "charge_ms",
    "initial_progress",
    "live_rows",
    "missed_round_ms",
    "round_rows",
    "standings",
    "total_ms",
]
