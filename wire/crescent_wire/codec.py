"""The one msgpack codec: ``encode`` any message into one map, ``decode_client`` a
request (strict: a listed field of the wrong type is ``bad_field``), ``decode_server``
a reply (lenient: unknown fields are ignored).

>>> from crescent_wire.race import Act
>>> from crescent_wire.session import Pong, Ready
>>> wire = encode_client(Act(room="K7PQ2X", seq=1, action="p10-p14", id=5))
>>> decode_client(wire)
Act(room='K7PQ2X', seq=1, action='p10-p14', id=5)
>>> decode_server(encode(Pong(server_time=1764500000000, id=5)))
Pong(server_time=1764500000000, id=5)
>>> try:
...     decode_client(encode_client(Ready(room="K7PQ2X", ready=True))[:-1])
... except ProtocolError as err:
...     print(err.code)
bad_message
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from crescent_wire.errors import ProtocolError
from crescent_wire.fields import opt_int_field
from crescent_wire.limits import MAX_ID
from crescent_wire.registry import (
    CLIENT_CLASSES,
    CLIENT_DECODERS,
    SERVER_DECODERS,
    ClientMessage,
    Message,
    ServerMessage,
)

# One Packer for every frame: msgpack.packb builds a new Packer per call, which costs
# more than packing a small map (the server is one thread: the Packer is never shared).
# The server's pre-packed frames (server/core/wire_server.py) use it too, so their bytes
# are this codec's.
pack: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack


def encode(msg: Message) -> bytes:
    """One msgpack map for any message, ready to send as one binary frame."""
    return pack(msg.to_wire())


def encode_client(msg: ClientMessage) -> bytes:
    """Encode a request (for client code; the same codec as ``encode``)."""
    if not isinstance(msg, CLIENT_CLASSES):
        raise TypeError(f"{type(msg).__name__} is not a client message")
    return encode(msg)


def unpack_map(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one frame into a map with a string ``t``; ``bad_message`` otherwise."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise ProtocolError("bad_message", f"Not a msgpack value: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("bad_message", "A message must be a msgpack map")
    kind = obj.get("t")
    if not isinstance(kind, str):
        raise ProtocolError("bad_message", "A message must have a string 't' (its type)")
    return obj


def decode_client(data: bytes | bytearray | memoryview) -> ClientMessage:
    """Decode and validate one request frame; raises ``ProtocolError`` with a wire code."""
    obj = unpack_map(data)
    msg_id = opt_int_field(obj, "id", 0, MAX_ID)
    try:
        decoder = CLIENT_DECODERS.get(obj["t"])
        if decoder is None:
            raise ProtocolError("unknown_type", f"Unknown message type {obj['t'][:40]!r}")
        return decoder(obj, msg_id)
    except ProtocolError as err:
        err.msg_id = msg_id  # so the error reply can carry the request's id
        raise


def decode_server(data: bytes | bytearray | memoryview) -> ServerMessage:
    """Decode one server frame into its dataclass (lenient: extra fields are ignored)."""
    obj = unpack_map(data)
    decoder = SERVER_DECODERS.get(obj["t"])
    if decoder is None:
        raise ProtocolError("unknown_type", f"Unknown server message type {obj['t'][:40]!r}")
    return decoder(obj)
