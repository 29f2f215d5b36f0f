"""Golden frames: the exact bytes of every wire message, pinned in golden_frames.json.

The wire is a contract with every client (browser, Python, the black-box clients):
a refactor of the codec must not move a byte, not even the order of a map's keys.
Each case below is encoded and compared with its recorded hex; every recorded frame
is decoded again and compared with the message it came from; and a table of raw
request and reply maps (lenient defaults, normalisation, bad fields) pins what the
decoders make of them, by ``repr`` or error code and message.

To record the file afresh (only for an intended protocol change, reviewed in the diff):

    CRESCENT_WRITE_GOLDEN=1 .venv/bin/pytest tests/wire/test_golden_frames.py -q
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import ProtocolError
from server.core import wire_server as server_frames

GOLDEN = Path(__file__).with_name("golden_frames.json")
WRITE = os.environ.get("CRESCENT_WRITE_GOLDEN") == "1"

VIEW = {"moves": 3, "foundations": [[1, 2], []], "status": "playing", "elapsed_ms": 1234}
ROOM = {
    "code": "K7PQ2X",
    "ver": 7,
    "phase": "racing",
    "host": "p1",
    "players": [{"id": "p1", "name": "Ada", "ready": True, "connected": True}],
    "settings": {"variant": "N", "seats": 4, "time_limit": None},
}
LIVE = {"place": 1, "id": "a", "name": "Ada", "finished": False, "time_ms": None, "moves": 12}
ROW = {"rank": 1, "id": "a", "name": "Ada", "points": 7}
T_SNAPSHOT = {"code": "TK7PQ2X", "ver": 3, "name": "Cup", "standings": [ROW]}

CLIENT: list[tuple[str, Any]] = [
    ("hello", p.Hello()),
    ("hello_full", p.Hello(versions=(1, 2), token="tok.en", name="Ada", id=1)),
    ("create_room", p.CreateRoom()),
    ("create_room_full", p.CreateRoom("R", "CR1-R-AAAAAAB", 2, 300, id=2)),
    ("join", p.Join(room="K7PQ2X")),
    ("join_spectator", p.Join(room="K7PQ2X", as_="spectator", id=3)),
    ("leave", p.Leave(room="K7PQ2X", id=4)),
    ("ready", p.Ready(room="K7PQ2X")),
    ("ready_false", p.Ready(room="K7PQ2X", ready=False, id=5)),
    ("start", p.Start(room="K7PQ2X", id=6)),
    ("act", p.Act(room="K7PQ2X", seq=1, action="p10-p14")),
    ("act_id", p.Act(room="K7PQ2X", seq=2**31, action="redeal", id=2**31)),
    ("sync", p.Sync(room="K7PQ2X")),
    ("sync_since", p.Sync(room="K7PQ2X", since=2**40, id=7)),
    ("rematch", p.Rematch(room="K7PQ2X", id=8)),
    ("end_race", p.EndRace(room="K7PQ2X", id=9)),
    ("ping", p.Ping()),
    ("ping_id", p.Ping(id=0)),
    ("hint", p.Hint(room="K7PQ2X", id=10)),
    ("winnable", p.Winnable(room="K7PQ2X")),
    ("replay", p.Replay(game="K7PQ2X-1-min3kao0", id=14)),
    ("daily", p.DailyToday()),
    ("daily_id", p.DailyToday(id=11)),
    ("daily_start", p.DailyStart()),
    ("daily_start_full", p.DailyStart(practice=True, day="2026-12-01", id=12)),
    ("daily_board", p.DailyBoard()),
    ("daily_board_full", p.DailyBoard("2026-11-30", 100, 25, True, True, id=13)),
    ("daily_days", p.DailyDays()),
    ("daily_days_full", p.DailyDays(before="2026-11-30", limit=30, id=14)),
    ("daily_me", p.DailyMe(id=15)),
    ("t_create", p.TCreate(name="Friday cup", rounds=3, time_limit=300, max_players=200)),
    (
        "t_create_full",
        p.TCreate(
            name="Fixed",
            rounds=2,
            time_limit=30,
            max_players=2,
            deals=("CR1-N-AAAAAAB", "CR1-N-AAAAAAC"),
            variant="R",
            scoring="time",
            id=16,
        ),
    ),
    ("t_join", p.TJoin(tournament="TK7PQ2X")),
    ("t_join_spectator", p.TJoin(tournament="TK7PQ2X", as_="spectator", id=17)),
    ("t_withdraw", p.TWithdraw(tournament="TK7PQ2X", id=18)),
    ("t_host", p.THost(tournament="TK7PQ2X", op="start_round")),
    ("t_host_remove", p.THost(tournament="TK7PQ2X", op="remove", player="0123abcd", id=19)),
    ("t_get", p.TGet(tournament="TK7PQ2X")),
    ("t_unwatch", p.TUnwatch(tournament="TK7PQ2X", id=20)),
    ("t_results", p.TGetResults(tournament="TK7PQ2X", round=20, id=21)),
    ("t_standings", p.TGetStandings(tournament="TK7PQ2X")),
]

EVENT = p.Event(room="K7PQ2X", ver=8, kind="joined", data={"player": "p2", "name": "Bo"})
SERVER: list[tuple[str, Any]] = [
    ("welcome", p.Welcome(version=1, player={"id": "p1", "name": "Ada"}, token="t", server_time=1)),
    (
        "welcome_full",
        p.Welcome(1, {"id": "p1", "name": "Ada"}, "t", 1764500000000, {"max_frame": 1}, id=1),
    ),
    ("room_push", p.RoomSnapshot(room=ROOM, you={"role": "racer", "game": VIEW, "last_seq": 4})),
    ("room_reply", p.RoomSnapshot(room=ROOM, you={"role": "spectator"}, id=2)),
    ("event", EVENT),
    ("event_bare", p.Event(room="K7PQ2X", ver=1, kind="started")),
    ("events", p.Events(room="K7PQ2X", events=(EVENT, p.Event("K7PQ2X", 9, "left")), id=3)),
    ("events_empty", p.Events(room="K7PQ2X", events=())),
    ("progress", p.Progress(room="K7PQ2X", round=2, racers=({"id": "p1", "moves": 3},))),
    ("ack", p.Ack(room="K7PQ2X", seq=3, view=VIEW, id=4)),
    ("ack_duplicate", p.Ack(room="K7PQ2X", seq=3, view=None, duplicate=True)),
    ("refused", p.Refused("K7PQ2X", 4, "illegal_move", "Not a legal move", "Inte ett drag", 5)),
    ("refused_push", p.Refused("K7PQ2X", 4, "race_over", "Over", "Slut")),
    ("ok", p.Ok()),
    ("ok_id", p.Ok(id=6)),
    ("pong", p.Pong(server_time=1764500000000, id=7)),
    ("error", p.Error(code="bad_field", message="Field 'seq' is missing", id=8)),
    ("error_no_id", p.Error(code="rate_limited", message="Slow down")),
    ("hint_reply", p.HintReply("K7PQ2X", "p10-p14", True, "solver", id=9)),
    ("hint_reply_none", p.HintReply("K7PQ2X", None, False, "heuristic")),
    (
        "winnable_reply",
        p.WinnableReply("K7PQ2X", "CR1-N-AAAAAAB", "won", ("p1-p2", "redeal"), 1234, 0.5, id=10),
    ),
    ("winnable_unknown", p.WinnableReply("K7PQ2X", "CR1-N-AAAAAAB", "unknown", None, 0, 2.0)),
    (
        "replay_reply",
        p.ReplayReply(
            "K7PQ2X-1-min3kao0",
            {"format": "crescent-replay/1", "id": "K7PQ2X-1-min3kao0", "racers": []},
            id=14,
        ),
    ),
    ("daily_reply", p.DailyReply(kind="daily", data={"day": "2026-12-01", "attempt": None}, id=11)),
    ("daily_board_push", p.DailyReply(kind="daily_board", data={"day": "2026-12-01", "top": []})),
    ("daily_days_reply", p.DailyReply(kind="daily_days", data={"days": []}, id=12)),
    ("daily_me_reply", p.DailyReply(kind="daily_me", data={"streak": 3}, id=13)),
    ("tournament_push", p.TournamentSnapshot(tournament=T_SNAPSHOT, you={"role": "host"})),
    ("tournament_reply", p.TournamentSnapshot(tournament=T_SNAPSHOT, you={"role": "none"}, id=14)),
    ("t_live", p.TLive("TK7PQ2X", 2, (LIVE, {**LIVE, "place": 2}), LIVE, 150, 50)),
    ("t_live_no_you", p.TLive("TK7PQ2X", 1, (), None, 0, 0)),
    ("t_results_reply", p.TResults("TK7PQ2X", 1, "CR1-N-AAAAAAB", ({"place": 1},), id=15)),
    ("t_results_no_deal", p.TResults("TK7PQ2X", 2, None, ())),
    ("t_standings_reply", p.TStandings("TK7PQ2X", True, (ROW,), id=16)),
    ("t_standings_push", p.TStandings("TK7PQ2X", False, ())),
]


def _server_only() -> list[tuple[str, bytes]]:
    """The server's pre-packed encoders (they splice bytes packed once per tick)."""
    view = msgpack.packb(VIEW, use_bin_type=True)
    shared_live = server_frames.t_live_shared("TK7PQ2X", 2, (LIVE,), 150, 50)
    shared_t = server_frames.pack_value(T_SNAPSHOT)
    return [
        ("encode_ack", server_frames.encode_ack("K7PQ2X", 3, view)),
        ("encode_ack_id", server_frames.encode_ack("K7PQ2X", 3, view, msg_id=4)),
        ("encode_ack_dup", server_frames.encode_ack("K7PQ2X", 3, view, duplicate=True)),
        (
            "encode_ack_dup_id",
            server_frames.encode_ack("K7PQ2X", 9, view, duplicate=True, msg_id=0),
        ),
        ("t_live_shared", shared_live),
        ("encode_t_live_you", server_frames.encode_t_live(shared_live, LIVE)),
        ("encode_t_live_none", server_frames.encode_t_live(shared_live, None)),
        ("pack_value", shared_t),
        ("encode_tournament", server_frames.encode_tournament(shared_t, {"role": "host"})),
        ("encode_tournament_id", server_frames.encode_tournament(shared_t, {"role": "x"}, 14)),
    ]


