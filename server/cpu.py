"""CPU runners for the core's :class:`~server.core.ports.CpuRunner` port.

The solver is CPU-bound (up to ~10 s per job): in the server it runs in a process
pool so the event loop keeps serving every socket. One worker, created at the first
job, and a bound on the jobs held (running or queued): past it, ``run`` raises
``CpuBusy`` at once and the caller answers without the solver (docs/protocol.md,
"Practice games and solver").

No solver process outlives the server, however it dies: the fork server and each worker
die with their parent (server/lifeline.py; ``kill -9`` of the server included).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import queue
import signal
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final, TypeVar

from server.core.ports import CpuBusy
from server.lifeline import die_with_parent

log = logging.getLogger("server.cpu")
T = TypeVar("T")

DEFAULT_MAX_JOBS: Final = 4  # running + queued solver jobs per process
WORKER_REPORT_S: Final = 15.0  # how long close() waits for a starting worker's pid
# Imported by the fork server as it starts: from then on it dies with this process.
FORKSERVER_PRELOAD: Final = "server.solver_forkserver"
SOLVER_PARENT_ENV: Final = "CRESCENT_SOLVER_PARENT"  # read by server.solver_forkserver


class ProcessCpu:
    """A lazily created pool of ``workers`` processes holding at most ``max_jobs``
    jobs. Workers start from a fork server (a clean process, not a fork of the server
    with its threads and sockets)."""

    def __init__(self, *, workers: int = 1, max_jobs: int = DEFAULT_MAX_JOBS) -> None:
        self.workers = workers
        self.max_jobs = max_jobs
        self.jobs = 0
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        self._context = multiprocessing.get_context("forkserver")
        # The fork server inherits the environment: it learns which process must be its
        # parent, so one whose starter died while it was still starting (before it
        # could ask for PR_SET_PDEATHSIG) sees the wrong parent and exits at once.
        os.environ[SOLVER_PARENT_ENV] = str(os.getpid())
        # One fork server per process for every pool; "__main__" is multiprocessing's default.
        self._context.set_forkserver_preload(["__main__", FORKSERVER_PRELOAD])
        # Each worker reports its pid here when it starts, so close() can stop it
        # (the pool itself has no public way to stop a running job).
        self._worker_pids = self._context.Queue()
        self._spawned = 0  # workers asked for (one per job, up to ``workers``)

    def run(self, job: Callable[..., T], *args: Any) -> Awaitable[T]:
        if self._closed or self.jobs >= self.max_jobs:
            raise CpuBusy()
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=self._context,
                initializer=_start_worker,
                initargs=(self._worker_pids,),
            )
        pool = self._pool
        try:
            future: Future[T] = pool.submit(job, *args)
        except BrokenProcessPool:
            self._pool = None  # a worker died (killed, crashed): a new pool next time
            raise
        self.jobs += 1
        self._spawned = min(self.workers, self._spawned + 1)

        def done(finished: Future[T]) -> None:
            self.jobs -= 1
            if (
                not finished.cancelled()
                and isinstance(finished.exception(), BrokenProcessPool)
                and self._pool is pool
            ):
                log.warning("solver worker died; starting a new pool at the next job")
                self._pool = None

        # The pool's callbacks run in its manager thread: count down on the loop.
        loop = asyncio.get_running_loop()

        def done_threadsafe(finished: Future[T]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody counts
                loop.call_soon_threadsafe(done, finished)

        future.add_done_callback(done_threadsafe)
        return asyncio.wrap_future(future)

    async def close(self) -> None:
        """Refuse new jobs, drop queued ones and stop the workers, without waiting for a
        running job: a deal certification may have most of its budget (20 s) left, and
        neither shutdown nor the interpreter's exit (which joins the pool) may wait for
        it. The running job's caller gets ``BrokenProcessPool``."""
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)
            # A worker that is still starting (a loaded machine) reports soon: a job
            # handed to it would otherwise run to its budget before the process exits.
            pids = await asyncio.to_thread(self._collect_pids, WORKER_REPORT_S)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            await asyncio.to_thread(pool.shutdown, wait=True)

    def _collect_pids(self, timeout_s: float) -> list[int]:
        pids: list[int] = []
        with contextlib.suppress(queue.Empty):
            while len(pids) < self._spawned:
                pids.append(self._worker_pids.get(timeout=timeout_s))
        return pids


def _start_worker(pids: Any) -> None:
    """A worker's initializer: die with the fork server that forked it (which dies with
    the server), then say who it is (see ``ProcessCpu.close``)."""
    from server.solver_forkserver import FORKSERVER_PID  # set in the fork server

    die_with_parent(FORKSERVER_PID)
    pids.put(os.getpid())
