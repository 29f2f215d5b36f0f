"""What the PostgreSQL adapters (:mod:`server.storage.postgres_archive`,
:mod:`server.storage.postgres_accounts`) share: the asyncpg pool, opened and migrated;
a transaction on one of its connections; a read made once more when its pooled
connection was dead; the row count of a command status; a value from a row.

Schema: the plain SQL files of ``server/storage/migrations/`` (``NNNN_name.sql``),
applied in order by :func:`migrate` at start-up and recorded in
``archive_schema_migrations``. :func:`migrate` is idempotent and safe when several
processes start at once: it holds a PostgreSQL advisory lock (per schema) while it
looks and applies, and each file runs in its own transaction with its version row.

Everything lives in the connection's ``search_path`` schema (``public`` by default), so
tests isolate themselves with a private schema (``server_settings={"search_path": ...}``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import asyncpg
from asyncpg import Record
from asyncpg.pool import PoolConnectionProxy

from server.core.ports import StartUpError

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# pg_advisory_lock(MIGRATION_LOCK, hashtext(current_schema())): one migration at a time
# per schema, across every process of every machine using the database.
MIGRATION_LOCK = 0x43524553  # "CRES"
_MIGRATION_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")

Pool = asyncpg.Pool
T = TypeVar("T")
# a pooled connection whose server went away (restarted, or the network cut)
_CONNECTION_LOST = (asyncpg.PostgresConnectionError, ConnectionError)


class PoolOptions(TypedDict, total=False):
    """The pool's options an adapter's ``connect`` passes on (see :func:`open_pool`)."""

    min_size: int
    max_size: int
    server_settings: Mapping[str, str] | None


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


async def open_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    server_settings: Mapping[str, str] | None = None,
) -> Pool:
    """A pool on ``dsn``, migrated (every migration: the archive's and the accounts')."""
    try:
        pool = await asyncpg.create_pool(
            dsn, min_size=min_size, max_size=max_size, server_settings=dict(server_settings or {})
        )
    except (asyncpg.PostgresError, OSError) as exc:  # not the URL: it may hold a password
        raise StartUpError(
            f"the database of --database-url (CRESCENT_DATABASE_URL) cannot be used ({exc}):"
            " create it or correct the URL, or leave it unset for an embedded PostgreSQL"
        ) from exc
    try:
        await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return pool


class PoolOwner:
    """An adapter on a pool: it closes the pool, and runs transactions on it."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def close(self) -> None:
        await self.pool.close()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[PoolConnectionProxy[Record]]:
        """``async with self.transaction() as conn``: a pooled connection in a
        transaction (committed on leaving, rolled back on an exception)."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn


async def again_if_lost(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, made once more (on a fresh connection) if its pooled connection was
    dead: only for what is safe to repeat."""
    try:
        return await call()
    except _CONNECTION_LOST:
        return await call()


def row_count(status: str) -> int:
    """The row count of a command status such as ``INSERT 0 1`` or ``DELETE 5``."""
    return int(status.rsplit(" ", 1)[-1])


def from_row(cls: type[T], row: Record, **converted: Any) -> T:
    """The dataclass ``cls`` from a row whose columns are named as its fields;
    ``converted``, the fields whose column needs converting, given as they are."""
    plain = {name: row[name] for name in _field_names(cls) if name not in converted}
    return cls(**plain, **converted)


_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(field.name for field in dataclasses.fields(cls))
    return names