# Raw maps the decoders are given: (name, which decoder, the map).
RAW: list[tuple[str, str, Any]] = [
    ("hello_minimal", "client", {"t": "hello", "versions": [1]}),
    ("hello_empty_name", "client", {"t": "hello", "versions": [1], "name": "", "id": 1}),
    ("hello_no_versions", "client", {"t": "hello", "id": 2}),
    ("hello_bool_versions", "client", {"t": "hello", "versions": [True]}),
    ("hello_long_token", "client", {"t": "hello", "versions": [1], "token": "x" * 513}),
    ("create_lower_variant", "client", {"t": "create_room", "variant": "f", "seats": None}),
    ("create_bad_seats", "client", {"t": "create_room", "seats": 9, "id": 3}),
    ("create_bad_variant", "client", {"t": "create_room", "variant": "X"}),
    ("create_bad_time", "client", {"t": "create_room", "time_limit": 29}),
    ("join_lower_room", "client", {"t": "join", "room": "k7pq2x", "extra": 1}),
    ("join_bad_as", "client", {"t": "join", "room": "K7PQ2X", "as": "host"}),
    ("join_no_room", "client", {"t": "join"}),
    ("ready_missing", "client", {"t": "ready", "room": "K7PQ2X"}),
    ("act_bool_seq", "client", {"t": "act", "room": "K7PQ2X", "seq": True, "action": "u"}),
    ("act_seq_zero", "client", {"t": "act", "room": "K7PQ2X", "seq": 0, "action": "u"}),
    ("act_long_action", "client", {"t": "act", "room": "K7PQ2X", "seq": 1, "action": "x" * 33}),
    ("act_bad_id", "client", {"t": "act", "room": "K7PQ2X", "seq": 1, "action": "u", "id": -1}),
    ("sync_no_since", "client", {"t": "sync", "room": "K7PQ2X"}),
    ("unknown_type", "client", {"t": "dance", "id": 4}),
    ("daily_start_null", "client", {"t": "daily_start", "practice": None, "day": None}),
    ("daily_start_bad_day", "client", {"t": "daily_start", "day": "2026-1-1"}),
    ("daily_board_nulls", "client", {"t": "daily_board", "top": None, "around": None}),
    ("daily_board_bad_late", "client", {"t": "daily_board", "late": 1}),
    ("daily_days_limit", "client", {"t": "daily_days", "limit": 31}),
    (
        "t_create_norm",
        "client",
        {
            "t": "t_create",
            "name": " A \t b ",
            "rounds": 1,
            "time_limit": 30,
            "max_players": 2,
            "variant": "o",
        },
    ),
    ("t_join_lower", "client", {"t": "t_join", "tournament": "tk7pq2x"}),
    ("t_join_bad_as", "client", {"t": "t_join", "tournament": "T", "as": "racer"}),
    ("t_host_remove_no_player", "client", {"t": "t_host", "tournament": "T", "op": "remove"}),
    ("t_results_round", "client", {"t": "t_results", "tournament": "T", "round": 21}),
    ("replay_no_game", "client", {"t": "replay", "id": 1}),
    ("replay_long_game", "client", {"t": "replay", "game": "G" * 65}),
    ("not_a_map", "client", [1, 2]),
    ("no_type", "client", {"room": "K7PQ2X"}),
    ("ack_minimal", "server", {"t": "ack", "room": "K7PQ2X", "seq": 1}),
    ("refused_minimal", "server", {"t": "refused", "room": "K7PQ2X", "seq": 1, "code": "c"}),
    ("error_minimal", "server", {"t": "error", "code": "c", "id": 5}),
    (
        "welcome_minimal",
        "server",
        {"t": "welcome", "version": 1, "player": {}, "token": "t", "server_time": 0},
    ),
    ("room_minimal", "server", {"t": "room", "room": {"code": "K"}}),
    ("events_minimal", "server", {"t": "events"}),
    ("event_extra", "server", {"t": "event", "room": "K", "ver": 1, "kind": "k", "a": [1]}),
    ("hint_minimal", "server", {"t": "hint", "room": "K"}),
    (
        "winnable_minimal",
        "server",
        {"t": "winnable", "room": "K", "code": "c", "result": "won", "line": ["a"]},
    ),
    ("daily_board_reply", "server", {"t": "daily_board", "day": "d", "id": 3}),
    ("replay_minimal", "server", {"t": "replay", "game": "G-1"}),
    ("tournament_minimal", "server", {"t": "tournament", "tournament": {}}),
    ("t_live_minimal", "server", {"t": "t_live", "tournament": "T", "round": 1}),
    ("t_results_minimal", "server", {"t": "t_results", "tournament": "T", "round": 1}),
    ("t_standings_minimal", "server", {"t": "t_standings", "tournament": "T"}),
    ("server_unknown", "server", {"t": "dance"}),
    ("decode_act_ok", "act", {"t": "act", "room": "k7pq2x", "seq": 3, "action": "redeal", "id": 1}),
    ("decode_act_seq_zero", "act", {"t": "act", "room": "K7PQ2X", "seq": 0, "action": "u"}),
    ("decode_act_ping", "act", {"t": "ping"}),
]

