"""The composition root: the ports one server process runs on, built from the settings.

:func:`build_parts` is the one place that picks the adapters — Redis (one server or a
Redis Cluster, by the URL: :mod:`server.storage.redis`) or memory (``--storage memory``:
this process only, :mod:`server.storage.memory`) — and the CPU runners; the web layer
(:func:`server.web.create_app`) and the core (:class:`server.core.hub.Hub`) take what it
builds and import no adapter. A new port (the archive, accounts) is a field of
:class:`~server.core.ports.Parts` built here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import NamedTuple

from server.auth import TokenSigner, check_secret
from server.config import Settings
from server.core.accounts import Accounts
from server.core.archive import Archive
from server.core.daily import fixed_deal_source, solver_deal_source
from server.core.passkeys import RelyingParty
from server.core.ports import (
    ArchivePorts,
    DailyStorage,
    Outbox,
    Parts,
    Storage,
    TournamentStorage,
)
from server.core.tournaments import CERTIFY_BUDGET_S
from server.cpu import ProcessCpu
from server.metrics import Metrics
from server.storage.memory import MemoryStorage
from server.storage.memory_accounts import MemoryAccounts
from server.storage.memory_archive import MemoryArchive
from server.storage.memory_daily import MemoryDailyStorage
from server.storage.memory_outbox import MemoryOutbox
from server.storage.memory_tournament import MemoryTournamentStorage
from server.storage.postgres_accounts import connect as connect_accounts
from server.storage.postgres_archive import connect as connect_archive
from server.storage.redis import RedisStorage
from server.storage.redis_daily import RedisDailyStorage
from server.storage.redis_outbox import RedisOutbox
from server.storage.redis_tournament import RedisTournamentStorage

log = logging.getLogger("server.compose")


class Stores(NamedTuple):
    """The storage ports of one kind of storage, and the token secret it agreed on."""

    storage: Storage
    daily: DailyStorage
    tournaments: TournamentStorage
    secret: str


@contextlib.asynccontextmanager
async def build_parts(settings: Settings, metrics: Metrics) -> AsyncIterator[Parts]:
    """The parts for ``settings`` (``settings.storage``: ``redis`` or ``memory``), open
    while the context lasts; on the way out the CPU runners close, then the storage (the
    hub using them must be stopped first)."""
    if settings.secret is not None:
        check_secret(settings.secret)  # python3 -m server refused it already, with usage
    async with contextlib.AsyncExitStack() as stack:
        if settings.storage == "memory":
            stores = memory_stores(settings)
        else:
            stores = await stack.enter_async_context(redis_stores(settings, metrics))
        cpu = ProcessCpu()  # the solver's worker process starts at the first job
        # Deal certification (the daily's, tournaments'): its own worker, so a long
        # certification never holds up a player's hint.
        background_cpu = ProcessCpu(max_jobs=8)
        stack.push_async_callback(_close_all, cpu, background_cpu)
        archive, outbox = await archive_parts(settings, stores, stack)
        accounts = await accounts_port(settings, stack)
        yield Parts(
            storage=stores.storage,
            daily_storage=stores.daily,
            tournament_storage=stores.tournaments,
            cpu=cpu,
            daily_deals=(
                fixed_deal_source(settings.daily_deal)
                if settings.daily_deal
                else solver_deal_source(
                    background_cpu, settings.daily_solver_seconds, wait_when_busy_s=0.5
                )
            ),
            tournament_deals=solver_deal_source(background_cpu, CERTIFY_BUDGET_S),
            signer=token_signer(settings, stores.secret),
            archive=archive,
            outbox=outbox,
            accounts=accounts,
            relying_party=relying_party(settings),
        )


@contextlib.asynccontextmanager
async def build_writer_ports(settings: Settings, metrics: Metrics) -> AsyncIterator[ArchivePorts]:
    """The archive writer process's ports (server/archive_writer.py): the Redis storage,
    the daily's, the archive and its outbox; no solver runners and no accounts, which it
    never uses."""
    async with contextlib.AsyncExitStack() as stack:
        stores = await stack.enter_async_context(redis_stores(settings, metrics))
        archive, outbox = await archive_parts(settings, stores, stack)
        yield ArchivePorts(stores.storage, stores.daily, archive, outbox)


async def archive_parts(
    settings: Settings, stores: Stores, stack: contextlib.AsyncExitStack
) -> tuple[Archive | None, Outbox | None]:
    """The archive and its outbox (docs/archive.md): none with ``--archive off`` (or no
    ``database_url``); in memory with ``--storage memory``; else PostgreSQL
    (``settings.database_url``, migrated here: a database that does not answer at
    start-up stops the start) and the outbox in the Redis of the rooms."""
    if not settings.archive:
        return None, None
    if settings.storage == "memory":
        return MemoryArchive(), MemoryOutbox()
    if settings.database_url is None:
        # python3 -m server always has one (the embedded PostgreSQL when none is
        # configured); an app built directly from Settings (the web tests) may not.
        log.info("no database_url: no game is archived")
        return None, None
    assert isinstance(stores.storage, RedisStorage)
    archive = await connect_archive(settings.database_url)
    stack.push_async_callback(archive.close)
    store = stores.storage
    outbox = RedisOutbox(
        store.redis,
        settings.key_prefix,
        run=store.run_commands,
        guard=store.guarded,
        replicated=store.replicated_so_far if settings.redis_wait_replicas > 0 else None,
    )
    return archive, outbox


async def accounts_port(settings: Settings, stack: contextlib.AsyncExitStack) -> Accounts | None:
    """The accounts store (docs/accounts.md): none with ``--archive off`` (no database);
    in memory with ``--storage memory``; else
    PostgreSQL at ``settings.database_url`` (the archive's database, migrated here); None
    without a database (an app built directly from Settings, as the web tests do)."""
    if not settings.archive:
        return None  # --archive off: no database is used at all
    if settings.storage == "memory":
        return MemoryAccounts()
    if settings.database_url is None:
        log.info("no database_url: no accounts")
        return None
    accounts = await connect_accounts(settings.database_url)
    stack.push_async_callback(accounts.close)
    return accounts


def relying_party(settings: Settings) -> RelyingParty:
    """WebAuthn's view of this server, from ``--rp-id`` and ``--origins``."""
    return RelyingParty(settings.rp_id, "Crescent Race", settings.relying_party_origins())


def token_signer(settings: Settings, secret: str) -> TokenSigner:
    """Signs with ``secret``; also verifies with the previous secret until its grace
    period ends (docs/server.md, "Secrets")."""
    if settings.previous_secret_until is not None:
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(settings.previous_secret_until))
        if time.time() < settings.previous_secret_until:
            log.info("the previous secret verifies tokens until " + until)
        else:
            log.warning(
                f"the previous secret's grace period ended at {until}: it verifies no "
                "token; remove --previous-secret (CRESCENT_PREVIOUS_SECRET)"
            )
    return TokenSigner(
        secret, previous=settings.previous_secret, previous_until=settings.previous_secret_until
    )


