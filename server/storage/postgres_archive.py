"""The archive in PostgreSQL, through an asyncpg pool (docs/archive.md).

Schema: the plain SQL files of ``server/storage/migrations/`` (``NNNN_name.sql``),
applied in order by :func:`migrate` at start-up and recorded in
``archive_schema_migrations``. :func:`migrate` is idempotent and safe when several
processes start at once: it holds a PostgreSQL advisory lock (per schema) while it
looks and applies, and each file runs in its own transaction with its version row.

Everything lives in the connection's ``search_path`` schema (``public`` by default), so
tests isolate themselves with a private schema (``server_settings={"search_path": ...}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from server.core.archive import (
    BOARD_PAGE,
    EXPIRE_BATCH,
    HISTORY_PAGE,
    Action,
    ArchiveBatch,
    ArchiveCounts,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    BoardCursor,
    BoardEntry,
    BoardPage,
    DailyPlacing,
    GameKind,
    HistoryCursor,
    HistoryEntry,
    HistoryPage,
    RacerResult,
    TournamentPlacing,
    WriteReport,
    check_page_size,
    ended_before,
)

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# pg_advisory_lock(MIGRATION_LOCK, hashtext(current_schema())): one migration at a time
# per schema, across every process of every machine using the database.
MIGRATION_LOCK = 0x43524553  # "CRES"
_MIGRATION_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")

Pool = asyncpg.Pool


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations(folder: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The migration files of ``folder`` in version order (``0001_archive.sql`` ...)."""
    found = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION_NAME.fullmatch(path.name)
        if match is None:
            raise ValueError(f"migration file not named NNNN_name.sql: {path}")
        found.append(Migration(int(match[1]), match[2], path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"two migrations share a version in {folder}: {versions}")
    return found


async def migrate(pool: Pool, folder: Path = MIGRATIONS_DIR) -> list[int]:
    """Apply the migrations not yet applied; the versions it applied (none: up to date)."""
    applied_now: list[int] = []
    async with pool.acquire() as conn:
        await conn.execute(
            "select pg_advisory_lock($1, hashtext(current_schema()))", MIGRATION_LOCK
        )
        try:
            await conn.execute(
                "create table if not exists archive_schema_migrations ("
                " version integer primary key, name text not null,"
                " applied_at timestamptz not null default now())"
            )
            done = {
                row["version"]
                for row in await conn.fetch("select version from archive_schema_migrations")
            }
            for migration in migrations(folder):
                if migration.version in done:
                    continue
                async with conn.transaction():
                    await conn.execute(migration.sql)
                    await conn.execute(
                        "insert into archive_schema_migrations (version, name) values ($1, $2)",
                        migration.version,
                        migration.name,
                    )
                applied_now.append(migration.version)
        finally:
            await conn.execute(
                "select pg_advisory_unlock($1, hashtext(current_schema()))", MIGRATION_LOCK
            )
    return applied_now


async def connect(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    server_settings: Mapping[str, str] | None = None,
) -> PostgresArchive:
    """A pool on ``dsn``, migrated: the archive ready to use (``close()`` it)."""
    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, server_settings=dict(server_settings or {})
    )
    try:
        await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return PostgresArchive(pool)


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

_HISTORY_COLUMNS = """
select r.game_id, g.kind, g.deal, g.variant, g.origin, g.start_at, r.ended_at, g.racers,
       r.rank, r.status, r.time_ms, r.moves, r.foundation
from archive_racers r join archive_games g on g.id = r.game_id
"""
_HISTORY_FIRST = (
    _HISTORY_COLUMNS
    + """where r.player = $1 and r.revealed_at <= $2
order by r.ended_at desc, r.game_id desc limit $3"""
)
_HISTORY_AFTER = (
    _HISTORY_COLUMNS
    + """where r.player = $1 and r.revealed_at <= $2 and (r.ended_at, r.game_id) < ($4, $5)
order by r.ended_at desc, r.game_id desc limit $3"""
)

_BOARD_COLUMNS = """
select r.game_id, g.kind, g.origin, r.seat, r.player, r.name, r.ended_at,
       r.rank, r.status, r.time_ms, r.moves, r.foundation
from archive_racers r join archive_games g on g.id = r.game_id
"""
_BOARD_ORDER = "order by r.board_finished, r.board_score, r.moves, r.game_id, r.seat limit $3"
_BOARD_FIRST = _BOARD_COLUMNS + "where r.deal = $1 and r.revealed_at <= $2\n" + _BOARD_ORDER
_BOARD_AFTER = (
    _BOARD_COLUMNS
    + """where r.deal = $1 and r.revealed_at <= $2
  and (r.board_finished, r.board_score, r.moves, r.game_id, r.seat) > ($4, $5, $6, $7, $8)
"""
    + _BOARD_ORDER
)

_EXPIRE = """
with doomed as (
    select id from archive_games where kind = $1 and ended_at < $2 order by ended_at limit $3
)
delete from archive_games g using doomed where g.id = doomed.id
"""


