"""The server's own side of the wire: frames packed from parts packed once, and the
act request decoded in a few checks. Only the server sends these frames and only it
decodes requests on the act path, so they live here, not in the wire package every
client installs; each gives exactly the bytes (or the message) of crescent_wire's
plain codec for the same message, which tests/wire's golden frames and
tests/server/test_units.py, test_fast_path.py and tests/tournament/test_wire.py check.
"""

from __future__ import annotations

from typing import Any

import msgpack

from crescent_wire.codec import pack
from crescent_wire.limits import MAX_ACTION_LENGTH, MAX_ID, MAX_ROOM_FIELD
from crescent_wire.protocol import Act

# The keys of the frames below, packed once (msgpack maps: a head byte with the number
# of pairs, then key, value, key, value... in the order the plain codec writes them).
_ACK_HEAD = b"".join(pack(k) for k in ("t", "ack", "room"))
_ACK_SEQ = pack("seq")
_ACK_VIEW = pack("view")
_ACK_DUPLICATE = (pack("duplicate") + pack(False), pack("duplicate") + pack(True))
_ID = pack("id")
_YOU = pack("you")
_T_SNAPSHOT_HEAD = b"".join(pack(k) for k in ("t", "tournament", "tournament"))


def encode_ack(
    room: str, seq: int, view: bytes, *, duplicate: bool = False, msg_id: int | None = None
) -> bytes:
    """``encode(Ack(...))`` for a VIEW that is already msgpack: the same bytes, without
    building and packing the view's map again (the server's hottest reply).

    >>> from crescent_wire.protocol import Ack, encode
    >>> view = msgpack.packb({"moves": 1})
    >>> encode_ack("K7PQ2X", 3, view, msg_id=9) == encode(
    ...     Ack(room="K7PQ2X", seq=3, view={"moves": 1}, id=9))
    True
    """
    return b"".join(
        (
            b"\x86" if msg_id is not None else b"\x85",
            _ACK_HEAD,
            pack(room),
            _ACK_SEQ,
            pack(seq),
            _ACK_VIEW,
            view,
            _ACK_DUPLICATE[duplicate],
            b"" if msg_id is None else _ID + pack(msg_id),
        )
    )


_unpackb = msgpack.unpackb  # raw=False, strict_map_key=True, use_list=True: as unpack_map


def decode_act(data: bytes | bytearray | memoryview) -> Act | None:
    """``decode_client`` for the hottest request, in a few checks: the ``Act`` if the
    frame is a well-formed ``act`` (the same one ``decode_client`` returns), else None
    (``decode_client`` then names what is wrong).

    >>> decode_act(msgpack.packb({"t": "act", "room": "k7pq2x", "seq": 3, "action": "redeal"}))
    Act(room='K7PQ2X', seq=3, action='redeal', id=None)
    >>> decode_act(msgpack.packb({"t": "act", "room": "K7PQ2X", "seq": 0, "action": "undo"}))
    """
    try:
        obj = _unpackb(data)
    except Exception:
        return None
    if type(obj) is not dict or obj.get("t") != "act":
        return None
    room, seq, action, msg_id = obj.get("room"), obj.get("seq"), obj.get("action"), obj.get("id")
    if (
        type(room) is not str
        or not 0 < len(room) <= MAX_ROOM_FIELD
        or type(seq) is not int
        or not 1 <= seq <= MAX_ID
        or type(action) is not str
        or not 0 < len(action) <= MAX_ACTION_LENGTH
        or (msg_id is not None and (type(msg_id) is not int or not 0 <= msg_id <= MAX_ID))
    ):
        return None
    return Act(room=room.upper(), seq=seq, action=action, id=msg_id)


def t_live_shared(
    tournament: str, round: int, top: tuple[dict[str, Any], ...], racing: int, finished: int
) -> bytes:
    """The part of a ``t_live`` frame every recipient shares, packed once per tick;
    ``encode_t_live`` adds one recipient's ``you`` (``TLive`` writes it last).

    >>> from crescent_wire.protocol import TLive, encode
    >>> shared = t_live_shared("TK7PQ2X", 2, ({"place": 1},), 5, 1)
    >>> encode_t_live(shared, None) == encode(
    ...     TLive(tournament="TK7PQ2X", round=2, top=({"place": 1},), you=None,
    ...           racing=5, finished=1))
    True
    """
    return b"".join(
        (
            b"\x87",
            pack("t"),
            pack("t_live"),
            pack("tournament"),
            pack(tournament),
            pack("round"),
            pack(round),
            pack("top"),
            pack(list(top)),
            pack("racing"),
            pack(racing),
            pack("finished"),
            pack(finished),
        )
    )


def encode_t_live(shared: bytes, you: dict[str, Any] | None) -> bytes:
    """One recipient's ``t_live`` frame from ``t_live_shared``'s bytes."""
    return shared + _YOU + pack(you)


def pack_value(value: Any) -> bytes:
    """One msgpack value with the codec's packer (for ``encode_tournament``)."""
    return pack(value)


def encode_tournament(shared: bytes, you: dict[str, Any], msg_id: int | None = None) -> bytes:
    """``encode(TournamentSnapshot(...))`` for a tournament map already packed
    (``shared``, packed once per push for every subscriber): the same bytes.

    >>> from crescent_wire.protocol import TournamentSnapshot, encode
    >>> t = {"code": "TK7PQ2X", "ver": 3}
    >>> encode_tournament(pack_value(t), {"role": "none"}, 4) == encode(
    ...     TournamentSnapshot(tournament=t, you={"role": "none"}, id=4))
    True
    """
    return b"".join(
        (
            b"\x84" if msg_id is not None else b"\x83",
            _T_SNAPSHOT_HEAD,
            shared,
            _YOU,
            pack(you),
            b"" if msg_id is None else _ID + pack(msg_id),
        )
    )
