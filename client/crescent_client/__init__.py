"""Python client for Crescent Race: library, greedy bot and terminal watcher.

>>> from crescent_client import connect, GreedyStrategy   # doctest: +SKIP
>>> async with connect("ws://127.0.0.1:8080/ws", name="Ada") as client:  # doctest: +SKIP
...     room = await client.create_room(seats=2)
...     await client.start()
...     await client.wait_for_start()
...     bot = GreedyStrategy()
...     while (action := bot.next_action(room.view)) is not None:
...         reply = await client.act(action)        # Ack (new view) or Refused

See docs/client.md. Messages are typed by ``crescent_wire.protocol`` (re-exported here).
"""

from crescent_client.client import (
    ClientEvent,
    CrescentClient,
    Disconnected,
    Reconnected,
    connect,
)
from crescent_client.errors import (
    ClientError,
    ConnectionLost,
    NotInRoom,
    RequestFailed,
    RequestTimeout,
)
from crescent_client.rooms import RoomState
from crescent_client.strategy import GreedyStrategy
from crescent_client.tournaments import TournamentState
from crescent_wire.protocol import (
    Ack,
    Error,
    Event,
    Progress,
    Refused,
    RoomSnapshot,
    TLive,
    TournamentSnapshot,
    TResults,
    TStandings,
)

__all__ = [
    "Ack",
    "ClientError",
    "ClientEvent",
    "ConnectionLost",
    "CrescentClient",
    "Disconnected",
    "Error",
    "Event",
    "GreedyStrategy",
    "NotInRoom",
    "Progress",
    "Reconnected",
    "Refused",
    "RequestFailed",
    "RequestTimeout",
    "RoomSnapshot",
    "RoomState",
    "TLive",
    "TResults",
    "TStandings",
    "TournamentSnapshot",
    "TournamentState",
    "connect",
]
