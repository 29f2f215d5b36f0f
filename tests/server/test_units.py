"""Pure units: the codec, the room transitions, the race and ranking (no Redis, no sockets)."""

from __future__ import annotations

import doctest
import importlib

import msgpack
import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import AuthError, ProtocolError, RoomError, ServerError
from server import compiled
from server.auth import Player, TokenSigner
from server.core import wire_server
from server.core.room_codes import is_room_code, new_room_code
from server.core.view_codec import ViewEncoder, encode_view
from server.game import Game
from server.lobby import Member, RacerGame, RacerProgress, ResultRow, Room, rank
from server.lobby.race import race_over, wire_progress


@pytest.mark.parametrize(
    "module",
    [
        "crescent_wire.codec",
        "crescent_wire.message",
        "crescent_wire.errors",
        "server.auth",
        "server.lobby.room",
        "server.lobby.room_state",
        "server.lobby.race",
        "server.game.board",
        "server.game.engine",
        "server.core.messages",
        "server.core.wire_server",
        "server.config",
    ],
)
def test_doctests(module: str) -> None:
    if compiled.active() and module in compiled.MODULES:
        pytest.skip("compiled (no docstrings): scripts/test runs it with CRESCENT_COMPILED=off")
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------- protocol

CLIENT_MESSAGES = [
    p.Hello(versions=(1,), token="tok", name="Ada", id=1),
    p.CreateRoom(variant="O", deal="CR1-O-AAAAAAC", seats=8, time_limit=30, id=2),
    p.CreateRoom(),
    p.Join(room="K7PQ2X", as_="spectator", id=3),
    p.Leave(room="K7PQ2X"),
    p.Ready(room="K7PQ2X", ready=False, id=0),
    p.Start(room="K7PQ2X"),
    p.Act(room="K7PQ2X", seq=2**31, action="redeal"),
    p.Sync(room="K7PQ2X", since=12),
    p.Rematch(room="K7PQ2X"),
    p.Ping(id=2**31),
    p.Hint(room="K7PQ2X", id=6),
    p.Winnable(room="K7PQ2X"),
]


@pytest.mark.parametrize("msg", CLIENT_MESSAGES, ids=lambda m: type(m).__name__)
def test_client_messages_round_trip(msg: p.ClientMessage) -> None:
    assert p.decode_client(p.encode_client(msg)) == msg


SERVER_MESSAGES = [
    p.Welcome(version=1, player={"id": "a", "name": "Ada"}, token="t", server_time=5, id=1),
    p.RoomSnapshot(room={"code": "K7PQ2X"}, you={"role": None, "game": None, "last_seq": 0}),
    p.Event(room="K7PQ2X", ver=3, kind="ready", data={"player": "a", "ready": True}),
    p.Events(
        room="K7PQ2X",
        events=(p.Event(room="K7PQ2X", ver=4, kind="left", data={"player": "b"}),),
        id=9,
    ),
    p.Progress(room="K7PQ2X", round=1, racers=({"player": "a", "moves": 1},)),
    p.Ack(room="K7PQ2X", seq=1, view={"moves": 1}, duplicate=True, id=4),
    p.Refused(room="K7PQ2X", seq=1, code="wrong_suit", message="m", message_sv="s", id=4),
    p.Ok(id=5),
    p.Pong(server_time=7),
    p.Error(code="rate_limited", message="slow down"),
    p.HintReply(room="K7PQ2X", action="p3-ad", finishing=True, source="solver", id=6),
    p.HintReply(room="K7PQ2X", action=None, finishing=False, source="heuristic"),
    p.WinnableReply(
        room="K7PQ2X",
        code="CR1-N-IPGYBDG",
        result="won",
        line=("p1-as",),
        nodes=12,
        seconds=0.5,
        id=7,
    ),
    p.WinnableReply(
        room="K7PQ2X", code="CR1-N-IPGYBDG", result="unknown", line=None, nodes=9, seconds=10.0
    ),
]


@pytest.mark.parametrize("msg", SERVER_MESSAGES, ids=lambda m: type(m).__name__)
def test_server_messages_round_trip(msg: p.ServerMessage) -> None:
    assert p.decode_server(p.encode(msg)) == msg


def test_event_fields_are_flat_on_the_wire() -> None:
    wire = msgpack.unpackb(
        p.encode(
            p.Event(room="R", ver=2, kind="connected", data={"player": "a", "connected": False})
        )
    )
    assert wire == {
        "t": "event",
        "room": "R",
        "ver": 2,
        "kind": "connected",
        "player": "a",
        "connected": False,
    }


