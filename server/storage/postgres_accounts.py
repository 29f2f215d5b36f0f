"""Accounts in PostgreSQL, through an asyncpg pool (docs/accounts.md).

The schema is ``server/storage/migrations/0002_accounts.sql``, applied by
:func:`server.storage.postgres_pool.migrate` with the archive's. Uniqueness across
processes is the database's: the unique index on ``accounts.handle_key`` decides two
racing creates (one wins, the other gets ``handle_taken``); single use of a challenge,
link code or recovery code is an ``update ... where used_at is null returning``; a rate
limit's count and insert run under a transaction-scoped advisory lock on its bucket.
"""

from __future__ import annotations

from typing import Any, Unpack

import asyncpg

from server.core.accounts import (
    CHALLENGE_TTL_MS,
    LINK_CODE_LENGTH,
    MAX_PASSKEYS,
    MAX_SESSIONS,
    Account,
    Ceremony,
    Challenge,
    LinkCode,
    OpenedSession,
    Passkey,
    RateDecision,
    RateLimit,
    RecoveryCodes,
    Session,
    Transport,
    check_handle,
    decide,
    handle_key,
    link_code_digest,
    normalise_code,
    refuse,
)
from server.storage.memory_accounts import RATE_EVENTS_KEPT_MS
from server.storage.postgres_pool import (
    PoolOptions,
    PoolOwner,
    again_if_lost,
    from_row,
    open_pool,
    row_count,
)

# A transaction that need not wait for its WAL to reach the disk: what it writes (an
# issued challenge, a rate-limit event) may be lost in a crash of PostgreSQL without
# harm (the browser asks for new options; one attempt goes uncounted), and the commit
# then costs no fsync: the ceremonies' start is one disk flush cheaper.
_NO_FLUSH = "set local synchronous_commit = off"
# pg_advisory_xact_lock(RATE_LOCK, hashtext(bucket)): one rate decision a bucket at a time
RATE_LOCK = 0x52415445  # "RATE"


async def connect(dsn: str, **options: Unpack[PoolOptions]) -> PostgresAccounts:
    """A pool on ``dsn``, migrated (every migration: the archive's too)."""
    return PostgresAccounts(await open_pool(dsn, **options))


_PASSKEY_COLUMNS = (
    "credential_id, player_id, public_key, sign_count, transports, backed_up,"
    " created_at, last_used_at"
)
_SESSION_COLUMNS = "id, player_id, device, created_at, last_seen_at, revoked_at"


