"""The client's sans-I/O session (``crescent_client.session``): bytes in, events out.

No socket and no event loop: every request is the frame the session returns, every
server message the frame the server's codec would send.
"""

from __future__ import annotations

import doctest
from typing import Any

import msgpack
import pytest

import crescent_client.session
from crescent_client.errors import NotInRoom, RequestFailed
from crescent_client.session import (
    ActReply,
    ClientSession,
    GapFound,
    Pushed,
    Reply,
    reply_or_raise,
)
from crescent_wire.protocol import (
    Ack,
    Act,
    Error,
    Event,
    Events,
    Hello,
    Join,
    Ok,
    Ping,
    Pong,
    Progress,
    Refused,
    RoomSnapshot,
    TournamentSnapshot,
    Welcome,
    decode_client,
    encode,
    encode_client,
)

CODE = "K7PQ2X"


def room(ver: int = 3, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "code": CODE,
        "ver": ver,
        "phase": "racing",
        "round": 1,
        "host": "p1",
        "players": [{"id": "p1", "name": "Ada", "role": "racer"}],
    }
    data.update(fields)
    return data


def joined(session: ClientSession, last_seq: int = 0, ver: int = 3) -> None:
    """The session in room CODE as a racer whose highest stored ``seq`` is ``last_seq``."""
    you = {"role": "racer", "game": {"piles": []}, "last_seq": last_seq}
    session.adopt_snapshot(RoomSnapshot(room=room(ver), you=you))


def test_the_module_examples() -> None:
    assert doctest.testmod(crescent_client.session).failed == 0


def test_hello_then_welcome_sets_the_player_the_token_and_the_clock() -> None:
    session = ClientSession(name="Ada")
    first = session.hello()
    assert session.send(first) == encode_client(Hello(token=None, name="Ada", id=1))
    welcome = Welcome(
        version=1, player={"id": "p1", "name": "Ada"}, token="tok", server_time=5_000, id=1
    )
    [reply] = session.receive(encode(welcome))
    assert isinstance(reply, Reply) and reply.id == 1
    limits = session.welcome(reply.result(), now_ms=4_000)
    assert session.player == {"id": "p1", "name": "Ada"} and session.token == "tok"
    assert session.clock_offset_ms == 1_000 and limits["rate_per_s"] > 0
    # The next connection's hello carries the token: the same player.
    again = decode_client(session.send(session.hello()))
    assert isinstance(again, Hello) and again.token == "tok" and again.id == 2
    # A ping's round trip: the server's time is taken to be the middle of it.
    session.pong(server_time=10_000, sent_ms=8_000, received_ms=8_100)
    assert session.clock_offset_ms == 10_000 - 8_050


def test_replies_are_matched_by_id_in_any_order() -> None:
    session = ClientSession()
    ping_id, join_id = session.next_id(), session.next_id()
    session.send(Ping(id=ping_id))
    session.send(Join(room=CODE, id=join_id))
    snapshot = RoomSnapshot(room=room(), you={"role": "racer"}, id=join_id)
    assert session.receive(encode(snapshot)) == [Reply(join_id, snapshot)]
    assert session.receive(encode(Pong(server_time=1, id=ping_id))) == [
        Reply(ping_id, Pong(server_time=1, id=ping_id))
    ]
    # Each request has one reply: a second one with the same id is no reply.
    assert session.receive(encode(Pong(server_time=2, id=ping_id))) == []


def test_a_reply_to_an_unknown_id_resolves_nothing() -> None:
    session = ClientSession()
    session.send(Ping(id=session.next_id()))
    assert session.receive(encode(Ok(id=99))) == []
    # An error nobody waits for is a push for the event stream, as without an id.
    stray = Error(code="rate_limited", message="slow down", id=99)
    assert session.receive(encode(stray)) == [Pushed(stray)]
    forgotten = session.next_id()
    session.send(Ping(id=forgotten))
    session.forget(forgotten)  # timed out: a late reply is not one any more
    assert session.receive(encode(Pong(server_time=1, id=forgotten))) == []


def test_an_error_reply_raises_the_documented_exception() -> None:
    session = ClientSession()
    msg_id = session.next_id()
    session.send(Join(room="ZZZZZZ", id=msg_id))
    [reply] = session.receive(
        encode(Error(code="room_not_found", message="no such room", id=msg_id))
    )
    assert isinstance(reply, Reply)
    with pytest.raises(RequestFailed) as failed:
        reply.result()
    assert failed.value.code == "room_not_found" and failed.value.message == "no such room"
    assert reply_or_raise(Ok(id=1)) == Ok(id=1)


def test_actions_are_numbered_from_the_stored_seq() -> None:
    session = ClientSession()
    joined(session, last_seq=4)
    pending, frame = session.begin_act(CODE.lower(), "p10-p14")
    assert frame == encode_client(Act(room=CODE, seq=5, action="p10-p14", id=1))
    assert (pending.room, pending.seq, pending.id) == (CODE, 5, 1)
    # A refused action leaves its seq free for the next one.
    refused = Refused(room=CODE, seq=5, code="wrong_suit", message="m", message_sv="m", id=1)
    [answer] = session.receive(encode(refused))
    assert answer == ActReply(pending, refused)
    assert session.act_result(pending, answer.message) == refused
    session.end_act(pending)
    pending, _ = session.begin_act(CODE, "redeal")
    assert pending.seq == 5 and pending.id == 2
    # An ack moves the seq and the VIEW on.
    ack = Ack(room=CODE, seq=5, view={"redeals": 1}, id=2)
    [answer] = session.receive(encode(ack))
    assert isinstance(answer, ActReply) and answer.act == pending
    session.act_result(pending, answer.message)
    session.end_act(pending)
    state = session.room()
    assert state.last_seq == 5 and state.view == {"redeals": 1}
    assert session.begin_act(CODE, "undo")[0].seq == 6


