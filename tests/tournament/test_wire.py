"""The tournament wire messages (docs/protocol.md, "Tournaments"): codec both ways,
strict decoding of requests with bounds, and the error codes."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import (
    ERROR_MESSAGES,
    ERROR_MESSAGES_SV,
    ProtocolError,
    RoomError,
    TournamentError,
)
from server.core import wire_server

CLIENT = [
    p.TCreate(name="Friday cup", rounds=3, time_limit=300, max_players=200, id=1),
    p.TCreate(
        name="Fixed",
        rounds=2,
        time_limit=30,
        max_players=2,
        deals=("CR1-N-AAAAAAB", "CR1-N-AAAAAAC"),
        variant="R",
        scoring="time",
    ),
    p.TJoin(tournament="TK7PQ2X", as_="spectator", id=2),
    p.TJoin(tournament="TK7PQ2X"),
    p.TWithdraw(tournament="TK7PQ2X", id=3),
    p.THost(tournament="TK7PQ2X", op="start_round", id=4),
    p.THost(tournament="TK7PQ2X", op="remove", player="0123456789abcdef"),
    p.TGet(tournament="TK7PQ2X"),
    p.TUnwatch(tournament="TK7PQ2X", id=5),
    p.TGetResults(tournament="TK7PQ2X", round=20),
    p.TGetStandings(tournament="TK7PQ2X", id=6),
]


@pytest.mark.parametrize("msg", CLIENT, ids=lambda m: type(m).__name__)
def test_requests_round_trip(msg: p.ClientMessage) -> None:
    assert p.decode_client(p.encode_client(msg)) == msg


ROW = {
    "rank": 1,
    "id": "a",
    "name": "Ada",
    "status": "active",
    "points": 7,
    "rounds_won": 1,
    "best_place": 1,
    "rounds_played": 2,
}
LIVE = {
    "place": 1,
    "id": "a",
    "name": "Ada",
    "finished": False,
    "time_ms": None,
    "foundation": 40,
    "moves": 12,
}

SERVER = [
    p.TournamentSnapshot(tournament={"code": "TK7PQ2X", "standings": [ROW]}, you={"role": "host"}),
    p.TournamentSnapshot(tournament={"code": "TK7PQ2X"}, you={"role": "none"}, id=9),
    p.TLive(tournament="TK7PQ2X", round=2, top=(LIVE,), you=LIVE, racing=150, finished=50),
    p.TLive(tournament="TK7PQ2X", round=1, top=(), you=None, racing=0, finished=0),
    p.TResults(tournament="TK7PQ2X", round=1, deal="CR1-N-AAAAAAB", rows=({"place": 1},), id=3),
    p.TStandings(tournament="TK7PQ2X", final=True, rows=(ROW,), id=4),
]


@pytest.mark.parametrize("msg", SERVER, ids=lambda m: type(m).__name__)
def test_replies_round_trip(msg: p.ServerMessage) -> None:
    assert p.decode_server(p.encode(msg)) == msg


def test_t_live_shared_part_is_byte_identical_per_recipient() -> None:
    top = tuple({**LIVE, "place": i + 1, "id": str(i)} for i in range(10))
    shared = wire_server.t_live_shared("TK7PQ2X", 3, top, 190, 10)
    for you in (None, LIVE, {**LIVE, "place": 150}):
        frame = wire_server.encode_t_live(shared, you)
        assert frame == p.encode(
            p.TLive(tournament="TK7PQ2X", round=3, top=top, you=you, racing=190, finished=10)
        )
        assert msgpack.unpackb(frame)["you"] == you


def test_decoder_normalises_and_defaults() -> None:
    created = p.decode_client(
        msgpack.packb(
            {
                "t": "t_create",
                "name": "  Friday \t cup ",
                "rounds": 1,
                "time_limit": 7200,
                "max_players": 2,
                "variant": "o",
                "deals": None,
                "future": 1,
            }
        )
    )
    assert created == p.TCreate(
        name="Friday cup", rounds=1, time_limit=7200, max_players=2, variant="O"
    )
    assert p.decode_client(msgpack.packb({"t": "t_join", "tournament": "tk7pq2x"})) == p.TJoin(
        "TK7PQ2X"
    )


GOOD_CREATE: dict[str, Any] = {
    "t": "t_create",
    "name": "Cup",
    "rounds": 2,
    "time_limit": 60,
    "max_players": 10,
}


@pytest.mark.parametrize(
    "obj",
    [
        {**GOOD_CREATE, "name": ""},
        {**GOOD_CREATE, "name": "   "},
        {**GOOD_CREATE, "name": "x" * 41},
        {**GOOD_CREATE, "name": "bell\x07"},
        {**GOOD_CREATE, "name": 5},
        {**GOOD_CREATE, "rounds": 0},
        {**GOOD_CREATE, "rounds": 21},
        {**GOOD_CREATE, "rounds": True},
        {k: v for k, v in GOOD_CREATE.items() if k != "time_limit"},
        {**GOOD_CREATE, "time_limit": 29},
        {**GOOD_CREATE, "time_limit": 7201},
        {**GOOD_CREATE, "max_players": 1},
        {**GOOD_CREATE, "max_players": 201},
        {**GOOD_CREATE, "scoring": "points"},
        {**GOOD_CREATE, "scoring": "TIME"},
        {**GOOD_CREATE, "variant": "X"},
        {**GOOD_CREATE, "deals": ["CR1-N-AAAAAAB"]},  # not exactly `rounds` codes
        {**GOOD_CREATE, "deals": ["CR1-N-AAAAAAB", 7]},
        {**GOOD_CREATE, "deals": ["CR1-N-AAAAAAB", "x" * 33]},
        {**GOOD_CREATE, "deals": "CR1-N-AAAAAAB"},
        {"t": "t_join"},
        {"t": "t_join", "tournament": ""},
        {"t": "t_join", "tournament": "x" * 33},
        {"t": "t_join", "tournament": "TK7PQ2X", "as": "racer"},
        {"t": "t_host", "tournament": "TK7PQ2X", "op": "explode"},
        {"t": "t_host", "tournament": "TK7PQ2X"},
        {"t": "t_host", "tournament": "TK7PQ2X", "op": "remove"},
        {"t": "t_host", "tournament": "TK7PQ2X", "op": "remove", "player": "x" * 65},
        {"t": "t_results", "tournament": "TK7PQ2X"},
        {"t": "t_results", "tournament": "TK7PQ2X", "round": 0},
        {"t": "t_results", "tournament": "TK7PQ2X", "round": 21},
        {"t": "t_withdraw", "tournament": 7},
        {"t": "t_get", "tournament": None},
        {"t": "t_unwatch"},
        {"t": "t_standings", "tournament": ["TK7PQ2X"]},
    ],
)
def test_bad_requests_are_bad_field(obj: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError) as info:
        p.decode_client(msgpack.packb({**obj, "id": 11}))
    assert info.value.code == "bad_field"
    assert info.value.msg_id == 11


NEW_CODES = [
    "tournament_not_found",
    "registration_closed",
    "tournament_full",
    "removed_from_tournament",
    "tournament_over",
    "not_registered",
    "round_running",
    "tournament_paused",
    "no_more_rounds",
    "no_players",
    "round_not_finished",
    "too_many_tournaments",
    "too_many_subscriptions",
]


@pytest.mark.parametrize("code", NEW_CODES)
def test_error_codes_have_messages_in_english_and_swedish(code: str) -> None:
    err = TournamentError(code)
    assert err.message == ERROR_MESSAGES[code]
    assert ERROR_MESSAGES_SV[code] and ERROR_MESSAGES_SV[code] != ERROR_MESSAGES[code]


def test_tournament_errors_are_their_own_family() -> None:
    assert TournamentError("not_host").code == "not_host"
    with pytest.raises(ValueError):
        TournamentError("room_full")
    with pytest.raises(ValueError):
        RoomError("tournament_full")
