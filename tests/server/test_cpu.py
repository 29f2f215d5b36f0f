"""The solver's process runner (server/cpu.py): a shutdown that does not wait for a long
job (a deal certification may have most of its 20 s left): the worker is stopped; and
an owner killed with -9 mid-job leaves no solver process behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import psutil
import pytest

from server.core.ports import CpuBusy
from server.cpu import ProcessCpu
from tests.support import REPO_ROOT


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


OWNER = """
import asyncio, sys
from server.cpu import ProcessCpu
from tests.support import REPO_ROOT
from tests.server.test_cpu import touch_then_sleep

async def main() -> None:
    await ProcessCpu().run(touch_then_sleep, sys.argv[1], 60.0)

asyncio.run(main())
"""


def running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_killed_owner_takes_its_busy_worker_along(tmp_path: Path) -> None:
    """kill -9 of the process that owns a ProcessCpu while its worker runs a job: the
    worker, the fork server and the resource tracker are gone within 5 s."""
    started = tmp_path / "started"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(started)], cwd=REPO_ROOT)
    descendants: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while not started.exists():  # another process: no event to await but the file
            assert owner.poll() is None and time.monotonic() < deadline
            await asyncio.sleep(0.02)
        descendants = psutil.Process(owner.pid).children(recursive=True)
        assert len(descendants) >= 2  # the fork server and its (busy) worker at least
        owner.kill()
        owner.wait(5)
        deadline = time.monotonic() + 5
        while any(running(p) for p in descendants) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert [p.pid for p in descendants if running(p)] == []
    finally:
        owner.kill()
        owner.wait(5)
        for proc in descendants:
            if running(proc):
                proc.kill()


async def test_the_fork_server_learns_which_process_must_be_its_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fork server whose starter died while it was still starting must not take its
    new parent (init) for the server: the starter's pid travels in the environment."""
    from server import solver_forkserver

    monkeypatch.delenv("CRESCENT_SOLVER_PARENT", raising=False)
    assert solver_forkserver.expected_parent() is None
    cpu = ProcessCpu()
    try:
        assert solver_forkserver.expected_parent() == os.getpid()
    finally:
        await cpu.close()
