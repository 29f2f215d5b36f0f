"""Property-based fuzzing of the request schema over a real WebSocket to a real server
process (real Redis): every message type of crescent_wire.protocol with each field in
turn given a value of a wrong type or range, and raw frames. Every reply must be an
``error`` whose code is in docs/protocol.md's errors table (the one the codec predicts),
carrying the request's id when it had a valid one, and the watched room must not
change."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from crescent_wire import protocol as p
from crescent_wire.errors import ERROR_MESSAGES, ProtocolError
from tests.support import REPO_ROOT, ServerProcess, start_server_process

CLIENT_TYPES = (
    p.Hello,
    p.CreateRoom,
    p.Join,
    p.Leave,
    p.Ready,
    p.Start,
    p.Act,
    p.Sync,
    p.Rematch,
    p.Ping,
)


def documented_error_codes() -> set[str]:
    text = (REPO_ROOT / "docs" / "protocol.md").read_text()
    table = text.split("## Errors", 1)[1].split("Refused actions", 1)[0]
    return {
        code
        for row in table.splitlines()
        if row.startswith("| `")
        for code in re.findall(r"`([a-z_]+)`", row.split("|")[1])
    }


def test_error_table_matches_the_code() -> None:
    assert documented_error_codes() == set(ERROR_MESSAGES)


MSGPACK_INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
WRONG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    MSGPACK_INTS,
    st.floats(allow_nan=True),
    st.text(max_size=300),
    st.binary(max_size=64),
    st.lists(MSGPACK_INTS, max_size=20),
    st.dictionaries(st.text(max_size=5), MSGPACK_INTS, max_size=3),
)


@st.composite
def mutated_requests(draw: st.DrawFn, code: str) -> dict[str, Any]:
    """A valid request of some type for room ``code``, one field replaced or removed."""
    cls = draw(st.sampled_from(CLIENT_TYPES))
    kwargs: dict[str, Any] = {}
    names = [f.name for f in dataclasses.fields(cls)]
    if "room" in names:
        kwargs["room"] = code
    if cls is p.Act:
        kwargs.update(seq=1, action="undo")
    wire = cls(**kwargs).to_wire()
    wire["id"] = draw(st.integers(0, p.MAX_ID))
    key = draw(st.sampled_from([*sorted(k for k in wire if k != "t"), "t"]))
    if draw(st.booleans()) and key != "t":
        del wire[key]
    else:
        wire[key] = draw(WRONG_VALUES)
    return dict(wire)


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[ServerProcess]:
    from tests.support import delete_prefix, random_prefix, require_redis

    redis_url = require_redis()
    prefix = random_prefix("fuzz")
    env = {
        "CRESCENT_RATE_PER_S": "100000",
        "CRESCENT_RATE_BURST": "100000",
        "CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN": "0",
    }
    try:
        with start_server_process(prefix, extra_env=env) as server:
            yield server
    finally:
        delete_prefix(prefix, redis_url)


def _call(ws: ClientConnection, frame: bytes) -> dict[str, Any]:
    ws.send(frame)
    while True:
        reply = msgpack.unpackb(ws.recv(timeout=10))
        if reply.get("t") not in ("event", "progress"):
            return dict(reply)


def _room_ver(ws: ClientConnection, code: str) -> tuple[int, str, int]:
    reply = _call(ws, p.encode_client(p.Join(room=code, id=1)))
    assert reply["t"] == "room"
    room = reply["room"]
    return room["ver"], room["phase"], len(room["players"])


def _check(ws: ClientConnection, frame: bytes, documented: set[str]) -> None:
    try:
        p.decode_client(frame)
    except ProtocolError as err:
        expected: ProtocolError | None = err
    else:
        expected = None  # the mutation happened to be valid: not a wrong value
    if expected is None:
        return
    reply = _call(ws, frame)
    assert reply["t"] == "error", reply
    assert reply["code"] in documented
    assert reply["code"] == expected.code, (reply, expected)
    assert reply.get("id") == expected.msg_id


@pytest.fixture(scope="module")
def sockets(fuzz_server: ServerProcess) -> Iterator[tuple[ClientConnection, ClientConnection, str]]:
    url = f"ws://127.0.0.1:{fuzz_server.port}/ws"
    with connect(url) as host, connect(url) as fuzzer:
        _call(host, p.encode_client(p.Hello(name="Host", id=1)))
        code = _call(host, p.encode_client(p.CreateRoom(seats=2, id=2)))["room"]["code"]
        _call(fuzzer, p.encode_client(p.Hello(name="Fuzz", id=1)))
        _call(fuzzer, p.encode_client(p.Join(room=code, as_="spectator", id=2)))
        yield host, fuzzer, code


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_wrong_fields_get_documented_errors(
    sockets: tuple[ClientConnection, ClientConnection, str], data: st.DataObject
) -> None:
    host, fuzzer, code = sockets
    before = _room_ver(host, code)
    wire = data.draw(mutated_requests(code))
    _check(fuzzer, msgpack.packb(wire), documented_error_codes())
    assert _room_ver(host, code) == before


RAW_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | MSGPACK_INTS
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.floats(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["t", "id", "room", "seq", "x"]) | st.text(max_size=4),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=st.binary(min_size=0, max_size=200) | RAW_VALUES.map(msgpack.packb))
def test_raw_frames_get_documented_errors(
    sockets: tuple[ClientConnection, ClientConnection, str], frame: bytes
) -> None:
    host, fuzzer, code = sockets
    before = _room_ver(host, code)
    _check(fuzzer, frame, documented_error_codes())
    assert _room_ver(host, code) == before
