"""The archive's outbox drained into the archive (docs/archive.md, "The outbox").

One :class:`Drainer` per process (:class:`server.core.outbox.Archiver` owns it): it
claims due entries with a lease (another process's drainer skips them meanwhile),
writes them to the archive in one batch and removes them only once the write
succeeded. The archive's write is idempotent by id, so a crash between the write and
the removal writes nothing twice. A database outage leaves the entries waiting: one log
line when it starts, one when it is over. A note of a race's end that fell due (its
process died before putting the record) goes to the ``recover`` it is given.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from server.core.archive import (
    Archive,
    ArchiveBatch,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedTournament,
    ArchiveError,
)
from server.core.archive_records import Ending, Record, decode_record
from server.core.periodic import run_periodically
from server.core.ports import Clock, Outbox
from server.logs import RepeatedEvent

log = logging.getLogger("server.archive")

DRAIN_BATCH = 100  # records written by one archive transaction, at most
LEASE_MS = 60_000  # a claimed entry is another drainer's again after this
IDLE_S = 1.0  # with nothing due, look again after this (other processes' entries)
GATHER_S = 0.25  # after a wake, wait this long so that a batch gathers
REPORT_EVERY_S = 1.0  # the lag gauges are refreshed this often
RETRY_S = (0.5, 1.0, 2.0, 5.0)  # after a failed write; the last repeats

Recover = Callable[[Ending], Awaitable[None]]


class Drainer:
    """Claims, writes and removes the outbox's due entries, until cancelled."""

    def __init__(
        self,
        outbox: Outbox,
        archive: Archive,
        clock: Clock,
        recover: Recover,
        *,
        drain_delay_ms: int = 0,
        batch: int = DRAIN_BATCH,
        lease_ms: int = LEASE_MS,
        idle_s: float = IDLE_S,
        retry_s: Sequence[float] = RETRY_S,
        on_lag: Callable[[int, float], None] = lambda pending, oldest_s: None,
        gather_s: float = GATHER_S,
    ) -> None:
        self.outbox = outbox
        self.archive = archive
        self.clock = clock
        self.recover = recover
        # Test only (CRESCENT_ARCHIVE_DRAIN_DELAY_S): an entry is drained once this old.
        self.drain_delay_ms = drain_delay_ms
        self.batch = batch
        self.lease_ms = lease_ms
        self.idle_s = idle_s
        self.retry_s = tuple(retry_s)
        self.on_lag = on_lag  # (entries waiting, age of the oldest in s): the gauges
        self.gather_s = gather_s
        self._next_report = 0.0  # loop time of the next refresh of the lag gauges
        self.outage = RepeatedEvent(log, "archive unavailable: finished games wait in the outbox")
        self.written = 0  # games this process wrote to the archive (new ones)
        self.wake = asyncio.Event()  # set by a put of this process: drain soon
        self.stopping = False
        self._failures = 0  # failed passes in a row (the retry pause)
        # Set after each pass that left nothing due (tests wait on it).
        self.caught_up = asyncio.Event()

    async def run(self) -> None:
        """Drain until cancelled (server/core/periodic.py): at once while whole batches
        come, else when a put here wakes it or after ``idle_s`` (other processes'
        entries); after a failure, the next of ``retry_s``."""
        self._failures = 0
        self._next_report = 0.0
        await run_periodically(
            self.drain_step,
            self.idle_s,
            name="archive drainer",
            log=log,
            run_first=True,
            wait=self._pause,
            outage=self.outage,
        )

    async def drain_step(self) -> float:
        """One pass of the drainer; how long to wait for the next one."""
        if self.stopping:  # a cancellation a library swallowed: end all the same
            raise asyncio.CancelledError
        try:
            drained = await self.drain_once()
            now = asyncio.get_running_loop().time()
            if now >= self._next_report:  # the gauges, about once a second
                await self.report_lag()
                self._next_report = now + REPORT_EVERY_S
        except Exception:
            self._failures += 1
            raise
        self._failures = 0
        if drained < self.batch:
            self.caught_up.set()
            self.wake.clear()
            return self.idle_s
        return 0.0

    async def _pause(self, delay: float) -> None:
        if self._failures:
            await asyncio.sleep(self.retry_s[min(self._failures - 1, len(self.retry_s) - 1)])
            return
        if delay <= 0:
            await asyncio.sleep(0)
            return
        # Until a put here wakes it, or ``delay``. Not asyncio.wait_for: on 3.11 its inner
        # task could keep a cancelled drainer (the server's shutdown) waiting.
        timer = asyncio.get_running_loop().call_later(delay, self.wake.set)
        try:
            await self.wake.wait()
        finally:
            timer.cancel()
        # Woken by a put: let the games ending meanwhile join it, so that a busy server
        # writes batches (one transaction each), not a game at a time.
        if self.gather_s and not self.stopping:
            await asyncio.sleep(self.gather_s)

    async def drain_once(self) -> int:
        """Claim a batch of due entries, write it, remove it; how many were claimed."""
        now = self.clock()
        entries = await self.outbox.claim(
            now=now, due_by=now - self.drain_delay_ms, limit=self.batch, lease_ms=self.lease_ms
        )
        if not entries:
            return 0
        records: list[Record] = []
        for entry in entries:
            try:
                decoded = decode_record(entry.record)
                if isinstance(decoded, Ending):
                    await self.recover(decoded)
                else:
                    records.append(decoded)
            except ArchiveError as exc:  # never archivable: it would block the outbox
                log.error(
                    "outbox entry is not an archive record: dropped",
                    extra={"entry": entry.id, "error": exc.message},
                )
        report = await self.archive.write(
            ArchiveBatch(
                games=tuple(r for r in records if isinstance(r, ArchivedGame)),
                tournaments=tuple(r for r in records if isinstance(r, ArchivedTournament)),
                daily_days=tuple(r for r in records if isinstance(r, ArchivedDailyDay)),
            )
        )
        self.written += report.games
        await self.outbox.remove([entry.id for entry in entries])
        return len(entries)

    async def report_lag(self) -> None:
        """The outbox's lag to ``on_lag`` (the /metrics gauges)."""
        pending, oldest_s = await self.waiting()
        self.on_lag(pending, oldest_s)

    async def waiting(self) -> tuple[int, float]:
        """Entries waiting in the outbox (every process's), and the oldest one's age in s."""
        stats = await self.outbox.stats()
        oldest_s = 0.0
        if stats.oldest_put_at is not None:
            oldest_s = max(0.0, (self.clock() - stats.oldest_put_at) / 1000)
        return stats.pending, oldest_s

    async def lag(self) -> dict[str, Any]:
        """For /healthz: entries waiting, the oldest one's age, whether the archive is
        answering (as the drainer last found it)."""
        pending, oldest_s = await self.waiting()
        return {
            "pending": pending,
            "oldest_pending_s": round(oldest_s, 3),
            "archive": "down" if self.outage.active else "up",
        }
