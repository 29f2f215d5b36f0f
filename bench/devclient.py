"""A tiny raw client (tests and bench scripts) over aiohttp's WebSocket client,
speaking crescent_wire.protocol; and :func:`post_json` for the HTTP routes.

It matches replies to requests by ``id`` and queues everything else (events, progress,
unsolicited errors) in ``inbox`` for ``wait_for``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import aiohttp

from crescent_wire import protocol as p


async def post_json(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    token: str | None,
    headers: dict[str, str],
) -> dict[str, Any]:
    """POST ``body`` as JSON with ``headers`` (and ``token`` as bearer): the JSON answer;
    any status but 200 raises RuntimeError."""
    headers = dict(headers)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with http.post(url, json=body, headers=headers) as resp:
        data: dict[str, Any] = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"{url}: {resp.status} {data}")
        return data


class WsClient:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.inbox: list[p.ServerMessage] = []
        self.received: list[p.ServerMessage] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[p.ServerMessage]] = {}
        self._changed = asyncio.Event()
        self.closed = asyncio.Event()
        self.close_code: int | None = None
        self.player: dict[str, Any] = {}
        self.token = ""
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                if frame.type != aiohttp.WSMsgType.BINARY:
                    continue
                msg = p.decode_server(frame.data)
                self.received.append(msg)
                msg_id = getattr(msg, "id", None)
                fut = self._pending.pop(msg_id, None) if msg_id is not None else None
                if fut is not None and not fut.done():
                    fut.set_result(msg)
                else:
                    self.inbox.append(msg)
                    self._changed.set()
        finally:
            self.close_code = self.ws.close_code
            self.closed.set()
            self._changed.set()
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError(f"closed with {self.close_code}"))

    async def call(self, msg: p.ClientMessage, timeout: float = 10.0) -> p.ServerMessage:
        """Send a request with a fresh id and return its reply."""
        msg_id = next(self._ids)
        msg = dataclasses.replace(msg, id=msg_id)
        fut: asyncio.Future[p.ServerMessage] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        await self.ws.send_bytes(p.encode_client(msg))
        return await asyncio.wait_for(fut, timeout)

    def expect_reply(self, msg_id: int) -> asyncio.Future[p.ServerMessage]:
        """A future for the reply to a request sent by hand with id ``msg_id``."""
        fut: asyncio.Future[p.ServerMessage] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        return fut

    async def send_raw(self, data: bytes) -> None:
        await self.ws.send_bytes(data)

    async def wait_for(
        self, pred: Callable[[p.ServerMessage], bool], timeout: float = 10.0
    ) -> p.ServerMessage:
        """The first queued message matching ``pred`` (removed from the inbox)."""

        async def find() -> p.ServerMessage:
            while True:
                for i, msg in enumerate(self.inbox):
                    if pred(msg):
                        del self.inbox[i]
                        return msg
                if self.closed.is_set():
                    raise ConnectionError(f"closed with {self.close_code}")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(find(), timeout)

    async def next_error(self, timeout: float = 5.0) -> p.Error:
        msg = await self.wait_for(lambda m: isinstance(m, p.Error), timeout)
        assert isinstance(msg, p.Error)
        return msg

    async def event(self, kind: str, timeout: float = 10.0) -> p.Event:
        msg = await self.wait_for(lambda m: isinstance(m, p.Event) and m.kind == kind, timeout)
        assert isinstance(msg, p.Event)
        return msg

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()

    # --- conveniences

    async def hello(self, name: str | None = None, token: str | None = None) -> p.Welcome:
        reply = await self.call(p.Hello(versions=(1,), token=token, name=name))
        assert isinstance(reply, p.Welcome), reply
        self.player, self.token = reply.player, reply.token
        return reply

    async def create(self, **kwargs: Any) -> p.RoomSnapshot:
        reply = await self.call(p.CreateRoom(**kwargs))
        assert isinstance(reply, p.RoomSnapshot), reply
        return reply

    async def join(self, code: str, as_: str = "racer") -> p.RoomSnapshot:
        reply = await self.call(p.Join(room=code, as_=as_))
        assert isinstance(reply, p.RoomSnapshot), reply
        return reply

    async def act(self, code: str, seq: int, action: str) -> p.ServerMessage:
        return await self.call(p.Act(room=code, seq=seq, action=action))


async def open_client(
    session: Any, url: str, name: str | None = None, token: str | None = None, hello: bool = True
) -> WsClient:
    """Connect (``session`` is an aiohttp ClientSession or pytest-aiohttp TestClient)."""
    ws = await session.ws_connect(url)
    client = WsClient(ws)
    if hello:
        await client.hello(name=name, token=token)
    return client
