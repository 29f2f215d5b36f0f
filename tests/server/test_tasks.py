"""server.tasks.cancel_and_wait stops a loop whose one cancellation Python 3.11's
asyncio.wait_for swallowed (the call it waited for completed in the same turn)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from server.tasks import cancel_and_wait


async def a_loop_and_its_lost_cancel() -> tuple[asyncio.Task[None], list[int]]:
    """A loop awaiting storage-like calls through wait_for, cancelled in the turn in
    which its call completes."""
    loop = asyncio.get_running_loop()
    calls: list[asyncio.Future[int]] = []
    rounds: list[int] = []

    async def looping() -> None:
        while True:
            call = loop.create_future()
            calls.append(call)
            rounds.append(await asyncio.wait_for(call, 5))

    task = loop.create_task(looping())
    while not calls:
        await asyncio.sleep(0)
    calls[-1].set_result(1)
    task.cancel()  # lands as wait_for's call completes
    for _ in range(3):
        await asyncio.sleep(0)
    return task, rounds


async def test_one_cancel_can_be_lost_on_this_python() -> None:
    task, rounds = await a_loop_and_its_lost_cancel()
    if sys.version_info >= (3, 12):
        assert task.cancelled()
        return
    assert not task.done() and rounds == [1]  # the loop went on: one cancel() was lost
    await cancel_and_wait(task)
    assert task.cancelled()


async def test_cancel_and_wait_stops_it_anyway() -> None:
    task, _ = await a_loop_and_its_lost_cancel()
    await asyncio.wait_for(cancel_and_wait(task, retry_s=0.01), 5)
    assert task.cancelled()


async def test_an_exception_the_task_ended_with_is_raised() -> None:
    async def failing() -> None:
        raise ValueError("a bug")

    task = asyncio.get_running_loop().create_task(failing())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="a bug"):
        await cancel_and_wait(task)
