"""The one compare-and-set retry policy (server/core/cas.py) that rooms and tournaments
share: a lost attempt is run again, each retry counted, a random pause only from the
third attempt on, the attempts bounded, any other error raised at once."""

from __future__ import annotations

import logging
import random

import pytest

from crescent_wire.errors import ConflictError, InternalError, RoomError
from server.core import cas
from server.metrics import Metrics

log = logging.getLogger("test.cas")


def retries(metrics: Metrics, record: str) -> float:
    value = metrics.registry.get_sample_value("crescent_cas_retries_total", {"record": record})
    assert value is not None
    return value


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The upper bounds of the random pauses asked for (each pause is then 0 s)."""
    asked: list[float] = []

    def uniform(low: float, high: float) -> float:
        asked.append(high)
        return 0.0

    monkeypatch.setattr(random, "uniform", uniform)
    return asked


async def test_a_lost_attempt_is_run_again_and_counted(pauses: list[float]) -> None:
    metrics, seen = Metrics(), []

    async def attempt(n: int) -> str:
        seen.append(n)
        if n < 3:
            raise ConflictError()
        return "stored"

    result = await cas.compare_and_set(
        attempt, record="room", key="K7PQ2X", attempts=10, metrics=metrics, log=log
    )
    assert result == "stored" and seen == [0, 1, 2, 3]
    assert retries(metrics, "room") == 3 and retries(metrics, "tournament") == 0
    # no pause before the second attempt (a fresh read); then up to 2 ms per attempt
    assert pauses == [2 * cas.RETRY_PAUSE_S, 3 * cas.RETRY_PAUSE_S]


async def test_attempts_are_bounded(pauses: list[float], caplog: pytest.LogCaptureFixture) -> None:
    metrics, seen = Metrics(), []

    async def attempt(n: int) -> None:
        seen.append(n)
        raise ConflictError()

    with pytest.raises(InternalError, match="tournament kept changing"):
        await cas.compare_and_set(
            attempt, record="tournament", key="TK7PQ2X", attempts=6, metrics=metrics, log=log
        )
    assert seen == [0, 1, 2, 3, 4, 5] and retries(metrics, "tournament") == 5
    assert pauses[-1] == 4 * cas.RETRY_PAUSE_S  # capped at 4 attempts' worth
    assert [r.message for r in caplog.records] == ["tournament commit kept losing"]


async def test_another_error_is_raised_at_once(pauses: list[float]) -> None:
    metrics, seen = Metrics(), []

    async def attempt(n: int) -> None:
        seen.append(n)
        raise RoomError("room_full")

    with pytest.raises(RoomError):
        await cas.compare_and_set(
            attempt, record="room", key="K7PQ2X", attempts=10, metrics=metrics, log=log
        )
    assert seen == [0] and retries(metrics, "room") == 0 and pauses == []
