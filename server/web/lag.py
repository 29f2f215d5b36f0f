"""The event loop's lag, measured by a timer that asks to wake every ``interval_s``
(docs/server.md, "Observability").

Everything in a server process runs on one event loop: while a callback holds it (a long
garbage collection, a slow decode, a saturated core) every socket waits. A timer that
wakes later than it asked measures exactly that wait. One sleep every half second costs
nothing measurable; its overshoot goes to ``crescent_event_loop_lag_seconds`` (a
histogram: alerts use its high quantiles) and ``crescent_event_loop_lag_last_seconds``.
A block shorter than the interval can fall between two timers and go unseen; one
longer than the interval is always seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from aiohttp import web

from server.metrics import Metrics

LAG_PROBE_INTERVAL_S = 0.5


class EventLoopLagProbe:
    def __init__(self, metrics: Metrics, interval_s: float = LAG_PROBE_INTERVAL_S) -> None:
        self.metrics = metrics
        self.interval_s = interval_s
        self.samples = 0
        self._waiters: list[asyncio.Future[float]] = []
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            due = time.perf_counter() + self.interval_s
            await asyncio.sleep(self.interval_s)
            # uvloop's timers have millisecond resolution: a wake a hair early is no lag.
            self.record(max(0.0, time.perf_counter() - due))

    def record(self, lag_s: float) -> None:
        self.samples += 1
        self.metrics.event_loop_lag.observe(lag_s)
        self.metrics.event_loop_lag_last.set(lag_s)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(lag_s)

    async def next_sample(self) -> float:
        """The lag the probe measures next (tests wait on this instead of sleeping)."""
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def context(self, _app: web.Application) -> AsyncIterator[None]:
        """For ``app.cleanup_ctx``: the probe runs while the app does."""
        self._task = asyncio.get_running_loop().create_task(self.run(), name="event-loop-lag")
        yield
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
