"""The one record codec (server/storage/records.py) reads what the four codecs it replaced
wrote, writes the same bytes, and what it writes reads back with the old readers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.lobby.race import RacerGame, RacerProgress, ResultRow, initial_progress, rank
from server.lobby.room import Member, Room
from server.lobby.values import record_of
from server.storage.memory import MemoryStorage
from server.storage.memory_tournament import MemoryTournamentStorage
from server.storage.records import pack_record, unpack_record
from server.tournament import Tournament

# The codecs as they were before the one codec, each with its exact options.
OLD_PACKERS: dict[str, Callable[[Any], bytes]] = {
    "records/redis_daily/memory": lambda obj: msgpack.packb(obj, use_bin_type=True),
    "redis_base": msgpack.Packer(use_bin_type=True).pack,
}
OLD_UNPACKERS: dict[str, Callable[[bytes], Any]] = {
    "records": lambda blob: msgpack.unpackb(blob, raw=False, strict_map_key=False),
    "redis_base/redis_daily/memory rooms": lambda blob: msgpack.unpackb(blob, raw=False),
    "memory progress": lambda blob: msgpack.unpackb(blob),
}


def _racer_progress() -> RacerProgress:
    racer = RacerGame.new("CR1-N-AAAAAAB")
    racer.apply(str(next(racer.game.legal_moves())), elapsed_ms=1200)
    return racer.progress("p1", now=1_700_000_000_000)


def _finished_room() -> Room:
    room = Room.create(
        "K7PQ2X",
        host=Member("p1", "Ada"),
        variant="N",
        deal="CR1-N-AAAAAAB",
        deal_public=False,
        seats=4,
        time_limit=600,
        now=1_700_000_000_000,
    )
    rows = rank(
        [("p1", "Ada"), ("p2", "Bob")],
        {"p1": _racer_progress()},
        start_at=1_700_000_000_000,
        now=1_700_000_600_000,
    )
    return Room.from_record(
        {
            **room.to_record(),
            "phase": "finished",
            "results": [row.to_record() for row in rows],
            "entrants": [["p1", "Ada"]],
        }
    )


# One sample of each record type the adapters store.
RECORDS: dict[str, Any] = {
    "room": _finished_room().to_record(),
    "round room": Room.create_round(
        "K7PQ2Y",
        tournament="TK7PQ2X",
        racers=(Member("a", "A"), Member("b", "B")),
        variant="N",
        deal="CR1-N-AAAAAAB",
        time_limit=60,
        now=0,
    ).to_record(),
    "initial progress": initial_progress("p1").to_record(),
    "progress": _racer_progress().to_record(),
    "player rooms": ["K7PQ2X", "K7PQ2Y"],
    "result rows": [row.to_record() for row in _finished_room().results or ()],
    "daily entry": {"player": "p1", "name": "Ada", "time_ms": 61_000, "board": "ranked"},
    "bytes and floats": {"secret": b"\x00\xff", "ratio": 0.5, "none": None, "ok": True},
}


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_every_record_type_reads_and_writes_as_before(kind: str) -> None:
    record = RECORDS[kind]
    blob = pack_record(record)
    for name, old_pack in OLD_PACKERS.items():
        assert old_pack(record) == blob, name  # the same bytes as stored today
        assert unpack_record(old_pack(record)) == record
    for name, old_unpack in OLD_UNPACKERS.items():
        assert old_unpack(blob) == record, name  # an old reader still reads it
    assert unpack_record(blob) == record


def test_progress_reads_what_the_dict_code_stored() -> None:
    """The progress record as the code before RacerProgress wrote it (a dict literal)."""
    old = {
        "player": "p1",
        "moves": 3,
        "foundation": 9,
        "redeals_used": 1,
        "status": "playing",
        "finished_ms": None,
        "at": 1_700_000_000_000,
    }
    progress = RacerProgress.from_record(unpack_record(msgpack.packb(old, use_bin_type=True)))
    assert progress == RacerProgress("p1", 3, 9, 1, "playing", None, 1_700_000_000_000)
    assert pack_record(progress.to_record()) == msgpack.packb(old, use_bin_type=True)


def test_progress_record_is_the_generic_record() -> None:
    """RacerProgress.to_record is spelled out for speed; it must stay the generic one."""
    for progress in (initial_progress("p1"), _racer_progress()):
        assert progress.to_record() == record_of(progress)
        assert list(progress.to_record()) == list(record_of(progress))  # the same order


def test_result_rows_read_what_the_dict_code_stored() -> None:
    """A results row as rank() built it before ResultRow (``{"rank": i + 1, **row}``)."""
    old = {
        "rank": 1,
        "player": "p1",
        "name": "Ada",
        "status": "won",
        "time_ms": 61_000,
        "moves": 120,
        "foundation": 104,
    }
    row = ResultRow.from_record(unpack_record(msgpack.packb(old, use_bin_type=True)))
    assert row == ResultRow(1, "p1", "Ada", "won", 61_000, 120, 104)
    assert pack_record(row.to_record()) == msgpack.packb(old, use_bin_type=True)


def test_integer_map_keys_read_back() -> None:
    """The old Redis readers refused integer map keys (msgpack's strict_map_key); the one
    codec reads them, as records.py always did (a map keyed by round number)."""
    blob = pack_record({1: [{"rank": 1}], 2: []})
    with pytest.raises(ValueError):
        msgpack.unpackb(blob, raw=False)
    assert unpack_record(blob) == {1: [{"rank": 1}], 2: []}


def test_tuples_read_back_as_lists() -> None:
    assert unpack_record(pack_record({"entrants": (("a", "A"),)})) == {"entrants": [["a", "A"]]}


_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_plain)
def test_any_plain_value_round_trips_as_before(value: Any) -> None:
    blob = pack_record(value)
    assert blob == msgpack.packb(value, use_bin_type=True)
    assert unpack_record(blob) == msgpack.unpackb(blob, raw=False) == value


async def test_a_room_stored_by_the_old_code_loads_as_a_room() -> None:
    """The memory adapter holds the blob the dict-passing port stored (Room.to_record()
    packed by the old memory codec); load_room returns the Room, and storing that Room
    again writes the same bytes. A record from before tournaments and the daily seal
    (no such keys) loads too."""
    storage = MemoryStorage()
    room = _finished_room()
    old_blob = msgpack.packb(room.to_record(), use_bin_type=True)
    storage.rooms[room.code] = (room.ver, old_blob)
    assert await storage.load_room(room.code) == room
    await storage.cas_room(room.code, room.ver, room, (), None)
    assert storage.rooms[room.code] == (room.ver, old_blob)
    older = {
        k: v for k, v in room.to_record().items() if k not in ("deal_sealed_until", "tournament")
    }
    storage.rooms["OLDER2"] = (0, msgpack.packb(older, use_bin_type=True))
    assert await storage.load_room("OLDER2") == room


async def test_a_tournament_stored_by_the_old_code_loads_as_a_tournament() -> None:
    """As for rooms: the blob the dict-passing tournament port stored loads as the
    Tournament, and storing it back writes the same bytes."""
    t = Tournament.create(
        "TK7PQ2X",
        name="Cup",
        host=("h", "Host"),
        variant="N",
        rounds=2,
        time_limit=60,
        max_players=4,
        scoring="placement",
        deals=None,
        now=0,
    )
    t = t.join("a", "Ada", now=1).tournament.join("b", "Bo", now=2).tournament
    t = t.start_round("h", room="K7PQ2X", deal="CR1-N-AAAAAAB", start_at=3010, now=10).tournament
    rows = [ResultRow(1, "b", "Bo", "won", 50_000, 300, 104)]
    t = t.record_round(1, "K7PQ2X", rows, deal="CR1-N-AAAAAAB", now=63_010).tournament
    storage = MemoryTournamentStorage()
    old_blob = msgpack.packb(t.to_record(), use_bin_type=True)
    storage.records[t.code] = (t.ver, old_blob)
    loaded = await storage.load_tournament(t.code)
    assert loaded is not None and loaded.to_record() == t.to_record()
    await storage.cas_tournament(t.code, t.ver, loaded, ttl_s=60)
    assert storage.records[t.code] == (t.ver, old_blob)