def test_an_ack_nobody_waits_for_changes_nothing() -> None:
    session = ClientSession()
    joined(session, last_seq=2)
    assert session.receive(encode(Ack(room=CODE, seq=9, view={"x": 1}))) == []
    assert session.room().last_seq == 2 and session.room().view == {"piles": []}


def test_an_error_for_an_action_is_its_reply_and_raises() -> None:
    session = ClientSession()
    joined(session)
    pending, _ = session.begin_act(CODE, "p1-p2")
    error = Error(code="race_over", message="the race is over", id=pending.id)
    [reply] = session.receive(encode(error))
    assert reply == Reply(pending.id, error)
    with pytest.raises(RequestFailed) as failed:
        session.act_result(pending, reply.message)
    assert failed.value.code == "race_over" and session.room().last_seq == 0


def test_actions_not_acknowledged_are_resent_as_they_were_sent() -> None:
    session = ClientSession()
    joined(session)
    for code in ("AAAAAA", "BBBBBB"):
        you = {"role": "racer", "last_seq": 7}
        session.adopt_snapshot(RoomSnapshot(room=room(code=code), you=you))
    late, late_frame = session.begin_act(CODE, "p1-p2")
    answered, _ = session.begin_act("BBBBBB", "undo")
    early, early_frame = session.begin_act("AAAAAA", "redeal")
    session.receive(encode(Ack(room="BBBBBB", seq=8, view=None, id=answered.id)))
    assert session.act_ids() == {late.id, early.id}
    resend = session.acts_to_resend()
    assert [(p.room, p.seq) for p in resend] == [("AAAAAA", 8), (CODE, 1)]
    assert [p.frame() for p in resend] == [early_frame, late_frame]


def test_resume_rejoins_with_the_role_and_resubscribes_tournaments() -> None:
    session = ClientSession()
    session.adopt_snapshot(RoomSnapshot(room=room(), you={"role": "spectator"}))
    for code, subscribed in (("TAAAAAA", "host"), ("TBBBBBB", "player"), ("TCCCCCC", None)):
        t = {"code": code, "ver": 1, "phase": "registration", "round": 0, "rounds": 2}
        state = session.adopt_tournament(TournamentSnapshot(tournament=t, you={"role": "x"}))
        state.subscribed_as = subscribed
    assert session.room(CODE).role == "spectator"
    # The host who is not a player subscribes again as a spectator; t_get is no subscription.
    assert session.subscriptions() == [("TAAAAAA", "spectator"), ("TBBBBBB", "player")]


def test_a_version_gap_asks_for_one_sync_at_a_time() -> None:
    session = ClientSession()
    joined(session, ver=3)
    applied = Event(room=CODE, ver=4, kind="host", data={"player": "p1"})
    assert session.receive(encode(applied)) == [Pushed(applied)]
    gap = Event(room=CODE, ver=6, kind="host", data={"player": "p1"})
    assert session.receive(encode(gap)) == [GapFound(CODE), Pushed(gap)]
    further = Event(room=CODE, ver=7, kind="host", data={"player": "p1"})
    assert session.receive(encode(further)) == [Pushed(further)]  # a sync is under way
    missed = Events(room=CODE, events=(Event(room=CODE, ver=5, kind="x"), gap))
    session.adopt_sync(session.room(), missed)
    assert session.room().ver == 6 and not session.gap_filled(CODE)  # 7 is still missing
    session.adopt_sync(session.room(), Events(room=CODE, events=(further,)))
    assert session.gap_filled(CODE)
    session.synced(CODE)
    later = Event(room=CODE, ver=9, kind="x")
    assert session.receive(encode(later)) == [GapFound(CODE), Pushed(later)]


def test_pushes_update_the_state_and_are_counted() -> None:
    session = ClientSession()
    joined(session)
    progress = Progress(room=CODE, round=1, racers=({"player": "p1", "moves": 3},))
    assert session.receive(encode(progress)) == [Pushed(progress)]
    assert session.room().progress["p1"]["moves"] == 3
    assert session.receive("text frame") == []
    unknown = msgpack.packb({"t": "from_the_future", "x": 1})
    assert session.receive(unknown) == []
    assert session.frames_received == 3
    assert session.bytes_received == len(encode(progress)) + len("text frame") + len(unknown)
    assert session.received_types == {"Progress": 1}


def test_rooms_and_tournaments_must_be_named_when_ambiguous() -> None:
    session = ClientSession()
    with pytest.raises(NotInRoom):
        session.room()
    joined(session)
    assert session.room().code == CODE and session.room(CODE.lower()).code == CODE
    with pytest.raises(NotInRoom):
        session.room("ZZZZZZ")
    with pytest.raises(NotInRoom):
        session.tournament_code(None)
    assert session.tournament_code("tabcdef") == "TABCDEF"
    session.forget_room(CODE.lower())
    assert session.rooms == {}
