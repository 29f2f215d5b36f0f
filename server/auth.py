"""Guest players: display names and server-signed tokens. Pure (no I/O).

A token is ``itsdangerous.URLSafeTimedSerializer`` (HMAC-SHA256 with the server's
secret) over ``{"id": player id, "n": name}``; it is valid for 30 days. No passwords:
the token is the identity.

>>> tokens = TokenSigner("s3cret")
>>> player = Player.new("  Ada ")
>>> tokens.verify(tokens.sign(player)) == player
True
>>> try:
...     TokenSigner("other").verify(tokens.sign(player))
... except AuthError as err:
...     print(err.code)
bad_token
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from crescent_wire.errors import AuthError

TOKEN_MAX_AGE_S = 30 * 24 * 3600
MAX_NAME = 24


def clean_name(raw: str) -> str:
    """Trim a display name and check it: 1-24 characters, no control characters."""
    name = raw.strip()
    if not name:
        raise AuthError("bad_name", "The display name is empty")
    if len(name) > MAX_NAME:
        raise AuthError("bad_name", f"The display name is longer than {MAX_NAME} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise AuthError("bad_name", "The display name contains control characters")
    return name


@dataclass(frozen=True, slots=True)
class Player:
    id: str
    name: str

    @classmethod
    def new(cls, name: str | None) -> Player:
        player_id = secrets.token_hex(8)
        return cls(
            player_id, clean_name(name) if name is not None else f"Guest-{player_id[:4].upper()}"
        )


class TokenSigner:
    def __init__(self, secret: str, max_age_s: int = TOKEN_MAX_AGE_S) -> None:
        self._serializer = URLSafeTimedSerializer(
            secret, salt="crescent-player", signer_kwargs={"digest_method": hashlib.sha256}
        )
        self.max_age_s = max_age_s

    def sign(self, player: Player) -> str:
        return self._serializer.dumps({"id": player.id, "n": player.name})

    def verify(self, token: str) -> Player:
        try:
            data = self._serializer.loads(token, max_age=self.max_age_s)
        except SignatureExpired:
            raise AuthError("token_expired") from None
        except BadSignature:
            raise AuthError("bad_token") from None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("id"), str)
            or not isinstance(data.get("n"), str)
        ):
            raise AuthError("bad_token")
        return Player(data["id"], data["n"])
