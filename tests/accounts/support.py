"""Helpers shared by the accounts tests."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from server.core.accounts import Account, Accounts, Passkey, Session, Transport

T0 = 1_800_000_000_000


def player_id() -> str:
    return secrets.token_hex(8)  # as server.auth.Player.new makes them


def passkey_for(player: str, *, now: int = T0, credential_id: str | None = None) -> Passkey:
    """A stored passkey value (its key is not used by the storage tests)."""
    return Passkey(
        credential_id=credential_id or secrets.token_urlsafe(16),
        player_id=player,
        public_key=secrets.token_bytes(77),
        sign_count=0,
        transports=(Transport.INTERNAL,),
        created_at=now,
    )


@dataclass(frozen=True)
class Snapshot:
    """What the port shows of some players: compared before and after a refusal."""

    accounts: tuple[Account | None, ...]
    passkeys: tuple[tuple[Passkey, ...], ...]
    sessions: tuple[tuple[Session, ...], ...]


async def snapshot(accounts: Accounts, *players: str) -> Snapshot:
    return Snapshot(
        tuple([await accounts.account(p) for p in players]),
        tuple([await accounts.passkeys(p) for p in players]),
        tuple([await accounts.sessions(p) for p in players]),
    )
