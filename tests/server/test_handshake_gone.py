"""A client that leaves while the server answers its WebSocket handshake
(server/web/websocket.py ``ws_handler``): not an error. The ten-minute soak logged 495
aiohttp ``Unhandled exception: RuntimeError: Call .prepare() first`` lines, each with a
traceback, for clients of a killed server reconnecting: the handler returned the
WebSocketResponse whose prepare had broken off, and aiohttp could not finish it."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest
from aiohttp import web


async def test_a_client_gone_during_the_handshake_logs_no_error(
    client: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    write_headers = web.StreamResponse._write_headers  # noqa: SLF001 (where the write fails)
    broken: list[bool] = []

    async def gone(self: web.StreamResponse) -> None:
        if isinstance(self, web.WebSocketResponse) and not broken:
            broken.append(True)  # as a write to a socket the client closed fails
            raise ConnectionResetError("Cannot write to closing transport")
        await write_headers(self)

    monkeypatch.setattr(web.StreamResponse, "_write_headers", gone)
    with pytest.raises(aiohttp.WSServerHandshakeError):
        await client.ws_connect("/ws")
    assert broken == [True]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == [], [f"{r.name}: {r.getMessage()}" for r in errors]
    ws = await client.ws_connect("/ws")  # the next handshake is answered as ever
    await ws.close()
