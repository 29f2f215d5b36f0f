"""The daily challenge's days (docs/daily.md): the deal sources, and :class:`DayKeeper`,
which prepares and commits the coming days (the solver run under a lease, one process
at a time) and reads the days' records for the requests (never computing one there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Final

from crescent_wire.daily import DayInfo
from crescent_wire.errors import DailyError
from server.core.ports import Clock, CpuBusy, CpuRunner, DailyStorage, DealSource
from server.daily import Commitment, Day, DayRecord, days_to_prepare, reveal_at
from server.tasks import cancel_and_wait

log = logging.getLogger("server.daily")

# A day's certification is leased to one process at a time (across processes, in
# storage): the others read its stored record instead of running the solver too. The
# holder renews the lease while the solver runs; a dead holder's lease lapses.
CERTIFY_LEASE_MS: Final = 30_000
CERTIFY_RENEW_S: Final = 10.0
# While a coming day has no record yet (another process is certifying it, or a try
# failed), the check comes back this soon instead of after daily_check_interval_s.
PENDING_CHECK_S: Final = 1.0


def certify(variant: str, max_seconds: float) -> str:
    """A deal code the solver proved winnable (run in a worker process)."""
    from server.solver import certified_deal

    return str(certified_deal(variant, max_seconds=max_seconds).code)


def solver_deal_source(
    cpu: CpuRunner, max_seconds: float, *, wait_when_busy_s: float | None = None
) -> DealSource:
    """Deals the solver proved winnable, each drawn by ``cpu`` (off the event loop in the
    server: the compiled search holds the GIL for its whole run). When the runner is
    full, ``wait_when_busy_s`` None raises :class:`CpuBusy` at once (the caller has a
    fallback); otherwise it tries again after that many seconds (the daily must have a
    certified deal, and the jobs ahead of it are bounded by their own budgets)."""

    async def draw(variant: str) -> str:
        while True:
            try:
                return await cpu.run(certify, variant, max_seconds)
            except CpuBusy:
                if wait_when_busy_s is None:
                    raise
            await asyncio.sleep(wait_when_busy_s)

    return draw


def fixed_deal_source(code: str) -> DealSource:
    async def draw(variant: str) -> str:
        return code

    return draw


def day_info(record: DayRecord, now: int, attempt_limit_ms: int) -> DayInfo:
    """What a client may see of a day at ``now``: the code and salt only once revealed."""
    revealed_at = reveal_at(record.day, attempt_limit_ms)
    revealed = now >= revealed_at
    return DayInfo(
        day=str(record.day),
        variant=record.variant,
        starts_at=record.day.starts_at,
        ends_at=record.day.ends_at,
        commitment=record.commitment.digest,
        committed_at=record.committed_at,
        reveal_at=revealed_at,
        code=record.commitment.code if revealed else None,
        salt=record.commitment.salt if revealed else None,
    )


class DayKeeper:
    """The days' records: prepared ahead by the background check, cached once read."""

    def __init__(
        self, storage: DailyStorage, clock: Clock, variant: str, deal_source: DealSource
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.variant = variant
        self.deal_source = deal_source
        self._records: dict[Day, DayRecord] = {}
        self._preparing = asyncio.Lock()
        self.check_now = asyncio.Event()  # a request found a coming day missing
        self.owner = secrets.token_hex(8)  # this process, as a certification lease holder
        self._leases: set[str] = set()  # days this process is certifying right now

    async def release_leases(self) -> None:
        """A certification cut short: hand its lease back so another process (or this
        one restarted) takes the day over at once rather than when the lease lapses."""
        for day in list(self._leases):
            with contextlib.suppress(Exception):
                await self.storage.release_certification(day, self.owner)
        self._leases.clear()

    async def prepare(self) -> bool:
        """Make sure today, tomorrow and the day after have a committed deal (the
        background check's work; tests call it to run a check now). True when all three
        have a record. Each day is certified by one process at a time (a lease in
        storage) and stored once (SET NX); a process that finds the lease taken leaves
        the day to its holder and reads the stored record at a later check."""
        async with self._preparing:
            days = days_to_prepare(self.clock())
            stored = await self.storage.load_days([str(d) for d in days])
            ready = True
            for day, record in zip(days, stored, strict=True):  # today first
                parsed = record if record is not None else await self._certify(day)
                if parsed is None:
                    ready = False
                else:
                    self._records[day] = parsed
            return ready

    async def _certify(self, day: Day) -> DayRecord | None:
        """Draw, commit and store the day's deal if this process gets the day's lease;
        None when another process holds it."""
        key = str(day)
        if not await self.storage.claim_certification(key, self.owner, CERTIFY_LEASE_MS):
            return None
        self._leases.add(key)
        renew = asyncio.get_running_loop().create_task(self._renew_lease(key))
        try:
            # The lease's last holder may have stored the day between our look and claim.
            (record,) = await self.storage.load_days([key])
            if record is None:
                code = await self.deal_source(self.variant)
                fresh = DayRecord(
                    day, self.variant, Commitment.make(code), committed_at=self.clock()
                )
                record = await self.storage.create_day(fresh)
                if record == fresh:
                    log.info(
                        "daily committed",
                        extra={"day": key, "commitment": fresh.commitment.digest},
                    )
            return record
        finally:
            await cancel_and_wait(renew)
            # Cut short here (shutdown), the day stays in _leases: release_leases() does it.
            await self.storage.release_certification(key, self.owner)
            self._leases.discard(key)

    async def _renew_lease(self, day: str) -> None:
        while True:
            await asyncio.sleep(CERTIFY_RENEW_S)
            with contextlib.suppress(Exception):  # a lapse costs a duplicate draw at worst
                await self.storage.claim_certification(day, self.owner, CERTIFY_LEASE_MS)

    async def record(self, day: Day) -> DayRecord | None:
        """The day's record from this process's cache or storage, never computed here:
        None when it does not exist (yet). A coming day that is missing wakes the
        background check."""
        cached = self._records.get(day)
        if cached is not None:
            return cached
        (stored,) = await self.storage.load_days([str(day)])
        if stored is None:
            if day in days_to_prepare(self.clock()):
                self.check_now.set()
            return None
        self._records[day] = stored
        return stored

    async def today(self) -> DayRecord:
        record = await self.record(Day.of(self.clock()))
        if record is None:
            raise DailyError("day_not_ready")
        return record

    async def wait_for_check(self, delay: float) -> None:
        """Until the next check: ``delay``, or sooner when a request finds a day missing,
        but never less than ``PENDING_CHECK_S`` after this one (a flood of requests must
        not make the check spin)."""
        await asyncio.sleep(min(delay, PENDING_CHECK_S))
        if delay > PENDING_CHECK_S:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.check_now.wait(), delay - PENDING_CHECK_S)


__all__ = [
    "CERTIFY_LEASE_MS",
    "PENDING_CHECK_S",
    "DayKeeper",
    "certify",
    "day_info",
    "fixed_deal_source",
    "solver_deal_source",
]
