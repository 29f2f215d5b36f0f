"""Fixtures: a real PostgreSQL (the one on 127.0.0.1:5432, else an embedded one started
for the session) with a private schema per test, and the archive on both adapters."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from server.core.archive import Archive
from server.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresError
from server.storage.memory_archive import MemoryArchive
from server.storage.postgres_archive import connect

# CRESCENT_TEST_DATABASE_URL overrides; the development machines have this one
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


async def _answers(dsn: str) -> str | None:
    try:
        conn = await asyncpg.connect(dsn, timeout=5)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A PostgreSQL to test against: CRESCENT_TEST_DATABASE_URL, else the local one on
    127.0.0.1:5432, else an embedded one started for the session; skip only if none
    answers and none can be started."""
    dsn = os.environ.get("CRESCENT_TEST_DATABASE_URL", LOCAL_POSTGRES)
    problem = asyncio.run(_answers(dsn))
    if problem is None:
        yield dsn
        return
    folder = reachable_temp_dir()
    embedded = EmbeddedPostgres(folder / "data")
    try:
        embedded.start()
    except (EmbeddedPostgresError, OSError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"no PostgreSQL: {dsn} does not answer ({problem}); embedded: {exc}")
    try:
        yield embedded.url
    finally:
        embedded.stop()
        shutil.rmtree(folder, ignore_errors=True)


def reachable_temp_dir() -> Path:
    """A new folder in the system's temp folder that the unprivileged user the embedded
    PostgreSQL runs as under root can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="crescent-archive-test-"))
    folder.chmod(0o755)
    return folder


async def _create_schema(dsn: str) -> str:
    name = f"archive_test_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"create schema {name}")
    finally:
        await conn.close()
    return name


async def _drop_schema(dsn: str, name: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"drop schema {name} cascade")
    finally:
        await conn.close()


@pytest.fixture
async def pg_schema(postgres_dsn: str) -> AsyncIterator[str]:
    """A fresh schema, dropped with everything in it after the test."""
    name = await _create_schema(postgres_dsn)
    try:
        yield name
    finally:
        await _drop_schema(postgres_dsn, name)


@pytest.fixture(params=["memory", "postgres"])
def archive_dsn(request: pytest.FixtureRequest) -> str | None:
    """None for the in-memory adapter, else the PostgreSQL to use."""
    if request.param == "memory":
        return None
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture
async def archive(archive_dsn: str | None) -> AsyncIterator[Archive]:
    """The archive on each adapter (PostgreSQL: migrated into a private schema)."""
    if archive_dsn is None:
        yield MemoryArchive()
        return
    schema = await _create_schema(archive_dsn)
    archive = await connect(archive_dsn, max_size=4, server_settings={"search_path": schema})
    try:
        yield archive
    finally:
        await archive.close()
        await _drop_schema(archive_dsn, schema)