def test_encode_client_refuses_server_messages() -> None:
    with pytest.raises(TypeError):
        p.encode_client(p.Ok())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "obj, code",
    [
        ({"t": "hello", "versions": []}, "bad_field"),
        ({"t": "hello", "versions": [1, "2"]}, "bad_field"),
        ({"t": "hello", "versions": [1], "token": 5}, "bad_field"),
        ({"t": "join", "room": ""}, "bad_field"),
        ({"t": "join"}, "bad_field"),
        ({"t": "act", "room": "A", "seq": 2**31 + 1, "action": "undo"}, "bad_field"),
        ({"t": "act", "room": "A", "seq": 1, "action": "x" * 33}, "bad_field"),
        ({"t": "ready", "room": "A", "ready": 1}, "bad_field"),
        ({"t": "ping", "id": True}, "bad_field"),
        ({"t": "nope"}, "unknown_type"),
        ({"type": "ping"}, "bad_message"),
    ],
)
def test_decode_client_errors(obj: dict[str, object], code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        p.decode_client(msgpack.packb(obj))
    assert info.value.code == code


def test_decoder_normalises_codes_and_defaults() -> None:
    assert p.decode_client(msgpack.packb({"t": "join", "room": "k7pq2x"})) == p.Join("K7PQ2X")
    created = p.decode_client(
        msgpack.packb({"t": "create_room", "variant": "r", "seats": None, "future_field": [1]})
    )
    assert created == p.CreateRoom(variant="R")


def test_error_tree() -> None:
    assert isinstance(RoomError("room_full"), ServerError)
    with pytest.raises(ValueError):
        RoomError("bad_token")  # a code of another family
    with pytest.raises(AuthError) as info:
        TokenSigner("a").verify("garbage")
    assert info.value.code == "bad_token"
    player = Player.new(None)
    assert player.name.startswith("Guest-")


# ---------------------------------------------------------------- rooms


def new_room(seats: int = 3, time_limit: int | None = None) -> Room:
    return Room.create(
        "K7PQ2X",
        host=Member("h", "Host"),
        variant="N",
        deal="CR1-N-AAAAAAB",
        deal_public=False,
        seats=seats,
        time_limit=time_limit,
        now=0,
        countdown_ms=1000,
    )


def test_room_codes() -> None:
    code = new_room_code()
    assert is_room_code(code) and not is_room_code("ABC0O1") and not is_room_code("ABCDEFG")


def test_join_seats_and_versions() -> None:
    room = new_room(seats=2)
    t = room.join(Member("b", "B"), as_spectator=False, now=1)
    assert t.room.ver == 1 and [m.id for m in t.room.racers] == ["h", "b"]
    with pytest.raises(RoomError) as info:
        t.room.join(Member("c", "C"), as_spectator=False, now=2)
    assert info.value.code == "room_full"
    spectator = t.room.join(Member("c", "C"), as_spectator=True, now=2)
    assert spectator.room.member("c").role == "spectator"  # type: ignore[union-attr]
    assert not t.room.join(Member("b", "B"), as_spectator=False, now=3).changed


def test_start_countdown_deadline_and_phases() -> None:
    room = new_room(time_limit=60).join(Member("b", "B"), as_spectator=False, now=1).room
    with pytest.raises(RoomError, match="not_started"):
        room.check_can_act("b", 5)  # a racer before the start, not a wrong role
    spectating = room.join(Member("s", "S"), as_spectator=True, now=2).room
    with pytest.raises(RoomError, match="not_racer"):
        spectating.check_can_act("s", 5)
    with pytest.raises(RoomError) as info:
        room.start("b", now=5)
    assert info.value.code == "not_host"
    t = room.start("h", now=100)
    r = t.room
    assert (r.phase, r.start_at, r.deadline) == ("countdown", 1100, 61100)
    assert r.entrants == (("h", "Host"), ("b", "B"))
    assert r.phase_at(1099) == "countdown" and r.phase_at(1100) == "racing"
    with pytest.raises(RoomError, match="not_started"):
        r.check_can_act("b", 1099)
    r.check_can_act("b", 1100)
    with pytest.raises(RoomError, match="race_over"):
        r.check_can_act("b", 61100)
    with pytest.raises(RoomError, match="not_in_room"):
        r.check_can_act("zz", 2000)


def test_leave_host_change_and_rematch() -> None:
    room = new_room().join(Member("b", "B"), as_spectator=False, now=1).room
    t = room.leave("h", now=2)
    assert [e.kind for e in t.events] == ["left", "host"] and t.room.host == "b"
    assert [e.ver for e in t.events] == [2, 3]
    r = t.room.start("b", now=3).room
    done = r.finish([ResultRow(1, "a", "A", "won", 1000, 10, 104)], now=5000).room
    assert done.phase == "finished" and done.public_dict("x", 6000)["deal"] == "CR1-N-AAAAAAB"
    assert r.public_dict("b", 4000)["deal"] is None  # not before the end
    again = done.rematch("b", "CR1-N-AAAAAAC", now=7000)
    assert again.room.round == 2 and again.room.phase == "waiting"
    assert again.room.deal == "CR1-N-AAAAAAC" and again.room.results is None


def test_record_round_trip() -> None:
    room = new_room(time_limit=30).join(Member("b", "B"), as_spectator=False, now=1).room
    room = room.start("h", now=5).room
    assert Room.from_record(msgpack.unpackb(msgpack.packb(room.to_record()))) == room


# ---------------------------------------------------------------- race


def test_racer_game_resign_and_replay() -> None:
    racer = RacerGame.new("CR1-F-AAAAAAB")
    assert racer.initial_redeals == 4
    move = str(next(Game.from_code("CR1-F-AAAAAAB").legal_moves()))
    assert racer.apply(move, elapsed_ms=10) is None
    refusal = racer.apply("p1-p1", elapsed_ms=11)
    assert refusal is not None and refusal.code == "same_place"
    assert racer.apply("redeal", elapsed_ms=12) is None
    assert racer.apply("resign", elapsed_ms=20) is None
    assert racer.status == "resigned" and racer.finished_ms == 20
    assert racer.view().status == "resigned"
    again = racer.apply("undo", elapsed_ms=30)
    assert again is not None and again.code == "game_over"
    rebuilt = RacerGame.from_log(
        "CR1-F-AAAAAAB", [move, "redeal", "resign"], last_seq=3, finished_ms=20
    )
    assert rebuilt.view() == racer.view() and rebuilt.log_len == 3
    progress = rebuilt.progress("a", now=99)
    assert progress.redeals_used == 1 and progress.moves == 1
    assert wire_progress(progress, connected=False)["status"] == "resigned"
    assert "at" not in wire_progress(progress, connected=True)


def test_ranking_rules() -> None:
    def prog(status: str, fms: int | None, moves: int, found: int, at: int) -> RacerProgress:
        return RacerProgress("p", moves, found, 0, status, fms, at)

    progress = {
        "slow_winner": prog("won", 900, 100, 104, 9),
        "fast_winner": prog("won", 800, 150, 104, 8),
        "tie_winner_more_moves": prog("won", 900, 120, 104, 9),
        "locked_many": prog("locked", 500, 50, 60, 5),
        "playing_many_later": prog("playing", None, 40, 60, 7),
        "playing_many_first": prog("playing", None, 40, 60, 6),
        "resigned_few": prog("resigned", 100, 5, 10, 1),
    }
    entrants = [(pid, pid.upper()) for pid in progress]
    table = rank(entrants, progress, start_at=0, now=1000)
    assert [r.player for r in table] == [
        "fast_winner",
        "slow_winner",
        "tie_winner_more_moves",
        "playing_many_first",
        "playing_many_later",
        "locked_many",
        "resigned_few",
    ]
    assert table[3].time_ms == 1000 and table[0].name == "FAST_WINNER"
    assert not race_over(progress.values())
    assert race_over([prog("won", 1, 1, 104, 1), prog("locked", 1, 1, 9, 1)])


@pytest.mark.parametrize(
    "deal", ["CR1-N-AAAAAAB", "CR1-F-AAAAAAC", "CR1-R-AAAAAAD", "CR1-O-AAAAAAE"]
)
def test_fast_view_encoding_is_byte_identical(deal: str) -> None:
    """The ack's cached VIEW encoding equals packb(view()) after every action of whole
    games (moves, undos, redeals, resign), and encode_ack equals encode(Ack)."""
    import random

    rng = random.Random(deal)
    racer = RacerGame.new(deal)
    encoder = ViewEncoder()
    checked = 0
    for step in range(400):
        moves = [str(m) for m in racer.game.legal_moves()]
        if racer.status != "playing" or step == 399:
            action = "resign"
        elif moves and rng.random() < 0.85:
            action = rng.choice(moves)
        elif racer.game.undo_left and rng.random() < 0.5:
            action = "undo"
        else:
            action = "redeal" if racer.game.redeals_left else rng.choice(moves or ["undo"])
        racer.apply(action, elapsed_ms=step)
        if rng.random() < 0.3:  # an illegal action changes nothing, its encoding neither
            racer.apply(rng.choice(["p1-p1", "undo", "as-p1", "p16-dd"]), elapsed_ms=step)
        view = racer.view().to_wire()
        if step % 3 == 1:  # the cached encoding catches up over several actions too
            continue
        assert encoder.encode(racer) == msgpack.packb(view, use_bin_type=True), action
        dup = step % 2 == 0
        msg_id = step if step % 3 else None
        assert wire_server.encode_ack(
            "K7PQ2X", step + 1, encoder.encode(racer), duplicate=dup, msg_id=msg_id
        ) == p.encode(p.Ack(room="K7PQ2X", seq=step + 1, view=view, duplicate=dup, id=msg_id))
        checked += 1
        if racer.status in ("won", "locked", "resigned"):
            break
    assert checked > 5
    assert encoder.encode(racer) == msgpack.packb(racer.view().to_wire(), use_bin_type=True)
    assert encode_view(racer.game, resigned=racer.resigned) == encoder.encode(racer)
    rebuilt = RacerGame.new(deal)  # a rebuilt game (new object) is encoded afresh
    assert encoder.encode(rebuilt) == msgpack.packb(rebuilt.view().to_wire(), use_bin_type=True)
