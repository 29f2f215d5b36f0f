"""Room join codes (the alphabet is the protocol's)."""

from __future__ import annotations

import secrets

from crescent_wire.protocol import ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH


def new_room_code() -> str:
    """A random join code: 6 characters without look-alikes (no 0/O, 1/I/L)."""
    return "".join(secrets.choice(ROOM_CODE_ALPHABET) for _ in range(ROOM_CODE_LENGTH))


def is_room_code(text: str) -> bool:
    """Whether ``text`` (already upper case) can be a join code."""
    return len(text) == ROOM_CODE_LENGTH and all(c in ROOM_CODE_ALPHABET for c in text)