DECODERS: dict[str, Callable[[bytes], object]] = {
    "client": p.decode_client,
    "server": p.decode_server,
    "act": server_frames.decode_act,
}


def _outcome(decoder: str, obj: Any) -> str:
    try:
        return repr(DECODERS[decoder](msgpack.packb(obj, use_bin_type=True)))
    except ProtocolError as err:
        return f"ProtocolError({err.code!r}, {err.message!r}, msg_id={err.msg_id!r})"


def _current() -> dict[str, dict[str, str]]:
    return {
        "client": {name: p.encode_client(msg).hex() for name, msg in CLIENT},
        "server": {name: p.encode(msg).hex() for name, msg in SERVER},
        "server_only": {name: frame.hex() for name, frame in _server_only()},
        "decoded": {name: _outcome(decoder, obj) for name, decoder, obj in RAW},
    }


def _golden() -> dict[str, dict[str, str]]:
    if WRITE:
        GOLDEN.write_text(json.dumps(_current(), indent=1, sort_keys=True) + "\n")
    loaded: dict[str, dict[str, str]] = json.loads(GOLDEN.read_text())
    return loaded


@pytest.mark.parametrize("section", ["client", "server", "server_only", "decoded"])
def test_frames_match_the_golden_file(section: str) -> None:
    golden, current = _golden()[section], _current()[section]
    assert set(current) == set(golden)
    for name in golden:
        assert current[name] == golden[name], name


