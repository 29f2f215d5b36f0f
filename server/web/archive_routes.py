"""The archive's HTTP routes (docs/archive.md, "Reading"): public, like a results page.

- ``GET /api/games/<id>.json``: the game's replay (docs/replay.md);
- ``GET /api/players/<id>/games?before=<cursor>&limit=N``: a player's history, newest
  first, keyset-paginated (``next`` in the body is the next page's ``before``);
- ``GET /api/deals/<code>/games?after=<cursor>&limit=N``: a deal's board, best first.

Errors answer ``{"code": …, "message": …}``: 404 ``game_not_found`` (unknown, or not
revealed yet: the same answer), 400 for bad input, 503 ``archive_unavailable``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from crescent_wire.errors import ArchiveReadError
from server.core.archive_reads import ArchiveReads

STATUS = {"game_not_found": 404, "archive_off": 404, "archive_unavailable": 503}

ReadsOf = Callable[[web.Request], ArchiveReads]


def add_archive_routes(router: web.UrlDispatcher, reads_of: ReadsOf) -> None:
    async def game(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        game_id, dot, kind = name.rpartition(".")
        if not dot or kind != "json":
            return _error(ArchiveReadError("game_not_found"))
        return await _answer(reads_of(request).replay(game_id))

    async def history(request: web.Request) -> web.Response:
        query = request.query
        return await _answer(
            reads_of(request).history(
                request.match_info["player"], before=query.get("before"), limit=query.get("limit")
            )
        )

    async def board(request: web.Request) -> web.Response:
        query = request.query
        return await _answer(
            reads_of(request).board(
                request.match_info["deal"], after=query.get("after"), limit=query.get("limit")
            )
        )

    router.add_get("/api/games/{name}", game)
    router.add_get("/api/players/{player}/games", history)
    router.add_get("/api/deals/{deal}/games", board)


async def _answer(read: Awaitable[dict[str, Any]]) -> web.Response:
    try:
        body = await read
    except ArchiveReadError as err:
        return _error(err)
    return web.json_response(body)


def _error(err: ArchiveReadError) -> web.Response:
    return web.json_response(
        {"code": err.code, "message": err.message}, status=STATUS.get(err.code, 400)
    )
