"""What a client asks of accounts (docs/accounts.md, docs/protocol.md "Accounts"): the
ceremonies, sessions, link and recovery codes, the account page's data, deletion and the
public profile. The web layer (:mod:`server.web.account_routes`) maps HTTP routes onto
these methods; each returns plain JSON-able values and raises
:class:`~crescent_wire.errors.AccountsError` with a documented code.

A sign-in (account creation, passkey, link code, recovery code) answers with a new
token naming the new session: the device keeps the player id, and every ``hello`` with
that token checks the session is live (:class:`server.core.session.Sessions`). Ending
sessions (sign out, the session cap, deleting the account) publishes their ids on the
accounts channel: every process closes its sockets of them (close code 4011).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from crescent_wire.errors import AccountsError, AuthError, ServerError
from server.auth import Player, TokenSigner
from server.core import account_flows as flows
from server.core import messages
from server.core.accounts import DELETED_NAME, Account, AccountError, Accounts, Session
from server.core.archive_reads import ArchiveReads
from server.core.daily import daily_summary
from server.core.passkeys import RelyingParty, Response
from server.core.periodic import run_periodically
from server.core.ports import Clock, DailyStorage, Storage
from server.daily import Day

log = logging.getLogger("server.accounts")

# The days whose daily board may be in Redis and not archived yet (today and the two
# before: server/core/outbox.py, ``put_revealed_days``).
UNARCHIVED_DAYS: Final = 3

ACCOUNTS_CHANNEL: Final = "accounts"  # the bus channel of SessionsRevoked
RECENT_GAMES: Final = 10  # archived games on a public profile
RECENT_TOURNAMENTS: Final = 10  # finished tournaments on a public profile
PURGE_INTERVAL_S: Final = 300.0  # expired challenges, link codes and old rate events


def _coded(err: AccountError) -> AccountsError:
    return AccountsError(err.code, err.message)


def _session_json(session: Session, current: str | None) -> dict[str, Any]:
    return {
        "id": session.id,
        "device": session.device,
        "created_at": session.created_at,
        "last_seen_at": session.last_seen_at,
        "current": session.id == current,
    }


class AccountRequests:
    """The account operations over the ports: ``accounts`` (None: every request is
    ``accounts_off``), the relying party, the token signer, the room storage (its bus
    carries revocations), the daily storage (histories for ``me`` and profiles)."""

    def __init__(
        self,
        accounts: Accounts | None,
        rp: RelyingParty | None,
        signer: TokenSigner,
        storage: Storage,
        daily: DailyStorage,
        clock: Clock,
    ) -> None:
        self.accounts = accounts
        self.rp = rp
        self.signer = signer
        self.storage = storage
        self.daily = daily
        self.clock = clock
        # Called with the ids of sessions ended on any process (set by the web layer to
        # close its sockets of them).
        self.on_revoked: Callable[[frozenset[str]], None] = lambda ids: None
        # The archive's reads (a profile's games and tournaments; a deleted account's
        # name), or None: no archive (set by the hub).
        self.archive: ArchiveReads | None = None

    # --- plumbing

    def _ports(self) -> tuple[Accounts, RelyingParty]:
        if self.accounts is None or self.rp is None:
            raise AccountsError("accounts_off")
        return self.accounts, self.rp

    async def signed_in(self, player: Player) -> Account:
        """The live account of a token naming a live session, else ``not_signed_in``."""
        accounts, _ = self._ports()
        if player.session is None:
            raise AccountsError("not_signed_in")
        session = await accounts.session(player.session)
        if session is None or session.revoked_at is not None or session.player_id != player.id:
            raise AccountsError("not_signed_in", "This device was signed out; sign in again")
        account = await accounts.account(player.id)
        if account is None or account.handle is None:
            raise AccountsError("not_signed_in", "The account was deleted")
        return account

    def guest(self, token: str) -> Player:
        """The player a token names (``bad_token``, ``token_expired``)."""
        return self.signer.verify(token)

    async def publish_revoked(self, ids: Sequence[str]) -> None:
        if ids:
            payload = messages.encode(messages.SessionsRevoked(ids=tuple(ids)))
            await self.storage.publish_many([(ACCOUNTS_CHANNEL, payload)])

    def on_bus(self, message: messages.SessionsRevoked) -> None:
        self.on_revoked(frozenset(message.ids))

    async def _signed_in_reply(self, made: flows.SignedIn) -> dict[str, Any]:
        await self.publish_revoked(made.ended)
        name = made.account.handle or made.account.display_name
        player = Player(made.account.player_id, name, made.session.id)
        await self.storage.save_player(player.id, player.name, self.clock())
        return {
            "token": self.signer.sign(player),
            "player": {"id": player.id, "name": player.name},
            "handle": made.account.handle,
            "session": made.session.id,
        }

    async def purge_forever(self, interval_s: float = PURGE_INTERVAL_S) -> None:
        """Every ``interval_s``: :meth:`purge` (server/core/periodic.py: a database that
        does not answer is logged once per outage and tried again next time)."""
        if self.accounts is None:
            return
        await run_periodically(self.purge, interval_s, name="accounts purge", log=log)

    async def purge(self) -> None:
        """Delete expired challenges and link codes and rate events older than a day
        (each process does it; deleting twice is harmless)."""
        if self.accounts is not None:
            purged = await self.accounts.purge(now=self.clock())
            log.debug("accounts purged", extra={"rows": purged})

    def config(self) -> dict[str, Any]:
        """What a page asks before any ceremony: that this server keeps accounts (else
        ``accounts_off``), and the relying party id its passkeys are bound to (a page
        opened at another name, or at an IP address, cannot use them)."""
        _, rp = self._ports()
        return {"rp_id": rp.id}

    # --- save my progress: a guest becomes an account (same player id)

    async def account_start(self, player: Player, handle: str, address: str) -> Any:
        accounts, rp = self._ports()
        try:
            options = await flows.start_account(
                accounts, rp, player_id=player.id, handle=handle, address=address, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return json.loads(options)

    async def account_finish(
        self, player: Player, handle: str, response: Response, address: str, device: str
    ) -> dict[str, Any]:
        accounts, rp = self._ports()
        try:
            made = await flows.finish_account(
                accounts,
                rp,
                response,
                player_id=player.id,
                handle=handle,
                address=address,
                device=device,
                now=self.clock(),
            )
        except AccountError as err:
            raise _coded(err) from None
        return await self._signed_in_reply(made)

    # --- sign in on any device

    async def sign_in_start(self, address: str) -> Any:
        accounts, rp = self._ports()
        try:
            options = await flows.start_sign_in(accounts, rp, address=address, now=self.clock())
        except AccountError as err:
            raise _coded(err) from None
        return json.loads(options)

    async def sign_in_finish(self, response: Response, device: str) -> dict[str, Any]:
        accounts, rp = self._ports()
        try:
            made = await flows.finish_sign_in(
                accounts, rp, response, device=device, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return await self._signed_in_reply(made)

    # --- a signed-in device adds its own passkey

    async def passkey_add_start(self, player: Player, address: str) -> Any:
        accounts, rp = self._ports()
        await self.signed_in(player)
        try:
            options = await flows.start_add_passkey(
                accounts, rp, player_id=player.id, address=address, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return json.loads(options)

    async def passkey_add_finish(self, player: Player, response: Response) -> dict[str, Any]:
        accounts, rp = self._ports()
        await self.signed_in(player)
        try:
            await flows.finish_add_passkey(
                accounts, rp, response, player_id=player.id, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return {"passkeys": len(await accounts.passkeys(player.id))}

    # --- link codes and recovery codes

    async def link_code_create(self, player: Player) -> dict[str, Any]:
        accounts, _ = self._ports()
        await self.signed_in(player)
        try:
            code = await flows.issue_link_code(accounts, player_id=player.id, now=self.clock())
        except AccountError as err:
            raise _coded(err) from None
        return {"code": code.code, "expires_at": code.expires_at}

    async def link_code_redeem(self, code: str, address: str, device: str) -> dict[str, Any]:
        accounts, _ = self._ports()
        try:
            made = await flows.redeem_link_code(
                accounts, code, address=address, device=device, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return await self._signed_in_reply(made)

    async def recovery_codes_renew(self, player: Player) -> dict[str, Any]:
        accounts, _ = self._ports()
        await self.signed_in(player)
        try:
            shown = await flows.renew_recovery_codes(
                accounts, player_id=player.id, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return {"codes": shown}

    async def recovery_redeem(
        self, handle: str, code: str, address: str, device: str
    ) -> dict[str, Any]:
        accounts, _ = self._ports()
        try:
            made = await flows.recover(
                accounts, handle, code, address=address, device=device, now=self.clock()
            )
        except AccountError as err:
            raise _coded(err) from None
        return await self._signed_in_reply(made)

    # --- sessions

    async def sessions(self, player: Player) -> dict[str, Any]:
        accounts, _ = self._ports()
        await self.signed_in(player)
        live = await accounts.sessions(player.id)
        return {"sessions": [_session_json(s, player.session) for s in live]}

    async def session_revoke(self, player: Player, which: str) -> dict[str, Any]:
        """``which``: a session id, ``"others"`` (every one but this device's) or
        ``"all"`` (this one too)."""
        accounts, _ = self._ports()
        await self.signed_in(player)
        now = self.clock()
        try:
            if which == "all":
                ended = await accounts.revoke_sessions(player.id, now=now)
            elif which == "others":
                ended = await accounts.revoke_sessions(player.id, now=now, keep=player.session)
            else:
                await accounts.revoke_session(player.id, which, now=now)
                ended = (which,)
        except AccountError as err:
            raise _coded(err) from None
        await self.publish_revoked(ended)
        return {"revoked": list(ended)}

    # --- the account page, my data, deletion, the public profile

    async def me(self, player: Player) -> dict[str, Any]:
        accounts, _ = self._ports()
        account = await self.signed_in(player)
        passkeys = await accounts.passkeys(player.id)
        live = await accounts.sessions(player.id)
        return {
            "player": {"id": player.id, "name": player.name},
            "handle": account.handle,
            "created_at": account.created_at,
            "passkeys": [
                {
                    "id": key.credential_id,
                    "created_at": key.created_at,
                    "last_used_at": key.last_used_at,
                    "backed_up": key.backed_up,
                }
                for key in passkeys
            ],
            "sessions": [_session_json(s, player.session) for s in live],
            "daily": await self._daily_history(player.id),
        }

    async def my_data(self, player: Player) -> dict[str, Any]:
        """Everything kept about the player (Download my data)."""
        page = await self.me(player)
        page["recovery_codes_set"] = (await self._ports()[0].recovery_codes(player.id)) is not None
        return page

    async def account_delete(self, player: Player) -> dict[str, Any]:
        accounts, _ = self._ports()
        await self.signed_in(player)
        try:
            ended = await accounts.delete_account(player.id, now=self.clock())
        except AccountError as err:
            raise _coded(err) from None
        await self.publish_revoked(ended)
        await self._forget_name(player.id)
        return {"deleted": True, "revoked": list(ended)}

    async def _forget_name(self, player_id: str) -> None:
        """The results of a deleted account read "deleted player": the archive's, and the
        daily's still in Redis (every day the player has a result on, which covers the
        boards the outbox has not archived yet: today's and the two days before, as
        ``put_revealed_days`` reads them). After the deletion (which stands either way):
        a store that does not answer is logged, and the old name stays on its records."""
        try:
            played = await self.daily.player_history(player_id)
            today = Day.of(self.clock())
            recent = {str(today.previous(back)) for back in range(UNARCHIVED_DAYS)}
            await self.daily.rename_player(sorted(played.keys() | recent), player_id, DELETED_NAME)
        except ServerError as err:
            log.error("deleted account's name kept on the daily", extra={"code": err.code})
        if self.archive is None:
            return
        try:
            await self.archive.rename_player(player_id, DELETED_NAME)
        except ServerError as err:
            log.error("deleted account's name kept in the archive", extra={"code": err.code})

    async def profile(self, handle: str) -> dict[str, Any] | None:
        """The public profile of a live account, or None (no such handle)."""
        accounts, _ = self._ports()
        account = await accounts.account_by_handle(handle)
        if account is None or account.handle is None:
            return None
        profile = {
            "handle": account.handle,
            "created_at": account.created_at,
            "daily": await self._daily_history(account.player_id),
        }
        if self.archive is not None:
            profile.update(await self._archived(account.player_id))
        return profile

    async def _archived(self, player_id: str) -> dict[str, Any]:
        """A profile's ``recent_games`` and ``tournaments``; none when the archive does
        not answer (archive_unavailable: the rest of the profile still shows)."""
        assert self.archive is not None
        try:
            games = await self.archive.history(player_id, limit=str(RECENT_GAMES))
            tournaments = await self.archive.tournaments(player_id, limit=RECENT_TOURNAMENTS)
        except ServerError:
            return {}
        return {"recent_games": games["games"], "tournaments": tournaments["tournaments"]}

    async def _daily_history(self, player_id: str) -> dict[str, Any]:
        """Streaks, best times and the latest results of the daily (``daily_me``'s)."""
        history = await self.daily.player_history(player_id)
        return daily_summary(history, Day.of(self.clock()))


def player_of_token(requests: AccountRequests, token: str | None) -> Player:
    if not token:
        raise AuthError("not_authenticated", "Send the player's token (Authorization: Bearer)")
    return requests.guest(token)


__all__ = [
    "ACCOUNTS_CHANNEL",
    "RECENT_GAMES",
    "RECENT_TOURNAMENTS",
    "AccountRequests",
    "player_of_token",
]
