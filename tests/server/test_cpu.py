"""The solver's process runner (server/cpu.py): a shutdown that does not wait for a long
job (a deal certification may have most of its 20 s left): the worker is stopped."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from server.core.ports import CpuBusy
from server.cpu import ProcessCpu


def touch_then_sleep(path: str, seconds: float) -> str:
    """A long job (in the worker) that says when it has started."""
    Path(path).touch()
    time.sleep(seconds)
    return "done"


async def test_close_does_not_wait_for_the_running_job(tmp_path: Path) -> None:
    cpu = ProcessCpu(max_jobs=2)
    started = tmp_path / "started"
    long_job = cpu.run(touch_then_sleep, str(started), 30.0)
    while not started.exists():  # another process: no event to await but the file
        await asyncio.sleep(0.02)
    await asyncio.wait_for(cpu.close(), 10)  # long before the job could end
    with pytest.raises(CpuBusy):
        cpu.run(pow, 2, 3)  # closed: refused at once
    with pytest.raises(BrokenProcessPool):  # its worker was stopped
        await asyncio.wait_for(long_job, 10)
