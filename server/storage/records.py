"""How the storage adapters store a record: one msgpack blob (bytes kept as bytes,
integer map keys allowed), the same in Redis and in memory."""

from __future__ import annotations

from typing import Any

import msgpack


def pack_record(obj: Any) -> bytes:
    packed: bytes = msgpack.packb(obj, use_bin_type=True)
    return packed


def unpack_record(blob: bytes) -> Any:
    return msgpack.unpackb(blob, raw=False, strict_map_key=False)
