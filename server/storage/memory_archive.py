"""The archive in memory (one process, no I/O): for the core's fast tests.

Same contract as :mod:`server.storage.postgres_archive`
(tests/archive/test_contract.py runs both).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from server.core.archive import (
    EXPIRE_BATCH,
    Archive,
    ArchiveBatch,
    ArchiveCounts,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedTournament,
    BoardCursor,
    BoardEntry,
    GameKind,
    HistoryCursor,
    HistoryEntry,
    PlayerTournament,
    WriteReport,
    board_entries,
    ended_before,
    history_entry,
    player_tournaments_of,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


class MemoryArchive(Archive):
    def __init__(self) -> None:
        self.games: dict[str, ArchivedGame] = {}
        self.tournaments: dict[str, ArchivedTournament] = {}
        self.daily_days: dict[str, ArchivedDailyDay] = {}

    async def write(self, batch: ArchiveBatch) -> WriteReport:
        games = tournaments = days = 0
        for game in batch.games:
            if game.id not in self.games:
                self.games[game.id] = game
                games += 1
        for tournament in batch.tournaments:
            if tournament.id not in self.tournaments:
                self.tournaments[tournament.id] = tournament
                tournaments += 1
        for day in batch.daily_days:
            if day.day not in self.daily_days:
                self.daily_days[day.day] = day
                days += 1
        return WriteReport(games, tournaments, days)

    async def game(self, game_id: str, *, now: int) -> ArchivedGame | None:
        game = self.games.get(game_id)
        return game if game is not None and game.revealed_at <= now else None

    async def _history_rows(
        self, player: str, now: int, count: int, after: HistoryCursor | None
    ) -> Sequence[HistoryEntry]:
        entries: list[HistoryEntry] = []
        for game in self.games.values():
            if game.revealed_at > now:
                continue
            if after is not None and (game.ended_at, game.id) >= tuple(after):
                continue
            for racer in game.racers:
                if racer.player == player:
                    entries.append(history_entry(game, racer))
        entries.sort(key=lambda e: (e.ended_at, e.game_id), reverse=True)
        return entries[:count]

    async def _board_rows(
        self, deal: str, now: int, count: int, after: BoardCursor | None
    ) -> Sequence[BoardEntry]:
        rows: list[BoardEntry] = [
            entry
            for game in self.games.values()
            if game.deal == deal and game.revealed_at <= now
            for entry in board_entries(game)
            if after is None or entry.cursor > after
        ]
        rows.sort(key=lambda e: e.cursor)
        return rows[:count]

    async def tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        tournament = self.tournaments.get(tournament_id)
        return tournament if tournament is not None and tournament.revealed_at <= now else None

    async def daily_day(self, day: str, *, now: int) -> ArchivedDailyDay | None:
        record = self.daily_days.get(day)
        return record if record is not None and record.revealed_at <= now else None

    async def _player_tournaments(
        self, player: str, now: int, limit: int
    ) -> tuple[PlayerTournament, ...]:
        return player_tournaments_of(list(self.tournaments.values()), player, now=now, limit=limit)

    async def rename_player(self, player: str, name: str) -> int:
        return (
            _rename_in(self.games, "racers", player, name)
            + _rename_in(self.tournaments, "standings", player, name)
            + _rename_in(self.daily_days, "board", player, name)
        )

    async def expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        cutoff = ended_before(max_age_ms, now)
        doomed = [
            game_id
            for game_id, game in self.games.items()
            if game.kind in cutoff and game.ended_at < cutoff[game.kind]
        ][:limit]
        for game_id in doomed:
            del self.games[game_id]
        return len(doomed)

    async def counts(self) -> ArchiveCounts:
        games: dict[GameKind, int] = dict.fromkeys(GameKind, 0)
        for game in self.games.values():
            games[game.kind] += 1
        return ArchiveCounts(
            games=games,
            racers=sum(len(g.racers) for g in self.games.values()),
            tournaments=len(self.tournaments),
            daily_days=len(self.daily_days),
        )

    async def close(self) -> None:
        return None


def _rename_in(records: dict[str, R], field: str, player: str, name: str) -> int:
    """Give ``player`` the ``name`` in each record's ``field`` (a tuple of entries with a
    ``player`` and a ``name``: a game's racers, a tournament's standings, a day's board);
    the number of records changed."""
    changed = 0
    for key, record in records.items():
        entries: tuple[Any, ...] = getattr(record, field)
        if any(entry.player == player for entry in entries):
            renamed = tuple(
                dataclasses.replace(entry, name=name) if entry.player == player else entry
                for entry in entries
            )
            records[key] = dataclasses.replace(record, **{field: renamed})
            changed += 1
    return changed
