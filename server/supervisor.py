"""``crescent-server --workers N``: N server processes on one port (docs/server.md, "Workers").

The supervisor is the process the operator starts. ``server/__main__.py`` starts what
every worker shares (the embedded Redis, when no ``--redis-url`` is given) and then,
with more than one worker, hands over to :func:`supervise` instead of serving itself.
The supervisor serves nothing: it starts the workers, restarts one that dies, replaces
them one at a time on SIGHUP and stops them all on SIGTERM/SIGINT.

Each worker is ``python3 -m server`` again, with the supervisor's own arguments plus
``--workers 1`` and the shared services' URLs in its environment, so a worker is the
one-process server of today and nothing more: it listens with ``SO_REUSEPORT`` on the
same port as its siblings (the kernel spreads new connections over them by a hash of
the addresses), tells the supervisor it is ready through a pipe once its site listens
and its storage answers (what ``/healthz`` checks), and dies with the supervisor
(``PR_SET_PDEATHSIG`` with SIGTERM: a graceful shutdown, server/lifeline.py).

Why ``SO_REUSEPORT`` rather than one accept socket inherited by every worker: with one
shared socket every worker wakes for each new connection and the first to run takes
it (and, with asyncio's and libuv's accept loops, the whole backlog), so an idle
worker takes a burst of reconnections while a busy one takes none: unequal by
construction. ``SO_REUSEPORT`` gives each worker its own accept queue and an even hash
spread, which is what lets N workers use N cores. Its cost: connections waiting in a
stopping worker's accept queue, not yet accepted, are reset when it closes its socket;
their clients reconnect (and land on a live worker) as docs/protocol.md tells them to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from server.config import Settings

log = logging.getLogger("server.supervisor")

# The environment a worker is started with (read by server/__main__.py).
ROLE_ENV = "CRESCENT_ROLE"  # "archive-writer": the process that drains the outbox
WRITER_ROLE = "archive-writer"
WORKER_ENV = "CRESCENT_WORKER"  # "<slot>": this process is a supervised worker
SUPERVISOR_ENV = "CRESCENT_SUPERVISOR_PID"  # the supervisor's pid: die with it
READY_FD_ENV = "CRESCENT_READY_FD"  # write "ready\n" here once serving
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's multiprocess mode
METRICS_SHARE_S = 1.0  # a worker's hot-path metrics reach the shared files this often
READY_PING_S = 30.0  # a worker whose storage does not answer by then exits
PARENT_WATCH_S = 0.5  # CRESCENT_EXIT_WITH_PARENT: how often the parent is checked


@dataclass
class Worker:
    """One worker process and what the supervisor knows about it."""

    slot: int
    proc: asyncio.subprocess.Process
    started: float
    ready: asyncio.Future[bool]
    retiring: bool = False  # replaced (SIGHUP) or stopping: its exit is expected
    exited: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass
class Backoff:
    """How long a slot waits before restarting its worker: ``first`` after a death,
    doubling with each worker that dies before living ``stable`` seconds, up to
    ``cap``; a worker that lived ``stable`` seconds resets it.

    >>> b = Backoff(first=0.5, cap=3.0, stable=60.0)
    >>> [b.after_death(lived) for lived in (1, 1, 1, 1, 1, 61, 1)]
    [0.5, 1.0, 2.0, 3.0, 3.0, 0.5, 1.0]
    """

    first: float
    cap: float
    stable: float
    next: float = 0.0

    def after_death(self, lived_s: float) -> float:
        if lived_s >= self.stable or self.next == 0.0:
            self.next = self.first
        delay = self.next
        self.next = min(delay * 2, self.cap)
        return delay


class WorkerFailed(RuntimeError):
    """A worker exited or stayed silent before it was ready."""


class Supervisor:
    """Keeps ``settings.workers`` workers running (see the module docstring)."""

    def __init__(self, settings: Settings, argv: list[str], env: dict[str, str]) -> None:
        self.settings = settings
        self.argv = argv
        self.env = env
        # The archive writer (server/archive_writer.py) is one more slot, after the
        # serving workers': started, restarted and replaced as they are.
        self.writer_slot = settings.workers if settings.archive_writer == "process" else None
        slots = settings.workers + (self.writer_slot is not None)
        self.workers: list[Worker | None] = [None] * slots
        self.backoffs = [
            Backoff(
                settings.worker_backoff_s, settings.worker_backoff_max_s, settings.worker_stable_s
            )
            for _ in range(slots)
        ]
        self.restarts: dict[int, asyncio.Task[None]] = {}
        self.watchers: set[asyncio.Task[None]] = set()
        self.processes: dict[int, Worker] = {}  # every worker not yet exited, by pid
        self.started = False
        self.stopping = False
        self.rolling: asyncio.Task[None] | None = None
        self.roll_again = False

    # --- workers

    async def spawn(self, slot: int) -> Worker:
        """Start a worker in ``slot`` (not waiting for it to be ready)."""
        read_fd, write_fd = os.pipe()
        env = dict(self.env)
        env[WORKER_ENV] = str(slot)
        env[SUPERVISOR_ENV] = str(os.getpid())
        env[READY_FD_ENV] = str(write_fd)
        role = "worker"
        if slot == self.writer_slot:
            role = env[ROLE_ENV] = WRITER_ROLE
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "server",
                *self.argv,
                "--workers",
                "1",
                "--archive-writer",  # a worker then only puts in the outbox, never drains
                self.settings.archive_writer,
                env=env,
                pass_fds=(write_fd,),
            )
        finally:
            os.close(write_fd)
        loop = asyncio.get_running_loop()
        worker = Worker(slot, proc, time.monotonic(), loop.create_future())
        self.processes[proc.pid] = worker
        watcher = loop.create_task(self._watch(worker, read_fd), name=f"worker-{proc.pid}")
        self.watchers.add(watcher)
        watcher.add_done_callback(self.watchers.discard)
        log.info("worker started", extra={"slot": slot, "pid": proc.pid, "role": role})
        return worker

    async def _watch(self, worker: Worker, read_fd: int) -> None:
        """Read the worker's ready line, then wait for its exit and react to it."""
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
        )
        try:
            line = await reader.readline()  # b"" when the worker exits first
            if not worker.ready.done():
                worker.ready.set_result(line == b"ready\n")
            code = await worker.proc.wait()
        finally:
            transport.close()
            if not worker.ready.done():
                worker.ready.set_result(False)
        worker.exited.set()
        self.processes.pop(worker.pid, None)
        _forget_metrics(worker.pid)
        if worker.retiring or self.stopping:
            log.info("worker stopped", extra={"slot": worker.slot, "pid": worker.pid})
            return
        lived = time.monotonic() - worker.started
        delay = self.backoffs[worker.slot].after_death(lived)
        log.warning(
            "worker died: restarting it",
            extra={
                "slot": worker.slot,
                "pid": worker.pid,
                "code": code,
                "lived_s": round(lived, 1),
                "restart_in_s": delay,
            },
        )
        if self.workers[worker.slot] is worker:
            self.workers[worker.slot] = None
            self.restarts[worker.slot] = loop.create_task(self._restart(worker.slot, delay))

    async def _restart(self, slot: int, delay: float) -> None:
        await asyncio.sleep(delay)
        self.restarts.pop(slot, None)
        if not self.stopping and self.workers[slot] is None:
            self.workers[slot] = await self.spawn(slot)

    async def wait_ready(self, worker: Worker) -> None:
        try:
            ok = await asyncio.wait_for(
                asyncio.shield(worker.ready), self.settings.worker_ready_timeout_s
            )
        except TimeoutError:
            ok = False
        if not ok:
            raise WorkerFailed(f"worker {worker.pid} (slot {worker.slot}) did not become ready")

    async def retire(self, worker: Worker) -> None:
        """SIGTERM (a graceful shutdown: its clients get 1001) and wait; SIGKILL if it
        is still there after the shutdown timeout and a margin."""
        worker.retiring = True
        with contextlib.suppress(ProcessLookupError):
            worker.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(worker.exited.wait(), self.settings.shutdown_timeout_s + 10)
        except TimeoutError:
            log.warning("worker did not stop: killing it", extra={"pid": worker.pid})
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
            await worker.exited.wait()

    # --- the supervisor's life

    async def start_all(self) -> None:
        """Start every worker and wait until each is ready; one that fails at start-up
        (a port in use, a bad setting) stops everything (WorkerFailed)."""
        for slot in range(len(self.workers)):
            self.workers[slot] = await self.spawn(slot)
        await asyncio.gather(*(self.wait_ready(w) for w in self.workers if w is not None))

    async def rolling_restart(self) -> None:
        """SIGHUP: replace the workers one at a time (new one ready, then the old one
        stops gracefully). A new worker that fails to start ends the round; the old
        one keeps serving."""
        while True:
            self.roll_again = False
            log.info("rolling restart", extra={"workers": len(self.workers)})
            for slot, old in enumerate(self.workers):
                if self.stopping:
                    return
                if old is None:  # dead and waiting for its restart: that is a new one
                    continue
                new = await self.spawn(slot)
                try:
                    await self.wait_ready(new)
                except WorkerFailed as err:
                    log.error(f"rolling restart stopped: {err}")
                    await self.retire(new)
                    return
                if self.workers[slot] is old:
                    self.workers[slot] = new
                    await self.retire(old)
                else:  # the old one died meanwhile and was replaced: keep one
                    await self.retire(new)
            log.info("rolling restart done")
            if not self.roll_again:
                return

    def on_hangup(self) -> None:
        if self.stopping:
            return
        if not self.started:
            log.warning("SIGHUP while starting: ignored (the workers are new)")
            return
        if self.rolling is not None and not self.rolling.done():
            self.roll_again = True  # another round once this one is done
            return
        self.rolling = asyncio.get_running_loop().create_task(self.rolling_restart())

    async def stop_all(self) -> None:
        self.stopping = True
        for task in self.restarts.values():
            task.cancel()
        if self.rolling is not None:
            self.rolling.cancel()
            with contextlib.suppress(asyncio.CancelledError, WorkerFailed):
                await self.rolling
        # Every worker not yet exited: a half-started one of a rolling restart included.
        await asyncio.gather(*(self.retire(w) for w in list(self.processes.values())))
        if self.watchers:
            await asyncio.wait(set(self.watchers), timeout=5)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        loop.add_signal_handler(signal.SIGHUP, self.on_hangup)
        watch = None
        if os.environ.get("CRESCENT_EXIT_WITH_PARENT"):  # see server/__main__.py
            parent = int(os.environ["CRESCENT_EXIT_WITH_PARENT"])
            watch = loop.create_task(_stop_when_orphaned(parent, stop), name="parent-watch")
        try:
            start = loop.create_task(self.start_all())
            stopped = loop.create_task(stop.wait())
            await asyncio.wait({start, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if start.done() and start.exception() is not None:
                log.error(f"start-up failed: {start.exception()}")
                return 1
            if not start.done():  # stopped while starting
                start.cancel()
                with contextlib.suppress(asyncio.CancelledError, WorkerFailed):
                    await start
            else:
                self.started = True
                s = self.settings
                writer = self.workers[-1] if self.writer_slot is not None else None
                log.info(
                    f"listening on http://{s.host}:{s.port} with {s.workers} "
                    + ("worker" if s.workers == 1 else "workers")
                    + (" and the archive writer" if writer is not None else ""),
                    extra={
                        "pids": [w.pid for w in self.workers[: s.workers] if w is not None],
                        "archive_writer_pid": writer.pid if writer is not None else None,
                    },
                )
                await stopped
            return 0
        finally:
            if watch is not None:
                watch.cancel()
            log.info("stopping every worker")
            await self.stop_all()
            log.info("stopped")


async def _stop_when_orphaned(parent: int, stop: asyncio.Event) -> None:
    while os.getppid() == parent:
        await asyncio.sleep(PARENT_WATCH_S)
    log.warning("the process that started this server is gone: shutting down")
    stop.set()


def _forget_metrics(pid: int) -> None:
    """A worker that exited: drop its live gauges from the aggregated /metrics (its
    counters stay: counts since the supervisor started)."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment of the workers: this one, with the URLs of the services the
    supervisor started (the embedded Redis; the archive's PostgreSQL) and without the test harness's
    ``CRESCENT_EXIT_WITH_PARENT`` (the supervisor watches its parent; workers die
    with the supervisor)."""
    env = dict(os.environ)
    env.pop("CRESCENT_EXIT_WITH_PARENT", None)
    if settings.redis_url is not None:
        env["CRESCENT_REDIS_URL"] = settings.redis_url
    # The archive's database, embedded or not, once Settings has it (issue #24, "integ").
    database_url = getattr(settings, "database_url", None)
    if database_url:
        env["CRESCENT_DATABASE_URL"] = str(database_url)
    return env


def supervise(settings: Settings, argv: list[str]) -> int:
    """Run the supervisor until SIGTERM/SIGINT (the workers are ``python3 -m server
    <argv> --workers 1``); its exit code."""
    env = worker_env(settings)
    own_dir = None
    metrics_dir = env.get(MULTIPROC_ENV)
    if metrics_dir:  # the operator's folder: emptied, as prometheus-client asks
        for stale in Path(metrics_dir).glob("*.db"):
            stale.unlink()
    else:
        _remove_orphaned_metrics_dirs()
        own_dir = metrics_dir = tempfile.mkdtemp(prefix=f"crescent-metrics-{os.getpid()}-")
        env[MULTIPROC_ENV] = metrics_dir
    os.environ[MULTIPROC_ENV] = metrics_dir  # for mark_process_dead
    try:
        return asyncio.run(Supervisor(settings, argv, env).run())
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)


def _remove_orphaned_metrics_dirs() -> None:
    """The metrics folders of supervisors killed with -9 (they could not remove theirs):
    ``crescent-metrics-<pid>-…`` in the temporary folder whose pid is not running."""
    for folder in Path(tempfile.gettempdir()).glob("crescent-metrics-*-*"):
        pid = folder.name.split("-")[2]
        if not pid.isdigit() or _running(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def become_worker() -> int | None:
    """In a worker (``CRESCENT_WORKER`` set by the supervisor): die with the supervisor
    (SIGTERM: a graceful shutdown, so its clients get 1001), tag its log lines with
    ``worker`` (the slot; call after setting up logging) and return the slot; else
    None."""
    slot = os.environ.get(WORKER_ENV)
    if slot is None:
        return None
    from server.lifeline import die_with_parent

    die_with_parent(int(os.environ[SUPERVISOR_ENV]), sig=signal.SIGTERM)

    def tag(record: logging.LogRecord) -> bool:
        record.worker = int(slot)  # every log line says which worker wrote it
        return True

    for handler in logging.getLogger().handlers:
        handler.addFilter(tag)
    return int(slot)


def is_worker() -> bool:
    return WORKER_ENV in os.environ


async def worker_serving(
    ping: Callable[[], Awaitable[bool]], share_metrics: Callable[[], None]
) -> asyncio.Task[None] | None:
    """In a worker whose site listens: once its storage answers (what ``/healthz``
    checks) tell the supervisor it is ready, and start copying its hot-path metrics to
    the shared files every :data:`METRICS_SHARE_S` (the task; cancel it at shutdown).
    Outside a worker: nothing (None)."""
    if not is_worker():
        return None
    deadline = time.monotonic() + READY_PING_S
    while not await ping():
        if time.monotonic() > deadline:
            raise WorkerFailed(f"storage not answering after {READY_PING_S} s")
        await asyncio.sleep(0.1)  # Redis starting or failing over: nothing to await
    fd = os.environ.pop(READY_FD_ENV, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(int(fd), b"ready\n")
            os.close(int(fd))
    return asyncio.get_running_loop().create_task(_share_forever(share_metrics))


async def _share_forever(share_metrics: Callable[[], None]) -> None:
    while True:
        await asyncio.sleep(METRICS_SHARE_S)
        share_metrics()


__all__ = ["Supervisor", "become_worker", "is_worker", "supervise", "worker_serving"]
