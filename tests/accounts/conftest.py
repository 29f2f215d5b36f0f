"""Fixtures: the Accounts port on both adapters (PostgreSQL: a private schema per test,
on the PostgreSQL the archive's tests use), a relying party, a software authenticator."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bench.soft_authenticator import SoftAuthenticator
from server.core.accounts import Accounts
from server.core.passkeys import RelyingParty
from server.storage.memory_accounts import MemoryAccounts
from server.storage.postgres_accounts import connect
from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn

__all__ = ["postgres_dsn"]  # the session fixture, shared with tests/archive

ORIGIN = "http://localhost:8080"
RP = RelyingParty("localhost", "Crescent Race", (ORIGIN,))


@pytest.fixture(params=["memory", "postgres"])
def accounts_dsn(request: pytest.FixtureRequest) -> str | None:
    if request.param == "memory":
        return None
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture
async def accounts(accounts_dsn: str | None) -> AsyncIterator[Accounts]:
    if accounts_dsn is None:
        yield MemoryAccounts()
        return
    schema = await _create_schema(accounts_dsn)
    store = await connect(accounts_dsn, max_size=4, server_settings={"search_path": schema})
    try:
        yield store
    finally:
        await store.close()
        await _drop_schema(accounts_dsn, schema)


@pytest.fixture
def authenticator() -> SoftAuthenticator:
    return SoftAuthenticator(ORIGIN, RP.id)
