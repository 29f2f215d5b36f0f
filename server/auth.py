"""Guest players: display names and server-signed tokens. Pure (no I/O).

A token is ``itsdangerous.URLSafeTimedSerializer`` (HMAC-SHA256 with the server's
secret) over ``{"id": player id, "n": name}``, plus ``"s": session id`` for a device
signed in to an account (docs/accounts.md: ``hello`` checks that session is live); it
is valid for 30 days. A guest's token names no session. No passwords:
the token is the identity, so the secret must be one nobody else knows: at least
:data:`MIN_SECRET_BYTES` bytes and none of :data:`PUBLIC_SECRETS` (``check_secret``).

Rotation: a previous secret still verifies tokens until the end of its grace period
(``previous_until``, at most :data:`TOKEN_MAX_AGE_S` ahead); new tokens are always
signed with the current secret, and every ``welcome`` carries a fresh token, so a player
who comes back during the grace period keeps their identity.

>>> tokens = TokenSigner("s3cret")
>>> player = Player.new("  Ada ")
>>> tokens.verify(tokens.sign(player)) == player
True
>>> try:
...     TokenSigner("other").verify(tokens.sign(player))
... except AuthError as err:
...     print(err.code)
bad_token
>>> rotated = TokenSigner("new", previous="s3cret", previous_until=time.time() + 60)
>>> rotated.verify(tokens.sign(player)) == player, rotated.sign(player) == tokens.sign(player)
(True, False)
"""

from __future__ import annotations

import hashlib
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from crescent_wire.errors import AuthError

TOKEN_MAX_AGE_S = 30 * 24 * 3600
MAX_NAME = 24
MIN_SECRET_BYTES = 32
# Every secret printed in this repository (docs, compose and deploy files, scripts,
# tests, benchmarks): anyone can read them, so anyone could forge any player's token
# with one. tests/server/test_secrets.py greps the repository so this list stays whole.
PUBLIC_SECRETS: frozenset[str] = frozenset(
    {
        "change-me-to-a-long-random-string",  # docker-compose.yml's old fallback
        "check-image-secret",  # scripts/check-image, before it drew a random one
        "test-secret",  # tests' and devtools' old fixed secret
        "power-cut-secret",  # bench/power_cut.py's old one
        "bench-secret",  # bench/load.py's old one
        "s3cret",  # doctests
        "other",  # doctests
        "core-tests",  # the core's fast tests (tests/server/core_support.py)
        "not-the-secret",  # tests/server/test_bad_input.py
    }
)
SECRET_HOWTO = (
    "set it to a random string of at least 32 bytes, e.g. the output of "
    "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'` or "
    "`openssl rand -hex 32`, or leave it unset (a random secret is then kept in Redis "
    "and shared by every process)"
)


def check_secret(secret: str, name: str = "--secret (CRESCENT_SECRET)") -> None:
    """Raise ``ValueError`` (a message naming the fix) if ``secret`` must not sign
    tokens: shorter than :data:`MIN_SECRET_BYTES` bytes, or printed in the repository.

    >>> check_secret(secrets.token_urlsafe(32))
    >>> try:
    ...     check_secret("change-me-to-a-long-random-string")
    ... except ValueError as err:
    ...     print(str(err)[:75])
    --secret (CRESCENT_SECRET) is an example printed in the repository, so anyo
    """
    if secret.strip() in PUBLIC_SECRETS:
        raise ValueError(
            f"{name} is an example printed in the repository, so anyone could forge any "
            f"player's token: {SECRET_HOWTO}"
        )
    size = len(secret.encode())
    if size < MIN_SECRET_BYTES:
        raise ValueError(
            f"{name} is {size} bytes long, shorter than {MIN_SECRET_BYTES}: {SECRET_HOWTO}"
        )


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
    session: str | None = None  # the account session this device signed in with

    @classmethod
    def new(cls, name: str | None) -> Player:
        player_id = secrets.token_hex(8)
        return cls(
            player_id, clean_name(name) if name is not None else f"Guest-{player_id[:4].upper()}"
        )


def _serializer(secret: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(
        secret, salt="crescent-player", signer_kwargs={"digest_method": hashlib.sha256}
    )


class TokenSigner:
    """Signs with ``secret``; verifies with it and, until ``previous_until`` (epoch
    seconds, by ``clock``), with ``previous``."""

    def __init__(
        self,
        secret: str,
        max_age_s: int = TOKEN_MAX_AGE_S,
        *,
        previous: str | None = None,
        previous_until: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if previous is not None and previous_until is None:
            raise ValueError("a previous secret needs the end of its grace period")
        self._serializer = _serializer(secret)
        self._previous = _serializer(previous) if previous is not None else None
        self.previous_until = previous_until
        self.max_age_s = max_age_s
        self.clock = clock

    def sign(self, player: Player) -> str:
        if player.session is None:
            return self._serializer.dumps({"id": player.id, "n": player.name})
        return self._serializer.dumps({"id": player.id, "n": player.name, "s": player.session})

    def verify(self, token: str) -> Player:
        try:
            data = self._serializer.loads(token, max_age=self.max_age_s)
        except SignatureExpired:
            raise AuthError("token_expired") from None
        except BadSignature:
            data = self._verify_previous(token)
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("id"), str)
            or not isinstance(data.get("n"), str)
            or not isinstance(data.get("s", ""), str)
        ):
            raise AuthError("bad_token")
        return Player(data["id"], data["n"], data.get("s"))

    def _verify_previous(self, token: str) -> object:
        in_grace = self.previous_until is not None and self.clock() < self.previous_until
        if self._previous is None or not in_grace:
            raise AuthError("bad_token")
        try:
            return self._previous.loads(token, max_age=self.max_age_s)
        except SignatureExpired:
            raise AuthError("token_expired") from None
        except BadSignature:
            raise AuthError("bad_token") from None