async def _close_all(*runners: ProcessCpu) -> None:
    await asyncio.gather(*(runner.close() for runner in runners))


def memory_stores(settings: Settings) -> Stores:
    """In this process's memory: nothing shared with another process, nothing kept."""
    storage = MemoryStorage()
    return Stores(
        storage,
        MemoryDailyStorage(storage.created.get),
        MemoryTournamentStorage(),
        settings.secret or secrets.token_urlsafe(32),
    )


@contextlib.asynccontextmanager
async def redis_stores(settings: Settings, metrics: Metrics) -> AsyncIterator[Stores]:
    """On the Redis (or Redis Cluster) of ``settings.redis_url``; the secret, unless
    configured, is the one every process sharing that Redis stored first."""
    if settings.redis_url is None:
        raise RuntimeError(
            "the redis storage needs settings.redis_url (python3 -m server starts an "
            "embedded Redis when none is configured)"
        )
    store = RedisStorage(
        settings.redis_url,
        settings.key_prefix,
        fast="redis" in settings.fast_paths,
        deadline_s=settings.redis_deadline_s,
        wait_replicas=settings.redis_wait_replicas,
        wait_timeout_ms=settings.redis_wait_timeout_ms,
    )
    await store.start()
    try:
        secret = settings.secret or await store.ensure_secret(secrets.token_urlsafe(32))
        store.on_batch = lambda size, _seconds: metrics.batch_size.observe(size)
        metrics.redis_up.set_function(lambda: 1.0 if store.health.up else 0.0)
        store.health.on_change = lambda master, up: metrics.redis_master_up.labels(
            master=master
        ).set(1 if up else 0)
        yield Stores(
            store,
            RedisDailyStorage(store.redis, settings.key_prefix, guard=store.guarded),
            RedisTournamentStorage(
                store.redis, settings.key_prefix, deadline_s=settings.redis_deadline_s * 2
            ),
            secret,
        )
    finally:
        await store.close()


__all__ = ["Stores", "build_parts", "memory_stores", "redis_stores"]
