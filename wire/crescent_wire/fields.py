"""The validating readers of request fields: each returns the field's value or raises
``bad_field`` naming the field and what is wrong with it (docs/protocol.md, "Errors").

The server decodes requests with them (strict); replies are decoded leniently and do
not use them.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from crescent_wire.errors import ProtocolError
from crescent_wire.limits import DAY_LENGTH, MAX_NAME_FIELD, MAX_ROOM_FIELD, MAX_T_NAME


def bad(key: str, what: str) -> ProtocolError:
    return ProtocolError("bad_field", f"Field '{key}' {what}")


def int_field(obj: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = obj.get(key)
    # bool is a subclass of int in Python; a msgpack true is not a number here.
    if type(value) is not int:
        raise bad(key, "must be an integer" if key in obj else "is missing")
    if not lo <= value <= hi:
        raise bad(key, f"must be between {lo} and {hi}")
    return value


def opt_int_field(obj: dict[str, Any], key: str, lo: int, hi: int) -> int | None:
    if obj.get(key) is None:
        return None
    return int_field(obj, key, lo, hi)


def int_or_default(obj: dict[str, Any], key: str, lo: int, hi: int, default: int) -> int:
    """An optional integer: nil or absent is ``default``."""
    value = opt_int_field(obj, key, lo, hi)
    return default if value is None else value


def str_field(obj: dict[str, Any], key: str, max_len: int) -> str:
    value = obj.get(key)
    if type(value) is not str:
        raise bad(key, "must be a string" if key in obj else "is missing")
    if not 0 < len(value) <= max_len:
        raise bad(key, f"must have 1 to {max_len} characters")
    return value


def opt_str_field(obj: dict[str, Any], key: str, max_len: int) -> str | None:
    if obj.get(key) is None:
        return None
    return str_field(obj, key, max_len)


def code_field(obj: dict[str, Any], key: str, max_len: int = MAX_ROOM_FIELD) -> str:
    """A room or tournament code: case-insensitive, canonical upper case. A string that
    cannot be a code is still a string: the service answers ``*_not_found`` for it."""
    return str_field(obj, key, max_len).upper()


def room_field(obj: dict[str, Any]) -> str:
    return code_field(obj, "room")


def choice_field(obj: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices``, case-insensitive (canonical upper case); nil is ``default``."""
    value = obj.get(key)
    if value is None:
        return default
    if type(value) is not str or value.upper() not in choices:
        raise bad(key, f"must be one of {', '.join(choices)}")
    return value.upper()


def exact_field(obj: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` exactly as written; nil is ``default``."""
    value = obj.get(key)
    if value is None:
        return default
    if type(value) is not str or value not in choices:
        raise bad(key, f"must be one of {', '.join(choices)}")
    return value


def bool_field(obj: dict[str, Any], key: str) -> bool:
    """An optional flag: nil or absent is false."""
    value = obj.get(key, False)
    if value is None:
        return False
    if type(value) is not bool:
        raise bad(key, "must be true or false")
    return value


def name_field(obj: dict[str, Any]) -> str | None:
    value = obj.get("name")
    if value is None:
        return None
    if type(value) is not str or len(value) > MAX_NAME_FIELD:
        raise bad("name", f"must be a string of at most {MAX_NAME_FIELD} characters")
    return value  # may be empty or blank: the session layer refuses it with bad_name


_DAY_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def day_field(obj: dict[str, Any], key: str) -> str | None:
    """A calendar day in its one text form, ``YYYY-MM-DD``; anything else (``""``,
    ``"yesterday"``, ``"2025-02-30"``) is ``bad_field``: a client's mistake, told apart
    from ``day_not_found`` (a well-formed day that has no challenge)."""
    value = opt_str_field(obj, key, DAY_LENGTH)
    if value is None:
        return None
    if _DAY_PATTERN.fullmatch(value) is None:
        raise bad(key, "must be a day, YYYY-MM-DD")
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise bad(key, "must be a day, YYYY-MM-DD") from None
    return value


def tournament_name_field(obj: dict[str, Any]) -> str:
    """A tournament's name, its whitespace runs folded to one space."""
    value = obj.get("name")
    if type(value) is not str:
        raise bad("name", "must be a string" if "name" in obj else "is missing")
    name = " ".join(value.split())
    if not 0 < len(name) <= MAX_T_NAME or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        raise bad("name", f"must have 1 to {MAX_T_NAME} characters and no control characters")
    return name
