"""Who sees the deal code: everyone in a known-deal room, nobody before the end otherwise.

Pure room logic first, then the same over real WebSockets and the real Redis.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.devclient import open_client
from crescent_wire import protocol as p
from server.game import DealCode
from server.lobby.race import ResultRow
from server.lobby.room import Member, Room

CHOSEN = "CR1-N-AAAAAAB"


def room_of(deal: str, *, chosen: bool) -> Room:
    room = Room.create(
        "K7PQ2X",
        host=Member("h", "Host"),
        variant="N",
        deal=deal,
        deal_public=chosen,
        seats=3,
        time_limit=None,
        now=0,
        countdown_ms=1000,
    )
    room = room.join(Member("b", "Bo"), as_spectator=False, now=1).room
    return room.join(Member("s", "Spec"), as_spectator=True, now=2).room


def seen_by_everyone(room: Room, now: int) -> set[object]:
    return {room.public_dict(viewer, now)["deal"] for viewer in ("h", "b", "s", None)}


def test_a_chosen_deal_is_shown_to_every_member_from_the_start() -> None:
    room = room_of(CHOSEN, chosen=True)
    assert seen_by_everyone(room, 10) == {CHOSEN}
    assert room.public_dict("b", 10)["deal_known"] is True
    racing = room.start("h", now=20).room
    assert seen_by_everyone(racing, 2000) == {CHOSEN}


def test_a_random_deal_is_hidden_from_everyone_until_the_end() -> None:
    deal = str(DealCode.random("N"))
    room = room_of(deal, chosen=False)
    assert seen_by_everyone(room, 10) == {None}  # the host too: nobody knows it
    assert room.public_dict("h", 10)["deal_known"] is False
    racing = room.start("h", now=20).room
    assert seen_by_everyone(racing, 2000) == {None}
    done = racing.finish([ResultRow(1, "a", "A", "won", 1000, 10, 104)], now=3000).room
    assert seen_by_everyone(done, 3001) == {deal}


@pytest.mark.parametrize("when", ["waiting", "racing"])
def test_host_handover_never_reveals_a_random_deal(when: str) -> None:
    deal = str(DealCode.random("N"))
    room = room_of(deal, chosen=False)
    if when == "racing":
        room = room.start("h", now=20).room
    t = room.leave("h", now=2000)
    assert t.room.host == "b" and "host" in [e.kind for e in t.events]
    assert all("deal" not in e.data.to_wire() or e.kind == "finished" for e in t.events)
    assert seen_by_everyone(t.room, 2001) == {None}
    assert t.room.public_dict("b", 2001)["deal_known"] is False


def test_a_rematch_deals_a_secret_deal_even_in_a_known_deal_room() -> None:
    room = room_of(CHOSEN, chosen=True).start("h", now=20).room
    done = room.finish([ResultRow(1, "a", "A", "won", 1000, 10, 104)], now=3000).room
    t = done.rematch("h", str(DealCode.random("N")), now=4000)
    assert next(e.data.to_wire() for e in t.events if e.kind == "rematch")["deal_known"] is False
    assert seen_by_everyone(t.room, 4001) == {None}
    assert Room.from_record(t.room.to_record()).public_dict("h", 4001)["deal_known"] is False


# ---------------------------------------------------------------- over WebSockets


async def test_known_deal_room_over_websockets(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    snap = await ada.create(deal=CHOSEN.lower(), seats=2)
    assert (snap.room["deal"], snap.room["deal_known"]) == (CHOSEN, True)
    joined = await bo.join(snap.room["code"])
    assert (joined.room["deal"], joined.room["deal_known"]) == (CHOSEN, True)


async def test_random_deal_stays_hidden_after_the_host_leaves_mid_race(client: object) -> None:
    ada, bo, cy = [await open_client(client, "/ws", name=n) for n in ("Ada", "Bo", "Cy")]
    snap = await ada.create(seats=3)
    code = snap.room["code"]
    assert (snap.room["deal"], snap.room["deal_known"]) == (None, False)
    for racer in (bo, cy):
        assert (await racer.join(code)).room["deal"] is None
    assert isinstance(await ada.call(p.Start(room=code)), p.Ok)
    await bo.event("countdown")
    while (await bo.join(code)).room["phase"] != "racing":
        await asyncio.sleep(0.05)
    assert isinstance(await ada.call(p.Leave(room=code)), p.Ok)
    host = await bo.event("host")
    assert host.data["player"] == bo.player["id"]
    for racer in (bo, cy):
        after = await racer.join(code)
        assert after.room["host"] == bo.player["id"]
        assert (after.room["deal"], after.room["deal_known"]) == (None, False)
