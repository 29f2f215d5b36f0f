"""``python3 -m server`` / ``crescent-server``: run the race server (see docs/server.md)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import resource
import signal
import sys
import time
from collections.abc import Coroutine, Iterator
from typing import Any

from aiohttp import web

from server.archive_writer import is_archive_writer, write_archive
from server.compose import build_parts
from server.config import Settings, parse_args
from server.core.ports import StartUpError
from server.embedded_redis import EmbeddedRedis
from server.logs import setup_logging
from server.supervisor import become_worker, is_worker, supervise, worker_serving
from server.web import METRICS, PARTS, create_app

log = logging.getLogger("server")

GC_THRESHOLDS = (2_000, 100, 100)  # gc.set_threshold: see tune_gc
PARENT_WATCH_S = 0.5  # CRESCENT_EXIT_WITH_PARENT: how often the parent is checked


async def log_durability(redis_url: str) -> None:
    """Say at start-up what an acknowledgement survives with this Redis (WARNING when an
    acknowledged action could be lost, or when the settings cannot be read)."""
    from server.storage.durability import check

    durability, text = await check(redis_url)
    if durability is not None and durability.keeps_every_ack:
        log.info(text)
    else:
        log.warning(text)


async def serve(settings: Settings) -> None:
    if settings.storage == "redis":
        assert settings.redis_url is not None
        await log_durability(settings.redis_url)
    else:
        log.warning("in-memory storage: this process only, nothing kept after it stops")
    app = create_app(settings, build_parts)
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, shutdown_timeout=settings.shutdown_timeout_s
    )
    await runner.setup()
    # A worker shares the port with its siblings (server/supervisor.py: why SO_REUSEPORT).
    site = web.TCPSite(
        runner, settings.host, settings.port, reuse_address=True, reuse_port=is_worker() or None
    )
    await site.start()
    sharing = await worker_serving(app[PARTS].storage.ping, app[METRICS].share)
    tune_gc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watch = None
    if os.environ.get("CRESCENT_EXIT_WITH_PARENT"):
        parent = int(os.environ["CRESCENT_EXIT_WITH_PARENT"])
        watch = loop.create_task(stop_when_orphaned(parent, stop), name="parent-watch")
    log.info(
        f"listening on http://{settings.host}:{settings.port}",
        extra={"prefix": settings.key_prefix},
    )
    await stop.wait()
    for task in (watch, sharing):
        if task is not None:
            task.cancel()
    log.info("shutting down: telling clients to reconnect")
    await runner.cleanup()
    log.info("stopped")


async def stop_when_orphaned(parent: int, stop: asyncio.Event) -> None:
    """``CRESCENT_EXIT_WITH_PARENT=<pid>`` (set by the harness that starts test and
    benchmark servers, bench/devtools.py): shut down gracefully once ``pid`` is no
    longer this process's parent (it died, kill -9 included), so a test run that is
    killed leaves no server behind. Production servers have a supervisor instead."""
    while os.getppid() == parent:
        await asyncio.sleep(PARENT_WATCH_S)
    log.warning("the process that started this server is gone: shutting down")
    stop.set()


def tune_gc() -> None:
    """Fewer and shorter garbage-collector pauses under load (docs/server.md).

    With the default thresholds the cyclic collector ran a full collection about once
    a second under load (each ~30-50 ms over ~150k objects: every socket waits, and
    ~5 % of the CPU), because objects that live across a Redis round trip are promoted
    to the oldest generation before reference counting frees them. What exists after
    start-up (modules, the app) is frozen out of the collector; young collections stay
    small (a 10,000 threshold made each ~9 ms, 2,000 ~1-2 ms: measured with a
    gc.callbacks probe at 14,000 actions/s) and the older generations are collected
    100 times more rarely than by default."""
    gc.collect()
    gc.freeze()
    thresholds: tuple[int, ...] = GC_THRESHOLDS
    if os.environ.get("CRESCENT_GC_THRESHOLDS"):  # for measurements: "700,10,10"
        thresholds = tuple(int(x) for x in os.environ["CRESCENT_GC_THRESHOLDS"].split(","))
    gc.set_threshold(*thresholds)


def raise_file_limit() -> None:
    """Every socket is a file: allow as many as the hard limit permits (15k+ racers)."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["verify"]:  # python3 -m server verify GAME (server/verify.py)
        from server.verify import main as verify

        return verify(args[1:])
    if args[:1] == ["review"]:  # python3 -m server review list|confirm|disqualify
        from server.review_cli import main as review

        return review(args[1:])
    settings = parse_args(argv)
    setup_logging(settings.log_level)
    raise_file_limit()
    become_worker()  # a worker started by the supervisor dies with it
    try:
        return start(settings, argv)
    except StartUpError as exc:  # a configured Redis or PostgreSQL cannot be used
        log.error("start-up failed: %s", exc)  # one line that says what to do, no traceback
        return 2


def start(settings: Settings, argv: list[str] | None) -> int:
    """The embedded services wanted, then this process's part: the archive writer, the
    supervisor of the workers, or a server."""
    with contextlib.ExitStack() as stack:
        if settings.storage == "redis" and settings.redis_url is None:
            settings.redis_url = stack.enter_context(EmbeddedRedis(settings.data_dir).running())
        if settings.storage == "redis" and settings.archive and settings.database_url is None:
            settings.database_url = stack.enter_context(embedded_postgres(settings.postgres_dir))
        if is_archive_writer():  # started by the supervisor to drain the outbox
            run(write_archive(settings), settings.loop)
            return 0
        # The services above are shared by the workers (and the archive writer).
        if settings.workers > 1 or (settings.archive_writer == "process" and not is_worker()):
            return supervise(settings, sys.argv[1:] if argv is None else argv)
        run(serve(settings), settings.loop)
    return 0


@contextlib.contextmanager
def embedded_postgres(data_dir: str) -> Iterator[str]:
    """The archive's PostgreSQL when none is configured (docs/archive.md), supervised
    and stopped with the server; its start-up time is logged (a first start runs initdb)."""
    from server.embedded_postgres import EmbeddedPostgres

    started = time.perf_counter()
    postgres = EmbeddedPostgres(data_dir)
    with postgres.running() as url:
        log.info(
            "embedded postgres ready",
            extra={
                "seconds": round(time.perf_counter() - started, 2),
                "first_start": postgres.initialized,
            },
        )
        yield url


def run(main: Coroutine[Any, Any, None], loop: str) -> None:
    """Run ``main`` on the chosen event loop (uvloop unless told otherwise)."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(main)
    else:
        asyncio.run(main)


if __name__ == "__main__":
    sys.exit(main())
