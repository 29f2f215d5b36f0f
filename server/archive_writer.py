"""The archive writer process (``--archive-writer process``; docs/archive.md, "The writer
process").

With it, the serving processes only put each finished game's record in the outbox (one
Redis call at the end of a game); this one process drains the outbox into PostgreSQL
and runs the archive's jobs (the revealed daily days, retention, the row counts), so
the decoding and the database's writes take nothing from the processes that answer
the players. The supervisor starts it beside the workers (server/supervisor.py), with
the same arguments, and restarts it like a worker; it serves nothing. Its lag and row
counts reach /metrics through the workers' shared metric files; /healthz of a worker
reads the outbox's lag from Redis and asks the archive whether it answers.

The outbox makes this safe to stop, kill or run twice at any moment: entries are
claimed with a lease, written by id (idempotent) and removed after the write, so a
writer that dies leaves its claimed entries to the next one after the lease.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from server.compose import build_writer_ports
from server.config import Settings
from server.core.daily import attempt_limit_ms
from server.core.ports import wall_clock_ms
from server.core.wiring import archiver_for
from server.metrics import Metrics
from server.supervisor import ROLE_ENV, WRITER_ROLE, worker_serving

log = logging.getLogger("server.archive")


def is_archive_writer() -> bool:
    return os.environ.get(ROLE_ENV) == WRITER_ROLE


async def write_archive(settings: Settings) -> None:
    """Drain the outbox into the archive until SIGTERM/SIGINT."""
    metrics = Metrics()
    async with build_writer_ports(settings, metrics) as ports:
        archiver = archiver_for(
            ports,
            settings,
            wall_clock_ms,
            metrics,
            attempt_limit_ms=attempt_limit_ms(settings.daily_time_limit_s, settings.countdown_ms),
            drains=True,
        )
        if archiver is None:
            raise SystemExit("the archive writer needs the archive: --archive on, a database")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        archiver.start()
        sharing = await worker_serving(ports.storage.ping, metrics.share)
        log.info("archive writer: draining the outbox into the archive")
        await stop.wait()
        if sharing is not None:
            sharing.cancel()
        await archiver.stop()
        log.info("archive writer stopped")


__all__ = ["is_archive_writer", "write_archive"]
