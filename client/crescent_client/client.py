"""The asyncio client: one WebSocket connection (``websockets``) to a Crescent Race server.

Usage (see docs/client.md)::

    async with connect("ws://127.0.0.1:8080/ws", name="Ada") as client:
        snapshot = await client.create_room(seats=2)
        await client.ready()
        await client.wait_for_start()
        reply = await client.act("p3-ad")      # Ack or Refused
        async for event in client.events():     # Event, Progress, Reconnected …
            ...

Messages are encoded and decoded by ``crescent_wire.protocol`` (the one codec).

:class:`CrescentClient` is put together from three layers: the sans-I/O session
(``crescent_client.session``: request ids, waiting replies, ``seq``, room and tournament
state), the websockets adapter (``crescent_client.connection``) with its reconnect loop
(``crescent_client.reconnect``) and the requests of each area of the protocol
(``crescent_client.areas``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from crescent_client.areas import DailyRequests, RoomRequests, TournamentRequests
from crescent_client.connection import DEFAULT_RECONNECT_DELAYS
from crescent_client.reconnect import Reconnecting
from crescent_client.rooms import RoomState
from crescent_client.session import ClientEvent, Disconnected, Reconnected
from crescent_client.tournaments import TournamentState

__all__ = [
    "DEFAULT_RECONNECT_DELAYS",
    "ClientEvent",
    "CrescentClient",
    "Disconnected",
    "Reconnected",
    "connect",
]


class CrescentClient(RoomRequests, DailyRequests, TournamentRequests, Reconnecting):
    """A connection to a server, typed requests, room state and an event stream.

    ``token``: an earlier session's token (same player); ``name``: display name.
    ``reconnect``: reconnect automatically (else a drop raises ``ConnectionLost``).
    ``pace``: fraction of the server's announced rate limit the client stays under
    (``None`` to not pace at all).
    """

    # The session's state, where callers have always found it.

    @property
    def token(self) -> str | None:
        return self.session.token

    @property
    def name(self) -> str | None:
        return self.session.name

    @property
    def player(self) -> dict[str, Any]:
        return self.session.player

    @property
    def server_version(self) -> int:
        return self.session.server_version

    @property
    def rooms(self) -> dict[str, RoomState]:
        return self.session.rooms

    @property
    def tournaments(self) -> dict[str, TournamentState]:
        return self.session.tournaments

    @property
    def frames_received(self) -> int:
        return self.session.frames_received

    @property
    def bytes_received(self) -> int:
        return self.session.bytes_received

    @property
    def received_types(self) -> Counter[str]:
        return self.session.received_types


@asynccontextmanager
async def connect(
    url: str, *, token: str | None = None, name: str | None = None, **options: Any
) -> AsyncIterator[CrescentClient]:
    """``async with connect(url, name="Ada") as client:`` → an open :class:`CrescentClient`."""
    client = CrescentClient(url, token=token, name=name, **options)
    await client.open()
    try:
        yield client
    finally:
        await client.close()
