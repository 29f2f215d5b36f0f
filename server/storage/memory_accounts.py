"""Accounts in memory (one process, no I/O): for the core's fast tests.

Same contract as :mod:`server.storage.postgres_accounts`
(tests/accounts/test_contract.py runs both). Each method runs without an ``await``
inside, so it is atomic on the event loop as the PostgreSQL adapter's are in the
database.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from server.core.accounts import (
    CHALLENGE_TTL_MS,
    LINK_CODE_LENGTH,
    MAX_PASSKEYS,
    MAX_SESSIONS,
    Account,
    Challenge,
    LinkCode,
    OpenedSession,
    Passkey,
    RateDecision,
    RateLimit,
    RecoveryCodes,
    Session,
    check_handle,
    decide,
    handle_key,
    link_code_digest,
    normalise_code,
    refuse,
)

# rate events are kept this long at most (the longest window of the defaults)
RATE_EVENTS_KEPT_MS = 24 * 3_600_000


@dataclasses.dataclass(slots=True)
class _StoredLinkCode:
    player_id: str
    expires_at: int
    used_at: int | None = None


@dataclasses.dataclass(slots=True)
class _StoredChallenge:
    challenge: Challenge
    used_at: int | None = None


class MemoryAccounts:
    def __init__(self) -> None:
        self.accounts: dict[str, Account] = {}
        self.by_key: dict[str, str] = {}  # handle key -> player id (live accounts)
        self.passkeys_by_id: dict[str, Passkey] = {}
        self.sessions_by_id: dict[str, Session] = {}
        self.link_codes: dict[str, _StoredLinkCode] = {}  # by digest
        self.recovery: dict[str, tuple[bytes, dict[bytes, int | None]]] = {}
        self.challenges: dict[str, _StoredChallenge] = {}
        self.rate_events: defaultdict[str, list[int]] = defaultdict(list)

    def _live(self, player_id: str) -> Account:
        account = self.accounts.get(player_id)
        if account is None or account.deleted_at is not None:
            raise refuse("no_account", f"no account for player {player_id!r}")
        return account

    async def create_account(
        self, player_id: str, handle: str, passkey: Passkey, *, now: int
    ) -> Account:
        handle = check_handle(handle)
        key = handle_key(handle)
        if player_id in self.accounts:
            raise refuse("account_exists", "this player already has an account")
        if key in self.by_key:
            raise refuse("handle_taken", f"{handle!r} is taken")
        if passkey.credential_id in self.passkeys_by_id:
            raise refuse("credential_taken", "this passkey is registered already")
        account = Account(player_id, handle, key, now)
        self.accounts[player_id] = account
        self.by_key[key] = player_id
        self.passkeys_by_id[passkey.credential_id] = dataclasses.replace(
            passkey, player_id=player_id
        )
        return account

    async def account(self, player_id: str) -> Account | None:
        return self.accounts.get(player_id)

    async def account_by_handle(self, handle: str) -> Account | None:
        player_id = self.by_key.get(handle_key(handle))
        return self.accounts[player_id] if player_id is not None else None

    async def delete_account(self, player_id: str, *, now: int) -> tuple[str, ...]:
        account = self._live(player_id)
        assert account.handle_key is not None
        del self.by_key[account.handle_key]
        self.accounts[player_id] = dataclasses.replace(
            account, handle=None, handle_key=None, deleted_at=now
        )
        for credential_id in [
            c for c, p in self.passkeys_by_id.items() if p.player_id == player_id
        ]:
            del self.passkeys_by_id[credential_id]
        ended = tuple(
            s.id
            for s in self.sessions_by_id.values()
            if s.player_id == player_id and s.revoked_at is None
        )
        for session_id in [s.id for s in self.sessions_by_id.values() if s.player_id == player_id]:
            del self.sessions_by_id[session_id]
        for digest in [d for d, c in self.link_codes.items() if c.player_id == player_id]:
            del self.link_codes[digest]
        self.recovery.pop(player_id, None)
        return ended

    async def add_passkey(self, passkey: Passkey) -> None:
        self._live(passkey.player_id)
        if passkey.credential_id in self.passkeys_by_id:
            raise refuse("credential_taken", "this passkey is registered already")
        if len(await self.passkeys(passkey.player_id)) >= MAX_PASSKEYS:
            raise refuse("too_many_passkeys", f"an account has at most {MAX_PASSKEYS} passkeys")
        self.passkeys_by_id[passkey.credential_id] = passkey

    async def passkey(self, credential_id: str) -> Passkey | None:
        return self.passkeys_by_id.get(credential_id)

    async def passkeys(self, player_id: str) -> tuple[Passkey, ...]:
        mine = [p for p in self.passkeys_by_id.values() if p.player_id == player_id]
        return tuple(sorted(mine, key=lambda p: (p.created_at, p.credential_id)))

    async def record_passkey_use(self, credential_id: str, sign_count: int, *, now: int) -> bool:
        passkey = self.passkeys_by_id.get(credential_id)
        if passkey is None:
            return False
        forward = sign_count > passkey.sign_count or sign_count == passkey.sign_count == 0
        if not forward:
            return False
        self.passkeys_by_id[credential_id] = dataclasses.replace(
            passkey, sign_count=sign_count, last_used_at=now
        )
        return True

    async def open_session(self, player_id: str, device: str, *, now: int) -> OpenedSession:
        self._live(player_id)
        session = Session(Session.new_id(), player_id, device, now, now)
        self.sessions_by_id[session.id] = session
        live = sorted(
            (
                s
                for s in self.sessions_by_id.values()
                if s.player_id == player_id and s.revoked_at is None
            ),
            key=lambda s: (s.last_seen_at, s.created_at, s.id),
            reverse=True,
        )
        ended = []
        for old in live[MAX_SESSIONS:]:
            self.sessions_by_id[old.id] = dataclasses.replace(old, revoked_at=now)
            ended.append(old.id)
        return OpenedSession(session, tuple(sorted(ended)))

    async def session(self, session_id: str) -> Session | None:
        return self.sessions_by_id.get(session_id)

    async def sessions(self, player_id: str) -> tuple[Session, ...]:
        live = [
            s
            for s in self.sessions_by_id.values()
            if s.player_id == player_id and s.revoked_at is None
        ]
        return tuple(sorted(live, key=lambda s: (s.created_at, s.id), reverse=True))

    async def touch_session(self, session_id: str, *, now: int) -> bool:
        session = self.sessions_by_id.get(session_id)
        if session is None or session.revoked_at is not None:
            return False
        self.sessions_by_id[session_id] = dataclasses.replace(
            session, last_seen_at=max(session.last_seen_at, now)
        )
        return True

    async def revoke_session(self, player_id: str, session_id: str, *, now: int) -> None:
        session = self.sessions_by_id.get(session_id)
        if session is None or session.player_id != player_id or session.revoked_at is not None:
            raise refuse("unknown_session", "no such session")
        self.sessions_by_id[session_id] = dataclasses.replace(session, revoked_at=now)

    async def revoke_sessions(
        self, player_id: str, *, now: int, keep: str | None = None
    ) -> tuple[str, ...]:
        revoked = []
        for session in list(self.sessions_by_id.values()):
            if session.player_id == player_id and session.revoked_at is None and session.id != keep:
                self.sessions_by_id[session.id] = dataclasses.replace(session, revoked_at=now)
                revoked.append(session.id)
        return tuple(sorted(revoked))

    async def add_link_code(self, code: LinkCode) -> None:
        self._live(code.player_id)
        self.link_codes[code.digest] = _StoredLinkCode(code.player_id, code.expires_at)

    async def redeem_link_code(self, typed: str, *, now: int) -> str:
        digest = link_code_digest(normalise_code(typed, LINK_CODE_LENGTH))
        stored = self.link_codes.get(digest)
        if stored is None:
            raise refuse("link_code_unknown", "no such link code")
        if stored.used_at is not None:
            raise refuse("link_code_used", "this link code was used already")
        if now >= stored.expires_at:
            raise refuse("link_code_expired", "this link code has expired")
        stored.used_at = now
        return stored.player_id

    async def set_recovery_codes(self, player_id: str, codes: RecoveryCodes, *, now: int) -> None:
        self._live(player_id)
        self.recovery[player_id] = (codes.salt, dict.fromkeys(codes.digests))

    async def recovery_codes(self, player_id: str) -> RecoveryCodes | None:
        stored = self.recovery.get(player_id)
        if stored is None:
            return None
        salt, digests = stored
        return RecoveryCodes(salt, tuple(d for d, used in digests.items() if used is None))

    async def use_recovery_code(self, player_id: str, digest: bytes, *, now: int) -> bool:
        stored = self.recovery.get(player_id)
        if stored is None or digest not in stored[1] or stored[1][digest] is not None:
            return False
        stored[1][digest] = now
        return True

    async def issue_challenge(self, challenge: Challenge) -> None:
        self.challenges[challenge.value] = _StoredChallenge(challenge)

    async def take_challenge(self, value: str, *, now: int) -> Challenge:
        stored = self.challenges.get(value)
        if stored is None:
            raise refuse("unknown_challenge", "no such challenge was issued")
        if stored.used_at is not None:
            raise refuse("challenge_replayed", "this challenge was answered already")
        stored.used_at = now
        if now >= stored.challenge.expires_at:
            raise refuse("challenge_expired", "the challenge has expired")
        return stored.challenge

    async def hit(self, limit: RateLimit, subject: str, *, now: int) -> RateDecision:
        events = self.rate_events[limit.bucket(subject)]
        events[:] = [t for t in events if t > now - limit.window_ms]
        decision = decide(events, limit, now=now)
        if decision.allowed:
            events.append(now)
        return decision

    async def purge(self, *, now: int) -> int:
        gone = 0
        for value in [
            v
            for v, c in self.challenges.items()
            if c.challenge.expires_at + CHALLENGE_TTL_MS <= now
        ]:
            del self.challenges[value]
            gone += 1
        for digest in [d for d, c in self.link_codes.items() if c.expires_at <= now]:
            del self.link_codes[digest]
            gone += 1
        for bucket, events in list(self.rate_events.items()):
            kept = [t for t in events if t > now - RATE_EVENTS_KEPT_MS]
            gone += len(events) - len(kept)
            if kept:
                events[:] = kept
            else:
                del self.rate_events[bucket]
        return gone

    async def close(self) -> None:
        pass
