"""The core's pieces wired over the ports a process runs on: what :class:`~server.core.hub.Hub`
holds, built here so the facade keeps to its lifecycle, requests and bus.

Two steps, because the daily challenge and tournaments (built by the hub between them)
need the rooms, and the archive's writer needs both: :func:`build_rooms` (games, rooms,
presence, sessions, the progress flush), then :func:`build_archive` (the archive's writer
and reads, the accounts' operations).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from crescent_wire import protocol as p
from server.config import Settings
from server.core.account_requests import AccountRequests
from server.core.archive import ArchiveCounts, GameKind
from server.core.archive_reads import ArchiveReads
from server.core.daily import Daily
from server.core.dirty_rooms import DirtyRooms
from server.core.games import Games
from server.core.outbox import Archiver
from server.core.ports import ArchivePorts, Bus, Clock, Parts
from server.core.presence import Presence, presence_stale_ms
from server.core.progress import ProgressFlusher
from server.core.rooms import Rooms
from server.core.session import Sessions
from server.core.tournaments import Tournaments
from server.metrics import Metrics

Spawn = Callable[[Coroutine[Any, Any, Any]], None]


@dataclass(frozen=True, slots=True)
class RoomPieces:
    games: Games
    rooms: Rooms
    presence: Presence
    sessions: Sessions
    progress: ProgressFlusher


@dataclass(frozen=True, slots=True)
class ArchivePieces:
    archiver: Archiver | None  # None with --archive off
    archive_reads: ArchiveReads
    accounts: AccountRequests


def build_rooms(
    parts: Parts, settings: Settings, metrics: Metrics, clock: Clock, bus: Bus, spawn: Spawn
) -> RoomPieces:
    """Games, rooms, presence, sessions and the progress flush."""
    storage = parts.storage
    dirty = DirtyRooms()
    origin = secrets.token_bytes(8)  # this process's id, on the bus and in presence
    games = Games(
        storage,
        metrics,
        clock,
        on_acked=dirty.add,
        on_race_over=lambda code: rooms.finish_soon(code),
        spawn=spawn,
    )
    rooms = Rooms(
        storage,
        bus,
        games,
        metrics,
        clock,
        dirty=dirty,
        spawn=spawn,
        resign_offline_ms=round(settings.disconnect_resign_s * 1000),
        process=origin.hex(),
        presence_stale_ms=presence_stale_ms(settings.presence_timeout_s),
    )
    presence = Presence(storage, rooms, clock, stale_ms=rooms.presence_stale_ms)
    sessions = Sessions(
        storage,
        rooms,
        games,
        parts.signer,
        clock,
        countdown_ms=settings.countdown_ms,
        limits={
            "max_frame": p.MAX_FRAME,
            "rate_per_s": settings.rate_per_s,
            "burst": settings.rate_burst,
        },
        max_open_rooms=settings.max_open_rooms,
        accounts=parts.accounts,
    )
    progress = ProgressFlusher(
        storage,
        rooms,
        games,
        dirty=dirty,
        interval_s=settings.progress_interval_s,
        origin=origin,
    )
    return RoomPieces(games, rooms, presence, sessions, progress)


def build_archive(
    parts: Parts,
    settings: Settings,
    clock: Clock,
    pieces: RoomPieces,
    daily: Daily,
    tournaments: Tournaments,
    metrics: Metrics,
) -> ArchivePieces:
    """The archive's writer and reads, and the accounts' operations (they show the
    archived games). With ``--archive-writer process`` this process only puts what it
    finishes in the outbox; the writer process (server/archive_writer.py) drains it."""
    archiver = archiver_for(
        parts.archive_ports,
        settings,
        clock,
        metrics,
        attempt_limit_ms=daily.attempt_limit_ms,
        drains=settings.archive_writer != "process",
    )
    if archiver is not None:
        tournaments.committer.on_finished = archiver.on_tournament_finished
        pieces.rooms.before_finish = archiver.before_finish
        pieces.rooms.before_next_round = archiver.before_next_round
    archive_reads = ArchiveReads(parts.archive, clock)
    # Accounts (docs/accounts.md): the HTTP routes' operations; revocations on the bus.
    accounts = AccountRequests(
        parts.accounts,
        parts.relying_party,
        parts.signer,
        parts.storage,
        parts.daily_storage,
        clock,
    )
    if parts.archive is not None:
        accounts.archive = archive_reads
    return ArchivePieces(archiver, archive_reads, accounts)


def archiver_for(
    parts: ArchivePorts,
    settings: Settings,
    clock: Clock,
    metrics: Metrics,
    *,
    attempt_limit_ms: int,
    drains: bool,
) -> Archiver | None:
    """The archive's writer over ``parts`` (None without an archive): a serving
    process's, or the writer process's (``drains``: it drains the outbox and runs the
    archive's jobs, its lag and row counts on ``metrics``)."""
    if parts.archive is None or parts.outbox is None:
        return None
    return Archiver(
        parts.storage,
        parts.daily_storage,
        parts.outbox,
        parts.archive,
        clock,
        drain_delay_ms=round(settings.archive_drain_delay_s * 1000),
        put_delay_s=settings.archive_put_delay_s,
        on_lag=lambda pending, oldest_s: _lag_gauges(metrics, pending, oldest_s),
        on_counts=lambda counts: _count_gauges(metrics, counts),
        daily_attempt_limit_ms=attempt_limit_ms,
        drains=drains,
    )


def _lag_gauges(metrics: Metrics, pending: int, oldest_s: float) -> None:
    metrics.archive_pending.set(pending)
    metrics.archive_oldest_s.set(oldest_s)


def _count_gauges(metrics: Metrics, counts: ArchiveCounts) -> None:
    """The archive's row counts: the /metrics gauges."""
    for kind in GameKind:
        metrics.archive_games.labels(kind=str(kind)).set(counts.games.get(kind, 0))
    metrics.archive_racers.set(counts.racers)
    metrics.archive_tournaments.set(counts.tournaments)
    metrics.archive_daily_days.set(counts.daily_days)


__all__ = ["ArchivePieces", "RoomPieces", "archiver_for", "build_archive", "build_rooms"]
