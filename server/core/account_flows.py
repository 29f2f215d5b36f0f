"""The account operations the routes and wire requests will call (docs/accounts.md):
each strings a ceremony or code check of :mod:`server.core.passkeys` and
:mod:`server.core.accounts` together with the :class:`Accounts` port.

The rule they keep: **nothing is stored on a refusal.** Each verifies first and writes
after; the one thing a failed attempt uses up is its challenge (single use: taken back
before verifying, so a second try with the same response is ``challenge_replayed``),
and a refused link or recovery code still counts against the address's rate limit.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from server.core.accounts import (
    ACCOUNTS_PER_ADDRESS,
    ACCOUNTS_PER_DAY,
    CHALLENGES_PER_ADDRESS,
    LINK_ATTEMPTS_PER_ADDRESS,
    LINK_CODES_PER_ACCOUNT,
    RECOVERY_ATTEMPTS_PER_ADDRESS,
    Account,
    Accounts,
    LinkCode,
    RateLimit,
    Session,
    address_subject,
    check_handle,
    device_label,
    match_recovery_code,
    new_recovery_codes,
    refuse,
)
from server.core.passkeys import (
    Assertion,
    RelyingParty,
    Response,
    authentication_options,
    registration_options,
    response_challenge,
    response_credential_id,
    verify_authentication,
    verify_registration,
)

# (a mark in a User-Agent, what a person calls it): the first that matches names it
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
)
_SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Windows", "Windows"),
    ("CrOS", "ChromeOS"),
    ("Mac OS", "Mac"),
    ("Linux", "Linux"),
)


def device_name(raw: str) -> str:
    """A session's device label: a browser's User-Agent as ``<browser> on <system>``
    (what the account page shows: a whole User-Agent is longer than the 80 characters
    kept, and its tail, which names the browser, would be cut); anything else as
    :func:`~server.core.accounts.device_label` keeps it.

    >>> device_name("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
    'Firefox on Linux'
    >>> device_name("Python/3.11 aiohttp/3.14")
    'Python/3.11 aiohttp/3.14'
    """
    browser = next((name for mark, name in _BROWSERS if mark in raw), None)
    system = next((name for mark, name in _SYSTEMS if mark in raw), None)
    if browser and system:
        return f"{browser} on {system}"
    return device_label(raw)


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A new session on ``account``; ``ended``: sessions it ended to stay within
    MAX_SESSIONS (their sockets are to be closed like a revoked session's)."""

    account: Account
    session: Session
    ended: tuple[str, ...] = ()


async def _limit(accounts: Accounts, limit: RateLimit, subject: str, *, now: int) -> None:
    decision = await accounts.hit(limit, subject, now=now)
    if not decision.allowed:
        raise refuse(
            "rate_limited",
            f"too many ({limit.name}): try again in {-(-decision.retry_after_ms // 1000)} s",
        )


async def _challenge_allowed(accounts: Accounts, address: str, *, now: int) -> None:
    """Every ceremony started stores a challenge: bounded per address (and by expiry)."""
    await _limit(accounts, CHALLENGES_PER_ADDRESS, address_subject(address), now=now)


async def start_account(
    accounts: Accounts,
    rp: RelyingParty,
    *,
    player_id: str,
    handle: str,
    address: str,
    now: int,
) -> str:
    """Save my progress, step 1: check the handle (free now; the unique index decides
    at step 2) and issue registration options (JSON) for the guest ``player_id``."""
    handle = check_handle(handle)
    if await accounts.account(player_id) is not None:
        raise refuse("account_exists", "this player already has an account")
    if await accounts.account_by_handle(handle) is not None:
        raise refuse("handle_taken", f"{handle!r} is taken")
    await _challenge_allowed(accounts, address, now=now)
    options, challenge = registration_options(rp, player_id=player_id, user_name=handle, now=now)
    await accounts.issue_challenge(challenge)
    return options


async def finish_account(
    accounts: Accounts,
    rp: RelyingParty,
    response: Response,
    *,
    player_id: str,
    handle: str,
    address: str,
    device: str,
    now: int,
) -> SignedIn:
    """Step 2: verify the new passkey, then (within the per-address and per-day creation
    limits) make the account and its first session."""
    handle = check_handle(handle)
    challenge = await accounts.take_challenge(response_challenge(response), now=now)
    passkey = verify_registration(rp, response, challenge, player_id=player_id, now=now)
    await _limit(accounts, ACCOUNTS_PER_ADDRESS, address_subject(address), now=now)
    await _limit(accounts, ACCOUNTS_PER_DAY, "all", now=now)
    account = await accounts.create_account(player_id, handle, passkey, now=now)
    opened = await accounts.open_session(player_id, device_name(device), now=now)
    return SignedIn(account, opened.session, opened.ended)


async def start_sign_in(accounts: Accounts, rp: RelyingParty, *, address: str, now: int) -> str:
    await _challenge_allowed(accounts, address, now=now)
    options, challenge = authentication_options(rp, now=now)
    await accounts.issue_challenge(challenge)
    return options


async def verify_sign_in(
    accounts: Accounts, rp: RelyingParty, response: Response, *, now: int
) -> Assertion:
    """An authentication response verified and its counter stored (nothing else)."""
    challenge = await accounts.take_challenge(response_challenge(response), now=now)
    passkey = await accounts.passkey(response_credential_id(response))
    assertion = verify_authentication(rp, response, challenge, passkey, now=now)
    if not await accounts.record_passkey_use(
        assertion.credential_id, assertion.sign_count, now=now
    ):
        # another process stored a counter at least as high since we read it
        raise refuse("sign_count_regressed", "the counter did not move forward")
    return assertion


async def finish_sign_in(
    accounts: Accounts, rp: RelyingParty, response: Response, *, device: str, now: int
) -> SignedIn:
    assertion = await verify_sign_in(accounts, rp, response, now=now)
    return await _open(accounts, assertion.player_id, device, now=now)


async def _open(accounts: Accounts, player_id: str, device: str, *, now: int) -> SignedIn:
    account = await accounts.account(player_id)
    if account is None or account.deleted_at is not None:
        raise refuse("no_account", "the account is gone")
    opened = await accounts.open_session(player_id, device_name(device), now=now)
    return SignedIn(account, opened.session, opened.ended)


async def start_add_passkey(
    accounts: Accounts, rp: RelyingParty, *, player_id: str, address: str, now: int
) -> str:
    """A signed-in device adds its own passkey (after a link code, say)."""
    account = await accounts.account(player_id)
    if account is None or account.handle is None:
        raise refuse("no_account", "sign in first")
    await _challenge_allowed(accounts, address, now=now)
    existing = await accounts.passkeys(player_id)
    options, challenge = registration_options(
        rp, player_id=player_id, user_name=account.handle, existing=existing, now=now
    )
    await accounts.issue_challenge(challenge)
    return options


async def finish_add_passkey(
    accounts: Accounts, rp: RelyingParty, response: Response, *, player_id: str, now: int
) -> None:
    challenge = await accounts.take_challenge(response_challenge(response), now=now)
    passkey = verify_registration(rp, response, challenge, player_id=player_id, now=now)
    await accounts.add_passkey(passkey)


async def issue_link_code(accounts: Accounts, *, player_id: str, now: int) -> LinkCode:
    """A code for the signed-in ``player_id`` to type on another device."""
    await _limit(accounts, LINK_CODES_PER_ACCOUNT, player_id, now=now)
    code = LinkCode.new(player_id, now=now)
    await accounts.add_link_code(code)
    return code


async def redeem_link_code(
    accounts: Accounts, typed: str, *, address: str, device: str, now: int
) -> SignedIn:
    await _limit(accounts, LINK_ATTEMPTS_PER_ADDRESS, address_subject(address), now=now)
    player_id = await accounts.redeem_link_code(typed, now=now)
    return await _open(accounts, player_id, device, now=now)


async def renew_recovery_codes(accounts: Accounts, *, player_id: str, now: int) -> list[str]:
    """Ten new codes to show once (the old ones stop working). Hashing ten codes with
    scrypt takes a second or so: done in a thread, off the event loop."""
    shown, stored = await asyncio.to_thread(new_recovery_codes)
    await accounts.set_recovery_codes(player_id, stored, now=now)
    return shown


async def recover(
    accounts: Accounts, handle: str, typed: str, *, address: str, device: str, now: int
) -> SignedIn:
    """Sign in with the handle and one recovery code (used up), e.g. to add a passkey on
    a new device after losing the old one."""
    await _limit(accounts, RECOVERY_ATTEMPTS_PER_ADDRESS, address_subject(address), now=now)
    account = await accounts.account_by_handle(handle)
    stored = await accounts.recovery_codes(account.player_id) if account else None
    if account is None or stored is None:
        raise refuse("bad_recovery_code", "no such handle or recovery code")
    digest = await asyncio.to_thread(match_recovery_code, typed, stored)
    if digest is None or not await accounts.use_recovery_code(account.player_id, digest, now=now):
        raise refuse("bad_recovery_code", "no such handle or recovery code")
    return await _open(accounts, account.player_id, device, now=now)
