"""The background loops' helper (server/core/periodic.py): a failing step does not end
the loop, an outage is logged once with its end and count, a cancellation ends it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from crescent_wire.errors import InternalError
from server.core.periodic import run_periodically
from server.tasks import cancel_and_wait

log = logging.getLogger("test.periodic")


async def run_until(outcomes: list[BaseException | None], **options: Any) -> list[int]:
    """Run a loop whose step raises or returns ``outcomes`` in turn; stop it after the
    last. Returns the step's calls."""
    calls: list[int] = []
    done = asyncio.Event()

    async def step() -> None:
        calls.append(len(calls))
        if len(calls) == len(outcomes):
            done.set()
        outcome = outcomes[min(len(calls), len(outcomes)) - 1]
        if outcome is not None:
            raise outcome

    task = asyncio.create_task(run_periodically(step, 0.0, name="test loop", log=log, **options))
    await done.wait()
    await cancel_and_wait(task)
    assert task.cancelled()
    return calls


async def test_an_outage_is_logged_once_and_its_end_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="test.periodic")
    failure = InternalError("storage down")
    calls = await run_until([None, failure, failure, failure, None, None])
    assert len(calls) >= 6
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [("WARNING", "test loop failed"), ("INFO", "test loop works again")]
    over = caplog.records[1]
    assert over.occurrences == 3  # type: ignore[attr-defined]
    assert caplog.records[0].exc_info is None  # the storage's outage: no traceback


async def test_an_unexpected_failure_shows_its_traceback_once_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="test.periodic")
    bug = ValueError("a bug")
    await run_until([bug, bug, None, bug, None], run_first=True)
    failed = [r for r in caplog.records if r.getMessage() == "test loop failed"]
    assert len(failed) == 2  # two outages
    assert all(r.exc_info is not None and r.exc_info[1] is bug for r in failed)
    assert failed[0].error == "ValueError('a bug')"  # type: ignore[attr-defined]


async def test_the_fixed_schedule_keeps_running_and_is_cancelled() -> None:
    calls = await run_until([None, None, None], fixed=True, max_lag_s=1.0)
    assert calls[:3] == [0, 1, 2]
