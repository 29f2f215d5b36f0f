"""The archive in PostgreSQL, through an asyncpg pool (docs/archive.md). The pool, its
migrations and its transactions: :mod:`server.storage.postgres_pool`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from operator import itemgetter
from typing import Any, Unpack

import asyncpg

from server.core.archive import (
    EXPIRE_BATCH,
    Action,
    Archive,
    ArchiveBatch,
    ArchiveCounts,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    BoardCursor,
    BoardEntry,
    DailyPlacing,
    GameKind,
    HistoryCursor,
    HistoryEntry,
    PlayerTournament,
    RacerResult,
    TournamentPlacing,
    WriteReport,
    ended_before,
)
from server.storage.postgres_pool import (
    PoolOptions,
    PoolOwner,
    again_if_lost,
    from_row,
    open_pool,
    row_count,
)


async def connect(dsn: str, **options: Unpack[PoolOptions]) -> PostgresArchive:
    """A pool on ``dsn``, migrated: the archive ready to use (``close()`` it)."""
    return PostgresArchive(await open_pool(dsn, **options))


PING_TIMEOUT_S = 1.0  # /healthz's "archive": "down" when the database takes longer

_INSERT_GAMES = """
insert into archive_games
    (id, kind, deal, variant, origin, start_at, ended_at, revealed_at, racers)
select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::bigint[], $7::bigint[], $8::bigint[], $9::smallint[])
on conflict (id) do nothing
returning id
"""

_INSERT_RACERS = """
insert into archive_racers
    (game_id, seat, player, name, deal, ended_at, revealed_at,
     rank, status, time_ms, moves, foundation, actions, offsets)
select r.game_id, r.seat, r.player, r.name, r.deal, r.ended_at, r.revealed_at,
       r.rank, r.status, r.time_ms, r.moves, r.foundation, r.actions, r.offsets::integer[]
from unnest($1::text[], $2::smallint[], $3::text[], $4::text[], $5::text[], $6::bigint[],
            $7::bigint[], $8::smallint[], $9::text[], $10::integer[], $11::integer[],
            $12::smallint[], $13::text[], $14::text[])
    as r(game_id, seat, player, name, deal, ended_at, revealed_at,
         rank, status, time_ms, moves, foundation, actions, offsets)
where r.game_id = any($15::text[])
"""

_SELECT_GAME = """
select g.kind, g.deal, g.variant, g.origin, g.start_at, g.ended_at, g.revealed_at,
       r.player, r.name, r.rank, r.status, r.time_ms, r.moves, r.foundation,
       r.actions, r.offsets
from archive_games g join archive_racers r on r.game_id = g.id
where g.id = $1 and g.revealed_at <= $2
order by r.seat
"""

# The paged reads: (the first page, the page after a cursor), keyset paginated: $1 the
# player or deal, $2 now, $3 the row count, then the cursor's columns ($4 ...).
_HISTORY_COLUMNS = """
select r.game_id, g.kind, g.deal, g.variant, g.origin, g.start_at, r.ended_at, g.racers,
       r.rank, r.status, r.time_ms, r.moves, r.foundation
from archive_racers r join archive_games g on g.id = r.game_id
where r.player = $1 and r.revealed_at <= $2
"""
_HISTORY_ORDER = "order by r.ended_at desc, r.game_id desc limit $3"
_HISTORY = (
    _HISTORY_COLUMNS + _HISTORY_ORDER,
    _HISTORY_COLUMNS + "and (r.ended_at, r.game_id) < ($4, $5)\n" + _HISTORY_ORDER,
)

_BOARD_COLUMNS = """
select r.game_id, g.kind, g.origin, r.seat, r.player, r.name, r.ended_at,
       r.rank, r.status, r.time_ms, r.moves, r.foundation
from archive_racers r join archive_games g on g.id = r.game_id
where r.deal = $1 and r.revealed_at <= $2
"""
_BOARD_ORDER = "order by r.board_finished, r.board_score, r.moves, r.game_id, r.seat limit $3"
_BOARD = (
    _BOARD_COLUMNS + _BOARD_ORDER,
    _BOARD_COLUMNS
    + "and (r.board_finished, r.board_score, r.moves, r.game_id, r.seat) > ($4, $5, $6, $7, $8)\n"
    + _BOARD_ORDER,
)

# a new tournament's ranked players, from its record (as migration 0003 fills the table)
_INSERT_TOURNAMENT_PLAYERS = """
insert into archive_tournament_players (tournament_id, player, rank, points, ended_at, revealed_at)
select t.id, s ->> 'player', (s ->> 'rank')::integer, (s ->> 'points')::bigint, t.ended_at,
       t.revealed_at
