"""The WebAuthn ceremonies end to end over the port (both adapters) with a software
authenticator; every refusal has its code and stores nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import cbor2
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

from bench.soft_authenticator import UV, SoftAuthenticator
from server.core import account_flows as flows
from server.core.accounts import CHALLENGE_TTL_MS, AccountError, Accounts, RateLimit
from server.core.passkeys import RelyingParty
from server.storage.memory_accounts import MemoryAccounts
from tests.accounts.conftest import ORIGIN, RP
from tests.accounts.support import T0, player_id, snapshot


async def code_of(coro: object) -> str:
    with pytest.raises(AccountError) as caught:
        await coro  # type: ignore[misc]
    return caught.value.code


async def signed_up(
    accounts: Accounts, authenticator: SoftAuthenticator, handle: str = "Ada", fmt: str = "none"
) -> str:
    player = player_id()
    options = await flows.start_account(
        accounts, RP, player_id=player, handle=handle, address="a", now=T0
    )
    response = authenticator.register(options, fmt=fmt)
    await flows.finish_account(
        accounts, RP, response, player_id=player, handle=handle, address="a", device="d", now=T0
    )
    return player


@pytest.mark.parametrize("fmt", ["none", "packed"])
async def test_a_guest_saves_progress_then_signs_in_anywhere(
    accounts: Accounts, authenticator: SoftAuthenticator, fmt: str
) -> None:
    player = player_id()
    options = await flows.start_account(
        accounts, RP, player_id=player, handle="Ada", address="a", now=T0
    )
    parsed = json.loads(options)
    assert parsed["authenticatorSelection"]["residentKey"] == "required"
    assert parsed["authenticatorSelection"]["userVerification"] == "preferred"
    assert parsed["rp"] == {"id": "localhost", "name": "Crescent Race"}
    response = authenticator.register(options, fmt=fmt)
    made = await flows.finish_account(
        accounts,
        RP,
        response,
        player_id=player,
        handle="Ada",
        address="10.0.0.1",
        device="Firefox on Linux",
        now=T0 + 1_000,
    )
    assert made.account.player_id == player and made.account.handle == "Ada"
    [key] = await accounts.passkeys(player)
    assert key.credential_id == authenticator.id and key.backed_up

    options = await flows.start_sign_in(accounts, RP, address="a", now=T0 + 2_000)
    assert json.loads(options)["allowCredentials"] == []  # discoverable: no list
    again = await flows.finish_sign_in(
        accounts, RP, authenticator.authenticate(options), device="phone", now=T0 + 3_000
    )
    assert again.account == made.account and again.session.id != made.session.id
    used = await accounts.passkey(authenticator.id)
    assert used is not None and (used.sign_count, used.last_used_at) == (1, T0 + 3_000)
    assert len(await accounts.sessions(player)) == 2


async def test_a_synced_passkey_with_no_counter_signs_in_again(accounts: Accounts) -> None:
    synced = SoftAuthenticator(ORIGIN, RP.id, counting=False)
    await signed_up(accounts, synced)
    for step in range(3):
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0 + step)
        await flows.finish_sign_in(
            accounts, RP, synced.authenticate(options), device="d", now=T0 + step
        )


async def test_a_linked_device_adds_its_own_passkey(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> None:
    player = await signed_up(accounts, authenticator)
    code = await flows.issue_link_code(accounts, player_id=player, now=T0 + 10)
    linked = await flows.redeem_link_code(
        accounts, code.code, address="b", device="laptop", now=T0 + 20
    )
    assert linked.account.player_id == player
    laptop = SoftAuthenticator(ORIGIN, RP.id)
    options = await flows.start_add_passkey(
        accounts, RP, player_id=player, address="a", now=T0 + 30
    )
    assert [c["id"] for c in json.loads(options)["excludeCredentials"]] == [authenticator.id]
    await flows.finish_add_passkey(
        accounts, RP, laptop.register(options), player_id=player, now=T0 + 40
    )
    assert [k.credential_id for k in await accounts.passkeys(player)] == [
        authenticator.id,
        laptop.id,
    ]


async def test_link_code_attempts_are_rate_limited_per_address(accounts: Accounts) -> None:
    for _ in range(10):
        assert await code_of(
            flows.redeem_link_code(accounts, "AAAAAAAA", address="x", device="d", now=T0)
        ) == ("link_code_unknown")
    assert await code_of(
        flows.redeem_link_code(accounts, "AAAAAAAA", address="x", device="d", now=T0)
    ) == ("rate_limited")
    assert await code_of(
        flows.redeem_link_code(accounts, "AAAAAAAA", address="y", device="d", now=T0)
    ) == ("link_code_unknown")


async def test_a_recovery_code_signs_in_once(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> None:
    player = await signed_up(accounts, authenticator, handle="Grace")
    shown = await flows.renew_recovery_codes(accounts, player_id=player, now=T0)
    signed = await flows.recover(
        accounts, "grace", shown[0], address="z", device="new phone", now=T0 + 1
    )
    assert signed.account.player_id == player
    assert await code_of(
        flows.recover(accounts, "grace", shown[0], address="z", device="d", now=T0 + 2)
    ) == ("bad_recovery_code")
    assert await code_of(
        flows.recover(accounts, "nobody", shown[1], address="z", device="d", now=T0 + 2)
    ) == ("bad_recovery_code")


async def test_account_creation_is_limited_per_address(accounts: Accounts) -> None:
    for n in range(3):
        await signed_up(accounts, SoftAuthenticator(ORIGIN, RP.id), handle=f"sock{n}")
    player = player_id()
    options = await flows.start_account(
        accounts, RP, player_id=player, handle="sock3", address="a", now=T0
    )
    response = SoftAuthenticator(ORIGIN, RP.id).register(options)
    assert await code_of(
        flows.finish_account(
            accounts,
            RP,
            response,
            player_id=player,
            handle="sock3",
            address="a",
            device="d",
            now=T0,
        )
    ) == ("rate_limited")
    assert await accounts.account(player) is None


# --- refusals: each coded, nothing stored


async def registration_refused(accounts: Accounts, **tamper: Any) -> tuple[str, bool]:
    """The code a tampered registration is refused with, and whether nothing changed."""
    player = player_id()
    options = await flows.start_account(
        accounts, RP, player_id=player, handle="Eve", address="a", now=T0
    )
    response = SoftAuthenticator(ORIGIN, RP.id).register(options, **tamper)
    before = await snapshot(accounts, player)
    code = await code_of(
        flows.finish_account(
            accounts,
            RP,
            response,
            player_id=player,
            handle="Eve",
            address="a",
            device="d",
            now=T0 + 1,
        )
    )
    return code, await snapshot(accounts, player) == before


@pytest.mark.parametrize(
    "tamper, expected",
    [
        ({"origin": "https://evil.example"}, "wrong_origin"),
        ({"rp_id": "evil.example"}, "wrong_rp_id"),
        ({"kind": "webauthn.get"}, "wrong_ceremony"),
        ({"challenge": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, "unknown_challenge"),
        ({"flags": UV | 0x40}, "user_not_present"),
    ],
)
async def test_a_tampered_registration_is_refused(
    accounts: Accounts, tamper: dict[str, Any], expected: str
) -> None:
    assert await registration_refused(accounts, **tamper) == (expected, True)


async def signed_up_state(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> tuple[str, object]:
    player = await signed_up(accounts, authenticator)
    return player, (await snapshot(accounts, player), await accounts.passkey(authenticator.id))


async def test_refused_sign_ins_have_codes_and_store_nothing(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> None:
    player, state = await signed_up_state(accounts, authenticator)

    async def refused(response: dict[str, Any], *, now: int = T0 + 10) -> str:
        code = await code_of(flows.finish_sign_in(accounts, RP, response, device="d", now=now))
        assert (await snapshot(accounts, player), await accounts.passkey(authenticator.id)) == state
        return code

    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(authenticator.authenticate(options, origin="https://evil.example")) == (
        "wrong_origin"
    )
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(authenticator.authenticate(options, rp_id="evil.example")) == (
        "wrong_rp_id"
    )
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(authenticator.authenticate(options, challenge="bm90LWlzc3VlZA")) == (
        "unknown_challenge"
    )
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(authenticator.authenticate(options), now=T0 + CHALLENGE_TTL_MS) == (
        "challenge_expired"
    )
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(authenticator.authenticate(options, flags=UV)) == "user_not_present"
    stranger = SoftAuthenticator(ORIGIN, RP.id)
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    assert await refused(stranger.authenticate(options)) == "unknown_credential"
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    forged = authenticator.authenticate(options)
    forged["response"]["signature"] = stranger.authenticate(options)["response"]["signature"]
    assert await refused(forged) == "bad_signature"
    assert await refused({"id": "x"}) == "bad_response"
    assert await refused("not json") == "bad_response"  # type: ignore[arg-type]


async def test_a_replayed_assertion_is_refused(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> None:
    await signed_up(accounts, authenticator)
    options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
    response = authenticator.authenticate(options)
    await flows.finish_sign_in(accounts, RP, response, device="d", now=T0 + 1)
    player = (await accounts.passkey(authenticator.id)).player_id  # type: ignore[union-attr]
    before = await snapshot(accounts, player)
    assert await code_of(flows.finish_sign_in(accounts, RP, response, device="d", now=T0 + 2)) == (
        "challenge_replayed"
    )
    assert await snapshot(accounts, player) == before


async def test_a_counter_that_goes_back_is_refused(
    accounts: Accounts, authenticator: SoftAuthenticator
) -> None:
    player = await signed_up(accounts, authenticator)
    for _ in range(3):
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        await flows.finish_sign_in(
            accounts, RP, authenticator.authenticate(options), device="d", now=T0
        )
    before = (await snapshot(accounts, player), await accounts.passkey(authenticator.id))
    for count in (3, 1):  # the same count again, then lower: a cloned authenticator
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        response = authenticator.authenticate(options, sign_count=count)
        assert await code_of(
            flows.finish_sign_in(accounts, RP, response, device="d", now=T0 + 1)
        ) == ("sign_count_regressed")
    assert (await snapshot(accounts, player), await accounts.passkey(authenticator.id)) == before


# --- hypothesis: bad challenges, wrong origins, counters, replays (in memory: fast)

BAD_ORIGINS = st.one_of(
    st.sampled_from(
        [
            "http://localhost:8081",
            "https://localhost:8080",
            "http://127.0.0.1:8080",
            "http://localhost:8080/",
            "null",
            "",
        ]
    ),
    st.text(max_size=40).filter(lambda o: o != ORIGIN),
)
BAD_CHALLENGES = st.one_of(
    st.binary(min_size=0, max_size=64).map(bytes_to_base64url),
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=60
    ),
)
CHECKED = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _fresh() -> tuple[MemoryAccounts, SoftAuthenticator, str]:
    accounts = MemoryAccounts()
    authenticator = SoftAuthenticator(ORIGIN, RP.id)
    player = await signed_up(accounts, authenticator)
    for _ in range(2):
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        await flows.finish_sign_in(
            accounts, RP, authenticator.authenticate(options), device="d", now=T0
        )
    return accounts, authenticator, player


async def _refused_storing_nothing(
    accounts: MemoryAccounts, player: str, credential_id: str, response: Any
) -> str:
    before = (await snapshot(accounts, player), await accounts.passkey(credential_id))
    with pytest.raises(AccountError) as caught:
        await flows.finish_sign_in(accounts, RP, response, device="d", now=T0 + 1)
    after = (await snapshot(accounts, player), await accounts.passkey(credential_id))
    assert after == before
    return caught.value.code


@CHECKED
@given(origin=BAD_ORIGINS)
def test_any_wrong_origin_is_refused(origin: str) -> None:
    async def check() -> None:
        accounts, authenticator, player = await _fresh()
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        response = authenticator.authenticate(options, origin=origin)
        code = await _refused_storing_nothing(accounts, player, authenticator.id, response)
        assert code == "wrong_origin"

    _run(check())


@CHECKED
@given(challenge=BAD_CHALLENGES)
def test_any_bad_challenge_is_refused(challenge: str) -> None:
    async def check() -> None:
        accounts, authenticator, player = await _fresh()
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        response = authenticator.authenticate(options, challenge=challenge or "A")
        code = await _refused_storing_nothing(accounts, player, authenticator.id, response)
        assert code in {"unknown_challenge", "bad_response"}

    _run(check())


@CHECKED
@given(count=st.integers(min_value=0, max_value=2), replays=st.integers(1, 3))
def test_counters_going_back_and_replays_are_refused(count: int, replays: int) -> None:
    async def check() -> None:
        accounts, authenticator, player = await _fresh()  # the counter is at 3
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        stale = authenticator.authenticate(options, sign_count=count)
        code = await _refused_storing_nothing(accounts, player, authenticator.id, stale)
        assert code == "sign_count_regressed"
        options = await flows.start_sign_in(accounts, RP, address="a", now=T0)
        good = authenticator.authenticate(options)
        await flows.finish_sign_in(accounts, RP, good, device="d", now=T0 + 1)
        for _ in range(replays):
            code = await _refused_storing_nothing(accounts, player, authenticator.id, good)
            assert code == "challenge_replayed"

    _run(check())


@CHECKED
@given(
    junk=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["id", "rawId", "type", "response", "clientDataJSON", "signature"]),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    )
)
def test_any_malformed_response_gets_a_code(junk: Any) -> None:
    async def check() -> None:
        accounts, authenticator, player = await _fresh()
        await flows.start_sign_in(accounts, RP, address="a", now=T0)
        code = await _refused_storing_nothing(accounts, player, authenticator.id, junk)
        assert code in {"bad_response", "unknown_challenge"}

    _run(check())


def test_a_relying_party_needs_an_origin() -> None:
    with pytest.raises(ValueError):
        RelyingParty("localhost", "x", ())
    assert RateLimit("a", 1, 1).bucket("s") == "a:s"


async def test_ceremonies_started_are_limited_per_address(accounts: Accounts) -> None:
    """Each start stores a challenge: 30 a minute an address (an IPv6 /64)."""
    for n in range(30):
        await flows.start_sign_in(accounts, RP, address=f"2001:db8::{n:x}", now=T0)
    assert await code_of(flows.start_sign_in(accounts, RP, address="2001:db8::ff", now=T0)) == (
        "rate_limited"
    )
    await flows.start_sign_in(accounts, RP, address="2001:db8:0:1::1", now=T0)  # another /64
    await flows.start_sign_in(accounts, RP, address="2001:db8::1", now=T0 + 60_000)


async def test_a_registration_challenge_serves_only_its_player(accounts: Accounts) -> None:
    guest, intruder = player_id(), player_id()
    options = await flows.start_account(
        accounts, RP, player_id=guest, handle="Mine", address="a", now=T0
    )
    response = SoftAuthenticator(ORIGIN, RP.id).register(options)
    before = await snapshot(accounts, guest, intruder)
    assert await code_of(
        flows.finish_account(
            accounts,
            RP,
            response,
            player_id=intruder,
            handle="Mine",
            address="a",
            device="d",
            now=T0,
        )
    ) == ("unknown_challenge")
    assert await snapshot(accounts, guest, intruder) == before


async def test_a_forged_attestation_is_refused(accounts: Accounts) -> None:
    player = player_id()
    options = await flows.start_account(
        accounts, RP, player_id=player, handle="Forger", address="a", now=T0
    )
    response = SoftAuthenticator(ORIGIN, RP.id).register(options, fmt="packed")
    attestation = cbor2.loads(base64url_to_bytes(response["response"]["attestationObject"]))
    other_key = ec.generate_private_key(ec.SECP256R1())
    attestation["attStmt"]["sig"] = other_key.sign(b"something else", ec.ECDSA(hashes.SHA256()))
    response["response"]["attestationObject"] = bytes_to_base64url(cbor2.dumps(attestation))
    before = await snapshot(accounts, player)
    assert await code_of(
        flows.finish_account(
            accounts,
            RP,
            response,
            player_id=player,
            handle="Forger",
            address="a",
            device="d",
            now=T0,
        )
    ) == ("bad_attestation")
    assert await snapshot(accounts, player) == before


@CHECKED
@given(origin=BAD_ORIGINS)
def test_any_wrong_origin_is_refused_at_registration(origin: str) -> None:
    async def check() -> None:
        accounts = MemoryAccounts()
        player = player_id()
        options = await flows.start_account(
            accounts, RP, player_id=player, handle="Newcomer", address="a", now=T0
        )
        response = SoftAuthenticator(ORIGIN, RP.id).register(options, origin=origin)
        before = await snapshot(accounts, player)
        with pytest.raises(AccountError) as caught:
            await flows.finish_account(
                accounts,
                RP,
                response,
                player_id=player,
                handle="Newcomer",
                address="a",
                device="d",
                now=T0,
            )
        assert caught.value.code == "wrong_origin"
        assert await snapshot(accounts, player) == before

    _run(check())
