"""The Accounts port's contract, run against both adapters (memory and PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest

from server.core.accounts import (
    LINK_CODE_TTL_MS,
    MAX_PASSKEYS,
    MAX_SESSIONS,
    RECOVERY_CODE_LENGTH,
    AccountError,
    Accounts,
    Ceremony,
    Challenge,
    LinkCode,
    RateLimit,
    format_recovery_code,
    match_recovery_code,
    new_recovery_codes,
    random_code,
)
from server.storage.postgres_accounts import connect
from tests.accounts.support import T0, passkey_for, player_id, snapshot
from tests.archive.conftest import _create_schema, _drop_schema


async def make(accounts: Accounts, handle: str, *, now: int = T0) -> str:
    player = player_id()
    await accounts.create_account(player, handle, passkey_for(player), now=now)
    return player


async def code_of(coro: object) -> str:
    with pytest.raises(AccountError) as caught:
        await coro  # type: ignore[misc]
    return caught.value.code


async def test_an_account_keeps_the_guest_player_id(accounts: Accounts) -> None:
    player = player_id()
    key = passkey_for(player)
    account = await accounts.create_account(player, " Ada ", key, now=T0)
    assert (account.player_id, account.handle, account.handle_key) == (player, "Ada", "ada")
    assert await accounts.account(player) == account
    assert await accounts.account_by_handle("ADA") == account
    assert await accounts.passkeys(player) == (key,)
    assert await accounts.passkey(key.credential_id) == key
    assert await code_of(accounts.create_account(player, "Other", passkey_for(player), now=T0)) == (
        "account_exists"
    )


@pytest.mark.parametrize(
    "taken, attempt",
    [
        ("Ada", "ada"),
        ("Ada", "ADA"),
        ("Ada", "\N{CYRILLIC CAPITAL LETTER A}da"),  # Cyrillic А
        ("Ada", "\N{FULLWIDTH LATIN CAPITAL LETTER A}da"),  # NFKC folds it
        ("bob42", "B0B42"),  # 0 looks like O
        ("marie", "rnarie"),  # rn looks like m
    ],
)
async def test_handles_are_unique_by_case_and_look(
    accounts: Accounts, taken: str, attempt: str
) -> None:
    first = await make(accounts, taken)
    other = player_id()
    before = await snapshot(accounts, first, other)
    assert await code_of(accounts.create_account(other, attempt, passkey_for(other), now=T0)) == (
        "handle_taken"
    )
    assert await snapshot(accounts, first, other) == before
    assert (await accounts.account_by_handle(attempt)) == (await accounts.account(first))


async def test_bad_and_reserved_handles_are_refused(accounts: Accounts) -> None:
    player = player_id()
    for handle, code in [
        ("ab", "bad_handle"),
        ("a" * 21, "bad_handle"),
        ("ada lovelace", "bad_handle"),
        ("ada!", "bad_handle"),
        ("Admin", "handle_reserved"),
        ("\N{CYRILLIC CAPITAL LETTER A}dmin", "handle_reserved"),
        ("Guest-1A2B", "handle_reserved"),
        ("crescent", "handle_reserved"),
    ]:
        refused = await code_of(
            accounts.create_account(player, handle, passkey_for(player), now=T0)
        )
        assert refused == code, handle
    assert await accounts.account(player) is None


async def test_two_racing_creates_of_one_handle_one_wins(accounts: Accounts) -> None:
    players = [player_id() for _ in range(6)]
    spellings = ["Racer", "racer", "RACER", "R\N{CYRILLIC SMALL LETTER A}cer", "racer", "Racer"]
    results = await asyncio.gather(
        *(
            accounts.create_account(p, h, passkey_for(p), now=T0)
            for p, h in zip(players, spellings, strict=True)
        ),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, AccountError)]
    assert len(winners) == 1 and len(losers) == 5, results
    assert {e.code for e in losers} == {"handle_taken"}
    winner = winners[0]
    for player in players:
        expected = 1 if player == winner.player_id else 0
        assert len(await accounts.passkeys(player)) == expected
        assert (await accounts.account(player) is not None) == bool(expected)


async def test_a_credential_belongs_to_one_account(accounts: Accounts) -> None:
    first = await make(accounts, "first")
    [key] = await accounts.passkeys(first)
    other = player_id()
    clash = passkey_for(other, credential_id=key.credential_id)
    assert await code_of(accounts.create_account(other, "second", clash, now=T0)) == (
        "credential_taken"
    )
    assert await accounts.account(other) is None
    assert await accounts.account_by_handle("second") is None
    assert await code_of(
        accounts.add_passkey(passkey_for(first, credential_id=key.credential_id))
    ) == ("credential_taken")
    assert await code_of(accounts.add_passkey(passkey_for(other))) == "no_account"
    added = passkey_for(first, now=T0 + 5)
    await accounts.add_passkey(added)
    assert await accounts.passkeys(first) == (key, added)


async def test_a_counter_is_stored_only_moving_forward(accounts: Accounts) -> None:
    player = await make(accounts, "counter")
    [key] = await accounts.passkeys(player)
    assert await accounts.record_passkey_use(key.credential_id, 0, now=T0 + 1)  # 0 and 0
    assert await accounts.record_passkey_use(key.credential_id, 5, now=T0 + 2)
    assert not await accounts.record_passkey_use(key.credential_id, 5, now=T0 + 3)
    assert not await accounts.record_passkey_use(key.credential_id, 4, now=T0 + 4)
    assert not await accounts.record_passkey_use(key.credential_id, 0, now=T0 + 5)
    stored = await accounts.passkey(key.credential_id)
    assert stored is not None and (stored.sign_count, stored.last_used_at) == (5, T0 + 2)
    assert not await accounts.record_passkey_use("no-such-credential", 9, now=T0)


async def test_sessions_list_revoke_one_and_all(accounts: Accounts) -> None:
    player = await make(accounts, "sessions")
    other = await make(accounts, "someone")
    laptop = (await accounts.open_session(player, "laptop", now=T0 + 1)).session
    phone = (await accounts.open_session(player, "phone", now=T0 + 2)).session
    tablet = (await accounts.open_session(player, "tablet", now=T0 + 3)).session
    theirs = (await accounts.open_session(other, "theirs", now=T0 + 4)).session
    assert [s.id for s in await accounts.sessions(player)] == [tablet.id, phone.id, laptop.id]
    assert await accounts.touch_session(phone.id, now=T0 + 50)
    touched = await accounts.session(phone.id)
    assert touched is not None and touched.last_seen_at == T0 + 50

    assert await code_of(accounts.revoke_session(other, phone.id, now=T0 + 60)) == (
        "unknown_session"
    )
    await accounts.revoke_session(player, phone.id, now=T0 + 60)
    revoked = await accounts.session(phone.id)
    assert revoked is not None and revoked.revoked_at == T0 + 60
    assert not await accounts.touch_session(phone.id, now=T0 + 70)
    assert await code_of(accounts.revoke_session(player, phone.id, now=T0 + 61)) == (
        "unknown_session"
    )
    assert [s.id for s in await accounts.sessions(player)] == [tablet.id, laptop.id]

    assert await accounts.revoke_sessions(player, now=T0 + 80, keep=laptop.id) == (tablet.id,)
    assert [s.id for s in await accounts.sessions(player)] == [laptop.id]
    assert await accounts.revoke_sessions(player, now=T0 + 90) == (laptop.id,)
    assert await accounts.sessions(player) == ()
    assert [s.id for s in await accounts.sessions(other)] == [theirs.id]
    assert await code_of(accounts.open_session(player_id(), "nobody", now=T0)) == "no_account"


async def test_a_link_code_works_once_within_five_minutes(accounts: Accounts) -> None:
    player = await make(accounts, "linker")
    code = LinkCode.new(player, now=T0)
    assert len(code.code) == 8 and code.expires_at == T0 + LINK_CODE_TTL_MS
    await accounts.add_link_code(code)
    typed = f" {code.code[:4].lower()}-{code.code[4:]} "  # as a person types it
    assert await accounts.redeem_link_code(typed, now=T0 + 1_000) == player
    assert await code_of(accounts.redeem_link_code(code.code, now=T0 + 2_000)) == "link_code_used"

    late = LinkCode.new(player, now=T0)
    await accounts.add_link_code(late)
    assert await code_of(accounts.redeem_link_code(late.code, now=T0 + LINK_CODE_TTL_MS)) == (
        "link_code_expired"
    )
    unknown = random_code(8)
    assert await code_of(accounts.redeem_link_code(unknown, now=T0)) == "link_code_unknown"
    assert await code_of(accounts.redeem_link_code("short", now=T0)) == "bad_link_code"
    assert await code_of(accounts.add_link_code(LinkCode.new(player_id(), now=T0))) == "no_account"


async def test_concurrent_redemptions_of_a_code_one_wins(accounts: Accounts) -> None:
    player = await make(accounts, "racing")
    code = LinkCode.new(player, now=T0)
    await accounts.add_link_code(code)
    results = await asyncio.gather(
        *(accounts.redeem_link_code(code.code, now=T0 + 1) for _ in range(5)),
        return_exceptions=True,
    )
    assert results.count(player) == 1
    assert {r.code for r in results if isinstance(r, AccountError)} == {"link_code_used"}


async def test_recovery_codes_work_once(accounts: Accounts) -> None:
    player = await make(accounts, "recover")
    shown, stored = new_recovery_codes()
    assert len(shown) == 10 and len(set(shown)) == 10
    assert all(len(c) == RECOVERY_CODE_LENGTH + 1 and c[5] == "-" for c in shown)
    await accounts.set_recovery_codes(player, stored, now=T0)
    kept = await accounts.recovery_codes(player)
    assert kept is not None and set(kept.digests) == set(stored.digests)

    digest = match_recovery_code(shown[3].lower(), kept)
    assert digest is not None
    assert await accounts.use_recovery_code(player, digest, now=T0 + 1)
    assert not await accounts.use_recovery_code(player, digest, now=T0 + 2)
    after = await accounts.recovery_codes(player)
    assert after is not None and len(after.digests) == 9
    assert match_recovery_code(shown[3], after) is None  # used: no longer matches
    assert match_recovery_code(format_recovery_code(random_code(10)), after) is None

    # a new set replaces the old one whole
    _, fresh = new_recovery_codes()
    await accounts.set_recovery_codes(player, fresh, now=T0 + 3)
    replaced = await accounts.recovery_codes(player)
    assert replaced is not None and match_recovery_code(shown[0], replaced) is None
    assert await code_of(accounts.set_recovery_codes(player_id(), fresh, now=T0)) == "no_account"


async def test_a_challenge_is_taken_once(accounts: Accounts) -> None:
    def challenge(value: str, expires_at: int = T0 + 300_000) -> Challenge:
        return Challenge(value, Ceremony.AUTHENTICATE, None, T0, expires_at)

    await accounts.issue_challenge(challenge("aaaa"))
    assert await accounts.take_challenge("aaaa", now=T0 + 1) == challenge("aaaa")
    assert await code_of(accounts.take_challenge("aaaa", now=T0 + 2)) == "challenge_replayed"
    assert await code_of(accounts.take_challenge("bbbb", now=T0 + 2)) == "unknown_challenge"
    await accounts.issue_challenge(challenge("cccc", expires_at=T0 + 10))
    assert await code_of(accounts.take_challenge("cccc", now=T0 + 10)) == "challenge_expired"
    assert await code_of(accounts.take_challenge("cccc", now=T0 + 11)) == "challenge_replayed"

    await accounts.issue_challenge(challenge("dddd"))
    results = await asyncio.gather(
        *(accounts.take_challenge("dddd", now=T0 + 3) for _ in range(5)), return_exceptions=True
    )
    assert results.count(challenge("dddd")) == 1
    assert {r.code for r in results if isinstance(r, AccountError)} == {"challenge_replayed"}


async def test_rate_limits_count_what_fits(accounts: Accounts) -> None:
    three_a_minute = RateLimit("test", 3, 60_000)
    decisions = [await accounts.hit(three_a_minute, "1.2.3.4", now=T0 + i) for i in range(5)]
    assert [d.allowed for d in decisions] == [True, True, True, False, False]
    assert decisions[3].retry_after_ms == 60_000 - 3
    assert (await accounts.hit(three_a_minute, "5.6.7.8", now=T0 + 5)).allowed  # per subject
    # refusals were not counted: the window frees up 60 s after the first event
    assert (await accounts.hit(three_a_minute, "1.2.3.4", now=T0 + 60_000)).allowed
    assert not (await accounts.hit(three_a_minute, "1.2.3.4", now=T0 + 60_000)).allowed


async def test_concurrent_hits_never_exceed_the_limit(accounts: Accounts) -> None:
    limit = RateLimit("burst", 4, 60_000)
    decisions = await asyncio.gather(*(accounts.hit(limit, "a", now=T0) for _ in range(12)))
    assert sum(d.allowed for d in decisions) == 4


async def test_deleting_an_account_keeps_only_the_player_id(accounts: Accounts) -> None:
    player = await make(accounts, "Leaving")
    stays = await make(accounts, "Staying")
    await accounts.add_passkey(passkey_for(player, now=T0 + 1))
    one = (await accounts.open_session(player, "one", now=T0 + 2)).session
    two = (await accounts.open_session(player, "two", now=T0 + 3)).session
    await accounts.revoke_session(player, one.id, now=T0 + 4)
    await accounts.add_link_code(link := LinkCode.new(player, now=T0 + 5))
    _, codes = new_recovery_codes()
    await accounts.set_recovery_codes(player, codes, now=T0 + 5)
    kept_before = await snapshot(accounts, stays)

    assert await accounts.delete_account(player, now=T0 + 10) == (two.id,)
    gone = await accounts.account(player)
    assert gone is not None
    assert (gone.player_id, gone.handle, gone.handle_key, gone.deleted_at) == (
        player,
        None,
        None,
        T0 + 10,
    )
    assert gone.display_name == "deleted player"
    assert await accounts.passkeys(player) == ()
    assert await accounts.sessions(player) == ()
    assert await accounts.session(two.id) is None
    assert await accounts.recovery_codes(player) is None
    assert await code_of(accounts.redeem_link_code(link.code, now=T0 + 11)) == "link_code_unknown"
    assert await accounts.account_by_handle("leaving") is None
    assert await snapshot(accounts, stays) == kept_before
    assert await code_of(accounts.delete_account(player, now=T0 + 12)) == "no_account"
    assert await code_of(accounts.open_session(player, "again", now=T0 + 12)) == "no_account"
    # the handle is free again for someone else; the old player id is not reusable
    assert await make(accounts, "LEAVING")
    assert await code_of(
        accounts.create_account(player, "comeback", passkey_for(player), now=T0 + 13)
    ) == ("account_exists")


async def test_purge_drops_what_has_expired(accounts: Accounts) -> None:
    player = await make(accounts, "purger")
    await accounts.add_link_code(LinkCode.new(player, now=T0))
    await accounts.issue_challenge(Challenge("eeee", Ceremony.REGISTER, player, T0, T0 + 1_000))
    await accounts.hit(RateLimit("old", 1, 1_000), "x", now=T0)
    assert await accounts.purge(now=T0 + 1_000) == 0  # nothing past its time yet
    assert await accounts.purge(now=T0 + 2 * 86_400_000) >= 3
    assert await code_of(accounts.take_challenge("eeee", now=T0 + 2 * 86_400_000)) == (
        "unknown_challenge"
    )


async def test_creates_racing_from_two_processes_one_wins(postgres_dsn: str) -> None:
    """Two servers (two pools: separate sessions, as two processes have) create the same
    handle at once, many times over: the unique index lets exactly one through each time."""
    schema = await _create_schema(postgres_dsn)
    settings = {"search_path": schema}
    stores = [await connect(postgres_dsn, max_size=2, server_settings=settings) for _ in range(2)]
    try:
        for round_ in range(10):
            handle = f"race{round_}"
            players = [player_id(), player_id()]
            results = await asyncio.gather(
                stores[0].create_account(players[0], handle, passkey_for(players[0]), now=T0),
                stores[1].create_account(
                    players[1], handle.upper(), passkey_for(players[1]), now=T0
                ),
                return_exceptions=True,
            )
            codes = sorted(r.code if isinstance(r, AccountError) else "won" for r in results)
            assert codes == ["handle_taken", "won"], results
    finally:
        for store in stores:
            await store.close()
        await _drop_schema(postgres_dsn, schema)


async def test_live_sessions_and_passkeys_are_bounded(accounts: Accounts) -> None:
    player = await make(accounts, "busy")
    first = (await accounts.open_session(player, "first", now=T0)).session
    kept = [(await accounts.open_session(player, f"d{n}", now=T0 + 1 + n)) for n in range(49)]
    assert all(opened.ended == () for opened in kept)
    # the first was seen again lately: the least recently seen is d0 now
    assert await accounts.touch_session(first.id, now=T0 + 100)
    opened = await accounts.open_session(player, "one more", now=T0 + 200)
    assert opened.ended == (kept[0].session.id,)
    assert len(await accounts.sessions(player)) == MAX_SESSIONS
    assert first.id in {s.id for s in await accounts.sessions(player)}

    for n in range(MAX_PASSKEYS - 1):
        await accounts.add_passkey(passkey_for(player, now=T0 + n))
    assert await code_of(accounts.add_passkey(passkey_for(player))) == "too_many_passkeys"
    assert len(await accounts.passkeys(player)) == MAX_PASSKEYS
