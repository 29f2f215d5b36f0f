"""The HTTP routes: ``/healthz``, ``/metrics``, the browser client (``/``, ``/r/{code}``,
``/daily``, ``/t/{code}`` and the files of the built client) and the tournament exports
``/api/tournaments/{code}.json`` and ``.csv``."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from aiohttp import web

from crescent_wire.errors import ServerError
from server.web.keys import HUB, METRICS, PARTS, SETTINGS, SOCKETS


async def healthz(request: web.Request) -> web.Response:
    ok = await request.app[PARTS].storage.ping()
    body: dict[str, object] = {
        "ok": ok,
        "redis": "up" if ok else "down",
        "connections": len(request.app[SOCKETS]),
        "pid": os.getpid(),  # which worker answered (--workers; docs/server.md)
    }
    archiver = request.app[HUB].archiver
    if archiver is not None and ok:  # the archive's lag: informative, never a 503
        with contextlib.suppress(Exception):
            body["archive"] = await archiver.lag()
    return web.json_response(body, status=200 if ok else 503)


async def metrics_handler(request: web.Request) -> web.Response:
    body = request.app[METRICS].render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4"})


def _static_root(app: web.Application) -> Path:
    return Path(app[SETTINGS].static_dir).resolve()


async def index(request: web.Request) -> web.StreamResponse:
    page = _static_root(request.app) / "index.html"
    if not page.is_file():
        return web.Response(
            status=503,
            content_type="text/html",
            text="<h1>Crescent Race</h1><p>The browser client is not built. Run "
            "<code>scripts/setup</code> (or <code>cd client/web && npm ci && npm run "
            "build</code>) and reload. The WebSocket endpoint is at <code>/ws</code>.</p>",
        )
    return web.FileResponse(page, headers={"Cache-Control": "no-cache"})


async def static_file(request: web.Request) -> web.StreamResponse:
    root = _static_root(request.app)
    try:
        path = (root / request.match_info["path"]).resolve()
        path.relative_to(root)  # refuses ../ escapes
    except (ValueError, OSError):
        raise web.HTTPNotFound() from None
    if not path.is_file():
        raise web.HTTPNotFound()
    return web.FileResponse(path)


async def tournament_export(request: web.Request) -> web.Response:
    """``/api/tournaments/{code}.json`` and ``.csv`` (docs/protocol.md, "Tournaments"):
    public, like a results page; 404 with a JSON error for an unknown code."""
    name = request.match_info["name"]
    code, dot, kind = name.rpartition(".")
    if not dot or kind not in ("json", "csv"):
        raise web.HTTPNotFound()
    hub = request.app[HUB]
    try:
        if kind == "json":
            return web.json_response(await hub.tournaments.export(code.upper()))
        text = await hub.tournaments.export_csv(code.upper())
    except ServerError as err:
        status = 404 if err.code == "tournament_not_found" else 503
        return web.json_response({"code": err.code, "message": err.message}, status=status)
    return web.Response(
        text=text,
        content_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{code.upper()}.csv"'},
    )