class PostgresAccounts(PoolOwner):
    """The :class:`server.core.accounts.Accounts` port on an asyncpg pool (migrated).
    Reads are retried once on a dead pooled connection; writes are not (a write cut
    mid-way may have committed: the caller sees the error)."""

    # --- accounts

    async def create_account(
        self, player_id: str, handle: str, passkey: Passkey, *, now: int
    ) -> Account:
        handle = check_handle(handle)
        key = handle_key(handle)
        try:
            async with self.transaction() as conn:
                await conn.execute(
                    "insert into accounts (player_id, handle, handle_key, created_at)"
                    " values ($1, $2, $3, $4)",
                    player_id,
                    handle,
                    key,
                    now,
                )
                await _insert_passkey(conn, passkey, player_id)
        except asyncpg.UniqueViolationError as exc:
            constraint = exc.constraint_name
            if constraint == "accounts_handle_key":
                raise refuse("handle_taken", f"{handle!r} is taken") from None
            if constraint == "accounts_pkey":
                raise refuse("account_exists", "this player already has an account") from None
            raise refuse("credential_taken", "this passkey is registered already") from None
        return Account(player_id, handle, key, now)

    async def account(self, player_id: str) -> Account | None:
        row = await again_if_lost(
            lambda: self.pool.fetchrow(
                "select player_id, handle, handle_key, created_at, deleted_at from accounts"
                " where player_id = $1",
                player_id,
            )
        )
        return _account(row) if row is not None else None

    async def account_by_handle(self, handle: str) -> Account | None:
        row = await again_if_lost(
            lambda: self.pool.fetchrow(
                "select player_id, handle, handle_key, created_at, deleted_at from accounts"
                " where handle_key = $1",
                handle_key(handle),
            )
        )
        return _account(row) if row is not None else None

    async def delete_account(self, player_id: str, *, now: int) -> tuple[str, ...]:
        async with self.transaction() as conn:
            status = await conn.execute(
                "update accounts set handle = null, handle_key = null, deleted_at = $2"
                " where player_id = $1 and deleted_at is null",
                player_id,
                now,
            )
            if row_count(status) == 0:
                raise refuse("no_account", f"no account for player {player_id!r}")
            await conn.execute("delete from account_passkeys where player_id = $1", player_id)
            ended = await conn.fetch(
                "delete from account_sessions where player_id = $1 returning id, revoked_at",
                player_id,
            )
            await conn.execute("delete from account_link_codes where player_id = $1", player_id)
            await conn.execute("delete from account_recovery_codes where player_id = $1", player_id)
        return tuple(sorted(row["id"] for row in ended if row["revoked_at"] is None))

    # --- passkeys

    async def add_passkey(self, passkey: Passkey) -> None:
        async with self.transaction() as conn:
            await _lock_live_account(conn, passkey.player_id)
            count = await conn.fetchval(
                "select count(*) from account_passkeys where player_id = $1", passkey.player_id
            )
            if count >= MAX_PASSKEYS:
                raise refuse("too_many_passkeys", f"an account has at most {MAX_PASSKEYS} passkeys")
            try:
                await _insert_passkey(conn, passkey, passkey.player_id)
            except asyncpg.UniqueViolationError:
                raise refuse("credential_taken", "this passkey is registered already") from None

    async def passkey(self, credential_id: str) -> Passkey | None:
        row = await again_if_lost(
            lambda: self.pool.fetchrow(
                f"select {_PASSKEY_COLUMNS} from account_passkeys where credential_id = $1",
                credential_id,
            )
        )
        return _passkey(row) if row is not None else None

    async def passkeys(self, player_id: str) -> tuple[Passkey, ...]:
        rows = await again_if_lost(
            lambda: self.pool.fetch(
                f"select {_PASSKEY_COLUMNS} from account_passkeys where player_id = $1"
                " order by created_at, credential_id",
                player_id,
            )
        )
        return tuple(_passkey(row) for row in rows)

    async def record_passkey_use(self, credential_id: str, sign_count: int, *, now: int) -> bool:
        status = await self.pool.execute(
            "update account_passkeys set sign_count = $2, last_used_at = $3"
            " where credential_id = $1"
            " and (sign_count < $2 or (sign_count = 0 and $2 = 0))",
            credential_id,
            sign_count,
            now,
        )
        return row_count(status) == 1

    # --- sessions

    async def open_session(self, player_id: str, device: str, *, now: int) -> OpenedSession:
        session = Session(Session.new_id(), player_id, device, now, now)
        async with self.transaction() as conn:
            # the account's row lock also orders concurrent opens: the cap holds
            await _lock_live_account(conn, player_id)
            await conn.execute(
                f"insert into account_sessions ({_SESSION_COLUMNS})"
                " values ($1, $2, $3, $4, $5, null)",
                session.id,
                player_id,
                device,
                now,
                now,
            )
            ended = await conn.fetch(
                "update account_sessions set revoked_at = $2 where id in ("
                " select id from account_sessions where player_id = $1 and revoked_at is null"
                " order by last_seen_at desc, created_at desc, id desc offset $3)"
                " returning id",
                player_id,
                now,
                MAX_SESSIONS,
            )
        return OpenedSession(session, tuple(sorted(row["id"] for row in ended)))

    async def session(self, session_id: str) -> Session | None:
        row = await again_if_lost(
            lambda: self.pool.fetchrow(
                f"select {_SESSION_COLUMNS} from account_sessions where id = $1", session_id
            )
        )
        return _session(row) if row is not None else None

    async def sessions(self, player_id: str) -> tuple[Session, ...]:
        rows = await again_if_lost(
            lambda: self.pool.fetch(
                f"select {_SESSION_COLUMNS} from account_sessions"
                " where player_id = $1 and revoked_at is null"
                " order by created_at desc, id desc",
                player_id,
            )
        )
        return tuple(_session(row) for row in rows)

    async def touch_session(self, session_id: str, *, now: int) -> bool:
        status = await self.pool.execute(
            "update account_sessions set last_seen_at = greatest(last_seen_at, $2)"
            " where id = $1 and revoked_at is null",
            session_id,
            now,
        )
        return row_count(status) == 1

    async def revoke_session(self, player_id: str, session_id: str, *, now: int) -> None:
        status = await self.pool.execute(
            "update account_sessions set revoked_at = $3"
            " where id = $1 and player_id = $2 and revoked_at is null",
            session_id,
            player_id,
            now,
        )
        if row_count(status) == 0:
            raise refuse("unknown_session", "no such session")

    async def revoke_sessions(
        self, player_id: str, *, now: int, keep: str | None = None
    ) -> tuple[str, ...]:
        rows = await self.pool.fetch(
            "update account_sessions set revoked_at = $2"
            " where player_id = $1 and revoked_at is null and id is distinct from $3"
            " returning id",
            player_id,
            now,
            keep,
        )
        return tuple(sorted(row["id"] for row in rows))

    # --- link and recovery codes

    async def add_link_code(self, code: LinkCode) -> None:
        async with self.transaction() as conn:
            await _lock_live_account(conn, code.player_id)
            await conn.execute(
                "insert into account_link_codes (digest, player_id, created_at, expires_at)"
                " values ($1, $2, $3, $4)",
                code.digest,
                code.player_id,
                code.created_at,
                code.expires_at,
            )

    async def redeem_link_code(self, typed: str, *, now: int) -> str:
        digest = link_code_digest(normalise_code(typed, LINK_CODE_LENGTH))
        async with self.transaction() as conn:
            row = await conn.fetchrow(
                "select player_id, expires_at, used_at from account_link_codes"
                " where digest = $1 for update",
                digest,
            )
            if row is None:
                raise refuse("link_code_unknown", "no such link code")
            if row["used_at"] is not None:
                raise refuse("link_code_used", "this link code was used already")
            if now >= row["expires_at"]:
                raise refuse("link_code_expired", "this link code has expired")
            await conn.execute(
                "update account_link_codes set used_at = $2 where digest = $1", digest, now
            )
        player_id: str = row["player_id"]
        return player_id

    async def set_recovery_codes(self, player_id: str, codes: RecoveryCodes, *, now: int) -> None:
        async with self.transaction() as conn:
            await _lock_live_account(conn, player_id)
            await conn.execute("delete from account_recovery_codes where player_id = $1", player_id)
            await conn.executemany(
                "insert into account_recovery_codes (player_id, digest, salt, created_at)"
                " values ($1, $2, $3, $4)",
                [(player_id, digest, codes.salt, now) for digest in codes.digests],
            )

    async def recovery_codes(self, player_id: str) -> RecoveryCodes | None:
        rows = await again_if_lost(
            lambda: self.pool.fetch(
                "select digest, salt, used_at from account_recovery_codes"
                " where player_id = $1 order by digest",
                player_id,
            )
        )
        if not rows:
            return None
        return RecoveryCodes(
            bytes(rows[0]["salt"]),
            tuple(bytes(row["digest"]) for row in rows if row["used_at"] is None),
        )

    async def use_recovery_code(self, player_id: str, digest: bytes, *, now: int) -> bool:
        status = await self.pool.execute(
            "update account_recovery_codes set used_at = $3"
            " where player_id = $1 and digest = $2 and used_at is null",
            player_id,
            digest,
            now,
        )
        return row_count(status) == 1

    # --- challenges

    async def issue_challenge(self, challenge: Challenge) -> None:
        async with self.transaction() as conn:
            await conn.execute(_NO_FLUSH)
            await conn.execute(
                "insert into account_challenges"
                " (value, ceremony, player_id, issued_at, expires_at) values ($1, $2, $3, $4, $5)",
                challenge.value,
                str(challenge.ceremony),
                challenge.player_id,
                challenge.issued_at,
                challenge.expires_at,
            )

    async def take_challenge(self, value: str, *, now: int) -> Challenge:
        async with self.transaction() as conn:
            row = await conn.fetchrow(
                "update account_challenges set used_at = $2"
                " where value = $1 and used_at is null"
                " returning ceremony, player_id, issued_at, expires_at",
                value,
                now,
            )
            if row is None:
                used = await conn.fetchval(
                    "select used_at from account_challenges where value = $1", value
                )
                if used is None:
                    raise refuse("unknown_challenge", "no such challenge was issued")
                raise refuse("challenge_replayed", "this challenge was answered already")
        if now >= row["expires_at"]:
            raise refuse("challenge_expired", "the challenge has expired")
        return Challenge(
            value=value,
            ceremony=Ceremony(row["ceremony"]),
            player_id=row["player_id"],
            issued_at=row["issued_at"],
            expires_at=row["expires_at"],
        )

    # --- rate limits and housekeeping

    async def hit(self, limit: RateLimit, subject: str, *, now: int) -> RateDecision:
        bucket = limit.bucket(subject)
        async with self.transaction() as conn:
            await conn.execute("select pg_advisory_xact_lock($1, hashtext($2))", RATE_LOCK, bucket)
            times = await conn.fetch(
                "select at from account_rate_events where bucket = $1 and at > $2",
                bucket,
                now - limit.window_ms,
            )
            decision = decide([row["at"] for row in times], limit, now=now)
            if decision.allowed:
                await conn.execute(
                    "insert into account_rate_events (bucket, at) values ($1, $2)", bucket, now
                )
        return decision

    async def purge(self, *, now: int) -> int:
        async with self.pool.acquire() as conn:
            gone = row_count(
                await conn.execute(
                    "delete from account_challenges where expires_at <= $1",
                    now - CHALLENGE_TTL_MS,
                )
            )
            gone += row_count(
                await conn.execute("delete from account_link_codes where expires_at <= $1", now)
            )
            gone += row_count(
                await conn.execute(
                    "delete from account_rate_events where at <= $1", now - RATE_EVENTS_KEPT_MS
                )
            )
        return gone


async def _lock_live_account(conn: Any, player_id: str) -> None:
    """Lock the live account's row for this transaction (a concurrent delete waits), or
    ``no_account``."""
    found = await conn.fetchval(
        "select 1 from accounts where player_id = $1 and deleted_at is null for update",
        player_id,
    )
    if found is None:
        raise refuse("no_account", f"no account for player {player_id!r}")


async def _insert_passkey(conn: Any, passkey: Passkey, player_id: str) -> None:
    await conn.execute(
        f"insert into account_passkeys ({_PASSKEY_COLUMNS})"
        " values ($1, $2, $3, $4, $5, $6, $7, $8)",
        passkey.credential_id,
        player_id,
        passkey.public_key,
        passkey.sign_count,
        [str(t) for t in passkey.transports],
        passkey.backed_up,
        passkey.created_at,
        passkey.last_used_at,
    )


def _account(row: asyncpg.Record) -> Account:
    return from_row(Account, row)


def _passkey(row: asyncpg.Record) -> Passkey:
    return from_row(
        Passkey,
        row,
        public_key=bytes(row["public_key"]),
        transports=tuple(Transport(t) for t in row["transports"]),
    )


def _session(row: asyncpg.Record) -> Session:
    return from_row(Session, row)