@pytest.mark.parametrize(("name", "msg"), CLIENT, ids=[n for n, _ in CLIENT])
def test_golden_requests_decode_to_their_message(name: str, msg: Any) -> None:
    frame = bytes.fromhex(_golden()["client"][name])
    assert p.decode_client(frame) == msg


@pytest.mark.parametrize(("name", "msg"), SERVER, ids=[n for n, _ in SERVER])
def test_golden_replies_decode_to_their_message(name: str, msg: Any) -> None:
    frame = bytes.fromhex(_golden()["server"][name])
    assert p.decode_server(frame) == msg


def test_server_only_frames_equal_the_plain_encoder() -> None:
    """The pre-packed encoders give ``encode``'s bytes for the same message."""
    frames = {name: bytes.fromhex(h) for name, h in _golden()["server_only"].items()}
    server = {name: bytes.fromhex(h) for name, h in _golden()["server"].items()}
    assert frames["encode_ack_id"] == server["ack"]
    assert frames["encode_ack_dup"] == p.encode(p.Ack("K7PQ2X", 3, VIEW, duplicate=True))
    assert frames["encode_t_live_you"] == p.encode(p.TLive("TK7PQ2X", 2, (LIVE,), LIVE, 150, 50))
    assert frames["encode_t_live_none"] == p.encode(p.TLive("TK7PQ2X", 2, (LIVE,), None, 150, 50))
    assert frames["encode_tournament"] == server["tournament_push"]
    assert frames["encode_tournament_id"] == p.encode(
        p.TournamentSnapshot(tournament=T_SNAPSHOT, you={"role": "x"}, id=14)
    )


def test_every_message_class_has_a_golden_frame() -> None:
    declared = {
        obj for obj in vars(p).values() if isinstance(obj, type) and dataclasses.is_dataclass(obj)
    }
    covered = {type(msg) for _, msg in CLIENT + SERVER}
    assert declared == covered


@pytest.mark.parametrize(("name", "msg"), SERVER, ids=[n for n, _ in SERVER])
def test_encode_client_refuses_server_messages(name: str, msg: Any) -> None:
    with pytest.raises(TypeError):
        p.encode_client(msg)
