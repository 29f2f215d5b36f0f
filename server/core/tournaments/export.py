"""A tournament's exports: everything as JSON (``/api/tournaments/{code}.json``) and
one CSV line per player per finished round, then the standings (``.csv``), every text
cell neutralised against spreadsheet formulas."""

from __future__ import annotations

import csv
import io
from typing import Any, Final

from server.core.ports import Clock, TournamentStorage
from server.core.tournaments.base import load

ROUND_COLUMNS: Final = (
    "round",
    "place",
    "id",
    "name",
    "finished",
    "time_ms",
    "moves",
    "foundation",
    "points",
    "time_charged_ms",
)


async def export(storage: TournamentStorage, code: str, clock: Clock) -> dict[str, Any]:
    """Everything about a tournament (``/api/tournaments/{code}.json``): settings,
    players, every finished round's rows and deal, the standings."""
    t = await load(storage, code)
    results = await storage.all_results(code)
    data = t.public_dict(clock(), spectators=await storage.spectator_count(code))
    data.pop("standings")
    return {
        "tournament": data,
        "players": [
            {
                "id": pl.id,
                "name": pl.name,
                "status": pl.status,
                "joined_at": pl.joined_at,
                "first_round": pl.first_round,
            }
            for pl in t.players
        ],
        "rounds": [
            {**s.to_wire(), "rows": [row.to_record() for row in results.get(s.round, ())]}
            for s in t.finished_rounds
        ],
        "standings": {"final": t.finished, "rows": t.standings()},
    }


def to_csv(data: dict[str, Any]) -> str:
    """One line per player per finished round, then the standings, from :func:`export`'s
    data."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(list(ROUND_COLUMNS))
    for rnd in data["rounds"]:
        for r in rnd["rows"]:
            writer.writerow(
                [
                    rnd["round"],
                    r["place"],
                    r["id"],
                    r["name"],
                    int(r["finished"]),
                    _blank(r["time_ms"]),
                    r["moves"],
                    r["foundation"],
                    _blank(r["points"]),
                    _blank(r["time_charged_ms"]),
                ]
            )
    writer.writerow([])
    score = "points" if data["tournament"]["scoring"] == "placement" else "total_ms"
    writer.writerow(
        ["rank", "id", "name", "status", score, "rounds_won", "best_place", "rounds_played"]
    )
    for row in data["standings"]["rows"]:
        writer.writerow(
            [
                _blank(row["rank"]),
                row["id"],
                row["name"],
                row["status"],
                row[score],
                row["rounds_won"],
                _blank(row["best_place"]),
                row["rounds_played"],
            ]
        )
    return out.getvalue()


def _blank(value: Any) -> Any:
    return "" if value is None else value


# A text cell starting with one of these is read as a formula by spreadsheets (CSV
# injection); OWASP's advice: prefix it with a single quote, and quote cells as usual.
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text, never runs (numbers are left alone).

    >>> neutralise_cell("=1+1"), neutralise_cell("Ada"), neutralise_cell(-5)
    ("'=1+1", 'Ada', -5)
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeCsvWriter:
    """csv.writer (its quoting kept) with every text cell neutralised."""

    def __init__(self, out: io.StringIO) -> None:
        self.writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: list[Any]) -> None:
        self.writer.writerow([neutralise_cell(value) for value in row])
