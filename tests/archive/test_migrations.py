"""Schema migrations: applied once, in order, safely when several processes start at once."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import asyncpg
import pytest

from server.storage.postgres_pool import MIGRATIONS_DIR, migrate, migrations


async def _pool(dsn: str, schema: str) -> asyncpg.Pool:
    return await asyncpg.create_pool(
        dsn, min_size=1, max_size=2, server_settings={"search_path": schema}
    )


def _copy_first_migration(folder: Path) -> None:
    """A migrations folder holding the first file only (the tests add a second)."""
    folder.mkdir()
    shutil.copy(MIGRATIONS_DIR / "0001_archive.sql", folder)


async def test_migrate_applies_each_file_once(postgres_dsn: str, pg_schema: str) -> None:
    pool = await _pool(postgres_dsn, pg_schema)
    try:
        assert await migrate(pool) == [1, 2, 3]
        assert await migrate(pool) == []
        rows = await pool.fetch(
            "select version, name from archive_schema_migrations order by version"
        )
        assert [(r["version"], r["name"]) for r in rows] == [
            (1, "archive"),
            (2, "accounts"),
            (3, "archive_tournament_players"),
        ]
        tables = await pool.fetch(
            "select table_name from information_schema.tables where table_schema = $1",
            pg_schema,
        )
        assert {r["table_name"] for r in tables} >= {
            "archive_games",
            "archive_racers",
            "archive_tournaments",
            "archive_daily_days",
        }
    finally:
        await pool.close()


async def test_concurrent_start_ups_migrate_once(postgres_dsn: str, pg_schema: str) -> None:
    """Six servers starting together (six pools: six sessions, as six processes would
    be): one applies the schema, the others wait on the advisory lock and find it done."""
    pools = [await _pool(postgres_dsn, pg_schema) for _ in range(6)]
    try:
        results = await asyncio.gather(*(migrate(pool) for pool in pools))
        assert sorted(results) == [[], [], [], [], [], [1, 2, 3]]
        count = await pools[0].fetchval("select count(*) from archive_schema_migrations")
        assert count == 3
    finally:
        for pool in pools:
            await pool.close()


async def test_a_later_migration_is_applied_on_the_next_start(
    postgres_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    folder = tmp_path / "migrations"
    _copy_first_migration(folder)
    pool = await _pool(postgres_dsn, pg_schema)
    try:
        assert await migrate(pool, folder) == [1]
        (folder / "0002_note.sql").write_text(
            "alter table archive_games add column note text not null default '';"
        )
        assert [m.version for m in migrations(folder)] == [1, 2]
        assert await migrate(pool, folder) == [2]
        assert await migrate(pool, folder) == []
        await pool.fetchval("select note from archive_games limit 1")  # the column exists
    finally:
        await pool.close()


async def test_a_failing_migration_leaves_nothing_half_done(
    postgres_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    folder = tmp_path / "migrations"
    _copy_first_migration(folder)
    (folder / "0002_broken.sql").write_text(
        "create table half_done (x int); select * from no_such_table;"
    )
    pool = await _pool(postgres_dsn, pg_schema)
    try:
        with pytest.raises(asyncpg.UndefinedTableError):
            await migrate(pool, folder)
        assert await pool.fetchval("select to_regclass('half_done')") is None
        versions = await pool.fetch("select version from archive_schema_migrations")
        assert [r["version"] for r in versions] == [1]
        # the lock was released: a fixed file applies
        (folder / "0002_broken.sql").write_text("create table half_done (x int);")
        assert await migrate(pool, folder) == [2]
    finally:
        await pool.close()


def test_migration_files_are_named_by_version(tmp_path: Path) -> None:
    (tmp_path / "first.sql").write_text("select 1;")
    with pytest.raises(ValueError, match=r"NNNN_name\.sql"):
        migrations(tmp_path)


async def test_tournaments_archived_before_the_player_index_are_indexed(
    postgres_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    """0003 fills archive_tournament_players from the tournaments already stored."""
    folder = tmp_path / "migrations"
    folder.mkdir()
    for name in ("0001_archive.sql", "0002_accounts.sql"):
        shutil.copy(MIGRATIONS_DIR / name, folder)
    pool = await _pool(postgres_dsn, pg_schema)
    try:
        assert await migrate(pool, folder) == [1, 2]
        standings = [
            {"rank": 1, "player": "p1", "name": "Ada", "points": 7},
            {"rank": 2, "player": "p2", "name": "Bo", "points": 3},
        ]
        record = {"name": "Cup", "variant": "N", "started_at": 1, "standings": standings}
        await pool.execute(
            "insert into archive_tournaments (id, ended_at, revealed_at, record)"
            " values ('T-1', 10, 10, $1::jsonb)",
            json.dumps({**record, "games": []}),
        )
        shutil.copy(MIGRATIONS_DIR / "0003_archive_tournament_players.sql", folder)
        assert await migrate(pool, folder) == [3]
        rows = await pool.fetch(
            "select player, rank, points from archive_tournament_players order by rank"
        )
        assert [tuple(r) for r in rows] == [("p1", 1, 7), ("p2", 2, 3)]
    finally:
        await pool.close()
