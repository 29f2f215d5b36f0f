"""The one periodic-loop helper of the core (the progress flush, presence, the
tournaments' tick, the daily check and push) with one outage policy.

:func:`run_periodically` runs ``step()`` again and again until cancelled, either a
pause after each run (``after_s``, or the delay the step returns) or on a fixed
schedule (``fixed=True``: every ``after_s`` from the start, whatever a run took, so its
own time does not stretch the period; behind by more than ``max_lag_s``, a stalled
loop, it starts afresh). A step that raises does not end the loop: the first failure
of an outage is logged once (``RepeatedEvent``: WARNING ``<name> failed``, with the
traceback unless it is an ``InternalError``, the storage's outage its adapter logs
itself), later ones are only counted, and the next run that succeeds logs the outage's
end with how many runs failed and for how long. A cancellation is never caught."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from crescent_wire.errors import InternalError
from server.logs import RepeatedEvent

Step = Callable[[], Awaitable[float | None]]
Wait = Callable[[float], Awaitable[None]]


def outage_log(log: logging.Logger, name: str) -> RepeatedEvent:
    """A loop's failures: logged once per outage, its end with a count."""
    return RepeatedEvent(log, f"{name} failed", over_message=f"{name} works again")


async def run_periodically(
    step: Step,
    after_s: float,
    *,
    name: str,
    log: logging.Logger,
    fixed: bool = False,
    max_lag_s: float | None = None,
    run_first: bool = False,
    wait: Wait = asyncio.sleep,
    outage: RepeatedEvent | None = None,
) -> None:
    """Run ``step`` every ``after_s`` until cancelled (the module's docstring).
    ``run_first``: the first run at once, not after a wait. ``wait(delay)``: how to wait
    between runs when not on a fixed schedule (a loop that can be woken early).
    ``outage``: the loop's failures in the caller's own words (default
    :func:`outage_log`), e.g. to tell /healthz whether an outage lasts."""
    if outage is None:
        outage = outage_log(log, name)
    schedule = Schedule(after_s, fixed=fixed, max_lag_s=max_lag_s, wait=wait)
    if not run_first:
        await schedule.pause(None)
    while True:
        delay: float | None = None
        try:
            delay = await step()
        except Exception as exc:
            internal = isinstance(exc, InternalError)
            outage.occurred(error=repr(exc), exc_info=None if internal else exc)
        else:
            outage.recovered()
        await schedule.pause(delay)


class Schedule:
    """When a periodic loop's next run is."""

    def __init__(self, after_s: float, *, fixed: bool, max_lag_s: float | None, wait: Wait):
        self.after_s = after_s
        self.fixed = fixed
        self.max_lag_s = max_lag_s
        self.wait = wait
        self.loop = asyncio.get_running_loop()
        self.next_at = self.loop.time()

    async def pause(self, delay: float | None) -> None:
        """Wait until the next run: ``delay`` (or ``after_s``) from now, or the next
        time on the fixed schedule."""
        if not self.fixed:
            await self.wait(self.after_s if delay is None else delay)
            return
        self.next_at += self.after_s
        now = self.loop.time()
        if self.max_lag_s is not None and self.next_at < now - self.max_lag_s:
            self.next_at = now
        await asyncio.sleep(max(0.0, self.next_at - now))
