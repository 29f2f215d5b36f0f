"""Messages between processes: each kind round-trips, anything else is refused with an
error naming the fault, and a hub drops such a message, logs it once and keeps going."""

from __future__ import annotations

import asyncio
import logging

import msgpack
import pytest

from crescent_wire import protocol as p
from server.core import messages
from server.core.daily import DAILY_CHANNEL
from server.lobby import Member, Room
from server.storage.memory import MemoryStorage
from tests.server.core_support import ManualClock, SettlingHub, connect, start_hub

ROOM = Room.create(
    "K7PQ2X",
    host=Member("p1", "Ada"),
    variant="N",
    deal="CR1-N-AAAAAAB",
    deal_public=False,
    seats=2,
    time_limit=None,
    now=0,
)
GOOD = [
    messages.RoomEvents(room=ROOM, frames=(b"e1", b"e2"), first_ver=3),
    messages.ProgressFrame(frame=b"p", origin=b"12345678"),
    messages.TournamentChanged(ver=4, urgent=False),
    messages.DailyChanged(day="2026-12-01"),
]


@pytest.mark.parametrize("message", GOOD, ids=lambda m: type(m).__name__)
def test_every_kind_round_trips(message: messages.BusMessage) -> None:
    assert messages.decode(messages.encode(message)) == message


def packed(value: object) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


@pytest.mark.parametrize(
    "payload, error",
    [
        (b"\xc1", "not msgpack (FormatError)"),
        (packed({"k": "e"}), "not a non-empty array but dict"),
        (packed([]), "not a non-empty array but list"),
        (packed(["z", 1]), "unknown kind 'z'"),
        (packed([7]), "unknown kind 7"),
        (packed(["p", b"frame"]), "kind 'p': 1 fields, expected 2"),
        (packed(["p", "frame", b"origin"]), "kind 'p': field 'frame' must be bytes, not str"),
        (packed(["e", [], [b"f"], 1]), "kind 'e': field 'record' must be a map, not list"),
        (packed(["e", {}, [b"f", 2], 1]), "field 'frames' must be a list of bytes, not list"),
        (packed(["e", {}, [], "1"]), "kind 'e': field 'first_ver' must be an integer, not str"),
        (packed(["e", {"code": "K7"}, [], 1]), "kind 'e': field 'record' is not a room (KeyError"),
        (packed(["t", True, True]), "kind 't': field 'ver' must be an integer, not bool"),
        (packed(["t", 4, 1]), "kind 't': field 'urgent' must be a boolean, not int"),
        (packed(["d", b"2026-12-01"]), "kind 'd': field 'day' must be a string, not bytes"),
    ],
)
def test_anything_else_is_refused_with_its_fault(payload: bytes, error: str) -> None:
    with pytest.raises(messages.BadBusMessage) as refused:
        messages.decode(payload)
    assert error in str(refused.value)


async def test_a_hub_drops_bad_messages_logs_once_and_keeps_going(
    storage: MemoryStorage, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Garbage on a room's, the daily and a tournament's channel (a newer process's
    kind, a malformed payload): one WARNING per process for the lot, and the next real
    event still reaches the other process's sockets."""
    here, there = await start_hub(storage, clock), await start_hub(storage, clock)
    try:
        ada, bob = await connect(here, "Ada"), await connect(there, "Bob")
        snapshot = await here.handle(ada, p.CreateRoom(deal="CR1-N-AAAAAAB", seats=2))
        assert isinstance(snapshot, p.RoomSnapshot)
        code = str(snapshot.room["code"])
        with caplog.at_level(logging.WARNING, logger="server.hub"):
            await storage.publish_many(
                [
                    (code, packed(["z", "from a newer process"])),
                    (code, b"\xc1"),
                    (DAILY_CHANNEL, b"2026-12-01"),  # the raw day of the old format
                    ("t-SPRING", packed(["t", "4", True])),
                ]
            )
            await settle(here, there)
        dropped = [r for r in caplog.records if r.getMessage() == "bus message dropped"]
        assert len(dropped) == 2  # one per hub
        # the room's two and the daily one here; only the daily one there (not in the
        # room yet); the tournament's channel: no hub is subscribed to it
        assert (here.bad_bus_messages.occurrences, there.bad_bus_messages.occurrences) == (3, 1)
        await there.handle(bob, p.Join(room=code))
        await settle(here, there)
        assert bob.player is not None
        assert [e.data["player"]["id"] for e in ada.events("joined")] == [bob.player_id]
    finally:
        await here.stop()
        await there.stop()


async def settle(*hubs: SettlingHub) -> None:
    for _ in range(3):
        await asyncio.sleep(0)
        for hub in hubs:
            await hub.settle()
