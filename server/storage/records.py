"""The one record codec of the storage adapters: every stored record (room, progress,
the player's room and tournament lists, daily entries and results, tournament records
and result rows) is one msgpack blob written by :func:`pack_record` and read by
:func:`unpack_record`, the same in Redis, Redis Cluster and in memory.

The options, and why:

- ``use_bin_type=True`` (packing): ``str`` is written as msgpack *str* and ``bytes`` as
  msgpack *bin*, so a value reads back as the type it was written with. Every adapter
  has always packed with this option, so the bytes are those already stored.
- ``raw=False`` (unpacking): msgpack *str* reads back as ``str`` (UTF-8), not ``bytes``.
- ``strict_map_key=False`` (unpacking): map keys may be integers (a result map keyed by
  round number, a seq → action map); msgpack's default refuses any key that is not
  ``str``/``bytes``. Accepting more keys reads every record the stricter readers did.
- ``use_list=True`` (the default): arrays read back as ``list``; a tuple written reads
  back as a list, as it always has.

The packer is made once and reused (``autoreset``: each call returns one blob): it is on
the act path (each action stores its progress record). The event loop is the only
caller, so the shared packer is never used from two threads at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

_PACK: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack


def pack_record(obj: Any) -> bytes:
    """``obj`` (plain values: dict, list, str, bytes, int, float, bool, None) as a blob."""
    return _PACK(obj)


def unpack_record(blob: bytes) -> Any:
    """The value :func:`pack_record` wrote (arrays as lists, int map keys allowed)."""
    return msgpack.unpackb(blob, raw=False, strict_map_key=False)


__all__ = ["pack_record", "unpack_record"]