from archive_tournaments t, jsonb_array_elements(t.record -> 'standings') as s where t.id = $1
on conflict do nothing
"""

_PLAYER_TOURNAMENTS = """
select p.tournament_id, p.rank, p.points, p.ended_at, t.record ->> 'name' as name,
       t.record ->> 'variant' as variant, jsonb_array_length(t.record -> 'standings') as players
from archive_tournament_players p join archive_tournaments t on t.id = p.tournament_id
where p.player = $1 and p.revealed_at <= $2
order by p.ended_at desc, p.tournament_id desc limit $3
"""

# A deleted account's name, everywhere the archive keeps it ($1 the player, $2 the name).
_RENAME_RACERS = "update archive_racers set name = $2 where player = $1"
_RENAME_IN = """
update {table} set record = jsonb_set(record, '{{{key}}}', (
    select jsonb_agg(case when e.item ->> 'player' = $1::text
                          then jsonb_set(e.item, '{{name}}', to_jsonb($2::text)) else e.item end
                     order by e.n)
    from jsonb_array_elements(record -> '{key}') with ordinality as e(item, n)))
where {where}
"""
_IN_TOURNAMENTS = "id in (select tournament_id from archive_tournament_players where player = $1)"
_RENAME_TOURNAMENTS = _RENAME_IN.format(
    table="archive_tournaments", key="standings", where=_IN_TOURNAMENTS
)
# the daily days: one row a day, few enough to scan
_HOLDS = "record -> 'board' @> jsonb_build_array(jsonb_build_object('player', $1::text))"
_RENAME_DAILY_DAYS = _RENAME_IN.format(table="archive_daily_days", key="board", where=_HOLDS)

_EXPIRE = """
with doomed as (
    select id from archive_games where kind = $1 and ended_at < $2 order by ended_at limit $3
)
delete from archive_games g using doomed where g.id = doomed.id
"""


class PostgresArchive(PoolOwner, Archive):
    """The :class:`server.core.archive.Archive` port on an asyncpg pool (migrated).

    A call that finds its pooled connection dead (PostgreSQL restarted since) is made
    once more on a fresh one: every call is safe to repeat, writes included (they skip
    what is stored). Any other failure, or a second one, goes to the caller."""

    async def write(self, batch: ArchiveBatch) -> WriteReport:
        return await again_if_lost(lambda: self._write(batch))

    async def game(self, game_id: str, *, now: int) -> ArchivedGame | None:
        return await again_if_lost(lambda: self._game(game_id, now=now))

    async def tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        return await again_if_lost(lambda: self._tournament(tournament_id, now=now))

    async def daily_day(self, day: str, *, now: int) -> ArchivedDailyDay | None:
        return await again_if_lost(lambda: self._daily_day(day, now=now))

    async def _player_tournaments(
        self, player: str, now: int, limit: int
    ) -> tuple[PlayerTournament, ...]:
        fetch = self.pool.fetch
        rows = await again_if_lost(lambda: fetch(_PLAYER_TOURNAMENTS, player, now, limit))
        columns = ("tournament_id", "name", "variant", "ended_at", "rank", "points", "players")
        return tuple(PlayerTournament(*(row[c] for c in columns)) for row in rows)

    async def rename_player(self, player: str, name: str) -> int:
        return await again_if_lost(lambda: self._rename_player(player, name))

    async def expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        return await again_if_lost(lambda: self._expire(max_age_ms, now=now, limit=limit))

    async def counts(self) -> ArchiveCounts:
        return await again_if_lost(self._counts)

    async def ping(self) -> bool:
        try:
            answer: object = await self.pool.fetchval("select 1", timeout=PING_TIMEOUT_S)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            return False
        return answer == 1

    # --- writing

    async def _write(self, batch: ArchiveBatch) -> WriteReport:
        first_of_id: dict[str, ArchivedGame] = {}
        for game in batch.games:  # a batch may repeat a game: it is one game
            first_of_id.setdefault(game.id, game)
        # in id order: concurrent deliveries of overlapping batches then take the unique
        # index's row locks in the same order (no deadlock), and the later ones skip
        games = [first_of_id[game_id] for game_id in sorted(first_of_id)]
        async with self.transaction() as conn:
            new_games = 0
            if games:
                new_ids = [
                    row["id"] for row in await conn.fetch(_INSERT_GAMES, *_game_columns(games))
                ]
                if new_ids:
                    await conn.execute(_INSERT_RACERS, *_racer_columns(games), new_ids)
                new_games = len(new_ids)
            new_tournaments = 0
            for tournament in batch.tournaments:
                status = await conn.execute(
                    "insert into archive_tournaments (id, ended_at, revealed_at, record)"
                    " values ($1, $2, $3, $4::jsonb) on conflict (id) do nothing",
                    tournament.id,
                    tournament.ended_at,
                    tournament.revealed_at,
                    json.dumps(_tournament_record(tournament)),
                )
                if row_count(status):
                    new_tournaments += 1
                    await conn.execute(_INSERT_TOURNAMENT_PLAYERS, tournament.id)
            new_days = 0
            for day in batch.daily_days:
                status = await conn.execute(
                    "insert into archive_daily_days (day, deal, revealed_at, record)"
                    " values ($1, $2, $3, $4::jsonb) on conflict (day) do nothing",
                    day.day,
                    day.deal,
                    day.revealed_at,
                    json.dumps({"attempts": day.attempts, "board": [asdict(p) for p in day.board]}),
                )
                new_days += row_count(status)
        return WriteReport(new_games, new_tournaments, new_days)

    # --- reading

    async def _game(self, game_id: str, *, now: int) -> ArchivedGame | None:
        rows = await self.pool.fetch(_SELECT_GAME, game_id, now)
        if not rows:
            return None
        first = rows[0]
        return ArchivedGame(
            id=game_id,
            kind=GameKind(first["kind"]),
            deal=first["deal"],
            variant=first["variant"],
            origin=first["origin"],
            start_at=first["start_at"],
            ended_at=first["ended_at"],
            revealed_at=first["revealed_at"],
            racers=tuple(
                ArchivedRacer(
                    player=row["player"],
                    name=row["name"],
                    actions=_actions(row["actions"], row["offsets"]),
                    result=_result(row),
                )
                for row in rows
            ),
        )

    async def _keyset(
        self,
        queries: tuple[str, str],
        key: str,
        now: int,
        count: int,
        after: tuple[Any, ...] | None,
    ) -> list[asyncpg.Record]:
        """The rows of a paged read (``_HISTORY``, ``_BOARD``): its first page, or the
        page after the cursor ``after``."""
        first, following = queries
        if after is None:
            return await again_if_lost(lambda: self.pool.fetch(first, key, now, count))
        return await again_if_lost(lambda: self.pool.fetch(following, key, now, count, *after))

    async def _history_rows(
        self, player: str, now: int, count: int, after: HistoryCursor | None
    ) -> list[HistoryEntry]:
        return [
            from_row(HistoryEntry, row, kind=GameKind(row["kind"]), result=_result(row))
            for row in await self._keyset(_HISTORY, player, now, count, after)
        ]

    async def _board_rows(
        self, deal: str, now: int, count: int, after: BoardCursor | None
    ) -> list[BoardEntry]:
        return [
            from_row(BoardEntry, row, kind=GameKind(row["kind"]), result=_result(row))
            for row in await self._keyset(_BOARD, deal, now, count, after)
        ]

    async def _with_record(
        self, sql: str, key: str, now: int
    ) -> tuple[asyncpg.Record, dict[str, Any]] | None:
        """The one row of ``sql`` (by ``key``, revealed at ``now``) and its ``record``
        column decoded, or None."""
        row = await self.pool.fetchrow(sql, key, now)
        return None if row is None else (row, json.loads(row["record"]))

    async def _tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        found = await self._with_record(
            "select ended_at, revealed_at, record from archive_tournaments"
            " where id = $1 and revealed_at <= $2",
            tournament_id,
            now,
        )
        if found is None:
            return None
        row, record = found
        return ArchivedTournament(
            id=tournament_id,
            name=record["name"],
            variant=record["variant"],
            started_at=record["started_at"],
            ended_at=row["ended_at"],
            revealed_at=row["revealed_at"],
            standings=tuple(TournamentPlacing(**p) for p in record["standings"]),
            games=tuple(record["games"]),
        )

    async def _daily_day(self, day: str, *, now: int) -> ArchivedDailyDay | None:
        found = await self._with_record(
            "select deal, revealed_at, record from archive_daily_days"
            " where day = $1 and revealed_at <= $2",
            day,
            now,
        )
        if found is None:
            return None
        row, record = found
        return ArchivedDailyDay(
            day=day,
            deal=row["deal"],
            revealed_at=row["revealed_at"],
            attempts=record["attempts"],
            board=tuple(DailyPlacing(**p) for p in record["board"]),
        )

    async def _rename_player(self, player: str, name: str) -> int:
        """One transaction: the racer rows (by the history index), then the tournaments
        (by their player index) and the daily days holding the player."""
        async with self.pool.acquire() as conn, conn.transaction():
            changed = 0
            for sql in (_RENAME_RACERS, _RENAME_TOURNAMENTS, _RENAME_DAILY_DAYS):
                changed += row_count(await conn.execute(sql, player, name))
        return changed

    # --- retention and metrics

    async def _expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        deleted = 0
        for kind, cutoff in ended_before(max_age_ms, now).items():
            if deleted >= limit:
                break
            status = await self.pool.execute(_EXPIRE, str(kind), cutoff, limit - deleted)
            deleted += row_count(status)
        return deleted

    async def _counts(self) -> ArchiveCounts:
        # The racers from archive_games.racers (each game's count, written with it), not
        # a count of archive_racers: one scan of the narrow table, not of the logs' (on
        # 1,000,000 games of 3 racers, 0.3 s instead of 1.1 s: docs/archive.md).
        async with self.pool.acquire() as conn:
            rows = await conn.fetch(
                "select kind, count(*) as n, sum(racers) as r from archive_games group by kind"
            )
            tournaments = await conn.fetchval("select count(*) from archive_tournaments")
            days = await conn.fetchval("select count(*) from archive_daily_days")
        by_kind = {GameKind(row["kind"]): row["n"] for row in rows}
        return ArchiveCounts(
            games={kind: by_kind.get(kind, 0) for kind in GameKind},
            racers=sum(int(row["r"]) for row in rows),
            tournaments=int(tournaments),
            daily_days=int(days),
        )


def _game_columns(games: Sequence[ArchivedGame]) -> list[list[Any]]:
    return [
        [g.id for g in games],
        [str(g.kind) for g in games],
        [g.deal for g in games],
        [g.variant for g in games],
        [g.origin for g in games],
        [g.start_at for g in games],
        [g.ended_at for g in games],
        [g.revealed_at for g in games],
        [len(g.racers) for g in games],
    ]


def racer_rows(games: Iterable[ArchivedGame]) -> list[tuple[Any, ...]]:
    """``archive_racers`` rows (its insert's column order); the bulk fill uses them too."""
    return [
        (
            game.id,
            seat,
            racer.player,
            racer.name,
            game.deal,
            game.ended_at,
            game.revealed_at,
            racer.result.rank,
            racer.result.status,
            racer.result.time_ms,
            racer.result.moves,
            racer.result.foundation,
            # in C (map, itemgetter), not a generator a step per action: a racer's log is
            # hundreds of actions and every finished game goes through here
            " ".join(map(itemgetter(1), racer.actions)),
            "{" + ",".join(map(str, map(itemgetter(0), racer.actions))) + "}",
        )
        for game in games
        for seat, racer in enumerate(game.racers)
    ]


def _racer_columns(games: Sequence[ArchivedGame]) -> list[list[Any]]:
    return [list(column) for column in zip(*racer_rows(games), strict=True)]


def _actions(text: str, offsets: Sequence[int]) -> tuple[Action, ...]:
    names = text.split(" ") if text else []
    return tuple(Action(t, a) for t, a in zip(offsets, names, strict=True))


def _result(row: asyncpg.Record) -> RacerResult:
    return from_row(RacerResult, row)


def _tournament_record(tournament: ArchivedTournament) -> dict[str, Any]:
    return {
        "name": tournament.name,
        "variant": tournament.variant,
        "started_at": tournament.started_at,
        "standings": [asdict(p) for p in tournament.standings],
        "games": list(tournament.games),
    }
