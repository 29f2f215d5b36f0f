"""The one retry policy of the records stored with compare-and-set by version (rooms,
tournaments): an attempt that lost to another writer (``ConflictError``) is run again,
at most ``attempts`` times in all. The first attempt may start from a cached copy and
the second reads storage; from the third on (a fresh read lost too: another process is
writing the record as well) each waits a random pause of up to ``RETRY_PAUSE_S`` per
attempt so far (capped at 4), so the two writers stop colliding. Every retry is counted
in ``crescent_cas_retries_total{record}``; retries that run out are logged and answer
``internal_error``."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from crescent_wire.errors import ConflictError, InternalError
from server.metrics import Metrics

RETRY_PAUSE_S: Final = 0.002
PAUSE_FROM_ATTEMPT: Final = 2  # the third attempt (counted from 0)

T = TypeVar("T")


async def compare_and_set(
    attempt: Callable[[int], Awaitable[T]],
    *,
    record: str,
    key: str,
    attempts: int,
    metrics: Metrics,
    log: logging.Logger,
) -> T:
    """``await attempt(n)`` for n = 0, 1, … until one returns without ``ConflictError``
    (its result is returned; any other error is raised at once). ``record`` is the
    metric's label and the log's word (``room``, ``tournament``), ``key`` its code."""
    for n in range(attempts):
        if n:
            metrics.cas_retries.labels(record=record).inc()
            if n >= PAUSE_FROM_ATTEMPT:
                await asyncio.sleep(random.uniform(0, RETRY_PAUSE_S * min(n, 4)))
        try:
            return await attempt(n)
        except ConflictError:
            continue
    log.warning(f"{record} commit kept losing", extra={record: key, "attempts": attempts})
    raise InternalError(f"The {record} kept changing; retry")