class PostgresArchive:
    """The :class:`server.core.archive.Archive` port on an asyncpg pool (migrated).

    A call that finds its pooled connection dead (PostgreSQL restarted since) is made
    once more on a fresh one: every call is safe to repeat, writes included (they skip
    what is stored). Any other failure, or a second one, goes to the caller."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def close(self) -> None:
        await self.pool.close()

    async def write(self, batch: ArchiveBatch) -> WriteReport:
        return await _again_if_lost(lambda: self._write(batch))

    async def game(self, game_id: str, *, now: int) -> ArchivedGame | None:
        return await _again_if_lost(lambda: self._game(game_id, now=now))

    async def history(
        self,
        player: str,
        *,
        now: int,
        limit: int = HISTORY_PAGE,
        after: HistoryCursor | None = None,
    ) -> HistoryPage:
        return await _again_if_lost(
            lambda: self._history(player, now=now, limit=limit, after=after)
        )

    async def board(
        self,
        deal: str,
        *,
        now: int,
        limit: int = BOARD_PAGE,
        after: BoardCursor | None = None,
    ) -> BoardPage:
        return await _again_if_lost(lambda: self._board(deal, now=now, limit=limit, after=after))

    async def tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        return await _again_if_lost(lambda: self._tournament(tournament_id, now=now))

    async def daily_day(self, day: str, *, now: int) -> ArchivedDailyDay | None:
        return await _again_if_lost(lambda: self._daily_day(day, now=now))

    async def expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        return await _again_if_lost(lambda: self._expire(max_age_ms, now=now, limit=limit))

    async def counts(self) -> ArchiveCounts:
        return await _again_if_lost(self._counts)

    # --- writing

    async def _write(self, batch: ArchiveBatch) -> WriteReport:
        first_of_id: dict[str, ArchivedGame] = {}
        for game in batch.games:  # a batch may repeat a game: it is one game
            first_of_id.setdefault(game.id, game)
        # in id order: concurrent deliveries of overlapping batches then take the unique
        # index's row locks in the same order (no deadlock), and the later ones skip
        games = [first_of_id[game_id] for game_id in sorted(first_of_id)]
        async with self.pool.acquire() as conn, conn.transaction():
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
                new_tournaments += _rows(status)
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
                new_days += _rows(status)
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

    async def _history(
        self,
        player: str,
        *,
        now: int,
        limit: int = HISTORY_PAGE,
        after: HistoryCursor | None = None,
    ) -> HistoryPage:
        check_page_size(limit)
        if after is None:
            rows = await self.pool.fetch(_HISTORY_FIRST, player, now, limit + 1)
        else:
            rows = await self.pool.fetch(
                _HISTORY_AFTER, player, now, limit + 1, after.ended_at, after.game_id
            )
        entries = tuple(
            HistoryEntry(
                game_id=row["game_id"],
                kind=GameKind(row["kind"]),
                deal=row["deal"],
                variant=row["variant"],
                origin=row["origin"],
                start_at=row["start_at"],
                ended_at=row["ended_at"],
                racers=row["racers"],
                result=_result(row),
            )
            for row in rows[:limit]
        )
        return HistoryPage(entries, entries[-1].cursor if len(rows) > limit else None)

    async def _board(
        self,
        deal: str,
        *,
        now: int,
        limit: int = BOARD_PAGE,
        after: BoardCursor | None = None,
    ) -> BoardPage:
        check_page_size(limit)
        if after is None:
            rows = await self.pool.fetch(_BOARD_FIRST, deal, now, limit + 1)
        else:
            rows = await self.pool.fetch(_BOARD_AFTER, deal, now, limit + 1, *after)
        entries = tuple(
            BoardEntry(
                game_id=row["game_id"],
                kind=GameKind(row["kind"]),
                origin=row["origin"],
                seat=row["seat"],
                player=row["player"],
                name=row["name"],
                ended_at=row["ended_at"],
                result=_result(row),
            )
            for row in rows[:limit]
        )
        return BoardPage(entries, entries[-1].cursor if len(rows) > limit else None)

    async def _tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        row = await self.pool.fetchrow(
            "select ended_at, revealed_at, record from archive_tournaments"
            " where id = $1 and revealed_at <= $2",
            tournament_id,
            now,
        )
        if row is None:
            return None
        record = json.loads(row["record"])
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
        row = await self.pool.fetchrow(
            "select deal, revealed_at, record from archive_daily_days"
            " where day = $1 and revealed_at <= $2",
            day,
            now,
        )
        if row is None:
            return None
        record = json.loads(row["record"])
        return ArchivedDailyDay(
            day=day,
            deal=row["deal"],
            revealed_at=row["revealed_at"],
            attempts=record["attempts"],
            board=tuple(DailyPlacing(**p) for p in record["board"]),
        )

    # --- retention and metrics

    async def _expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        deleted = 0
        for kind, cutoff in ended_before(max_age_ms, now).items():
            if deleted >= limit:
                break
            status = await self.pool.execute(_EXPIRE, str(kind), cutoff, limit - deleted)
            deleted += _rows(status)
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


T = TypeVar("T")
# a pooled connection whose server went away (restarted, or the network cut)
_CONNECTION_LOST = (asyncpg.PostgresConnectionError, ConnectionError)


async def _again_if_lost(call: Callable[[], Awaitable[T]]) -> T:
    try:
        return await call()
    except _CONNECTION_LOST:
        return await call()


def _rows(status: str) -> int:
    """The row count of a command status such as ``INSERT 0 1`` or ``DELETE 5``."""
    return int(status.rsplit(" ", 1)[-1])


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
    return RacerResult(
        rank=row["rank"],
        status=row["status"],
        time_ms=row["time_ms"],
        moves=row["moves"],
        foundation=row["foundation"],
    )


def _tournament_record(tournament: ArchivedTournament) -> dict[str, Any]:
    return {
        "name": tournament.name,
        "variant": tournament.variant,
        "started_at": tournament.started_at,
        "standings": [asdict(p) for p in tournament.standings],
        "games": list(tournament.games),
    }
