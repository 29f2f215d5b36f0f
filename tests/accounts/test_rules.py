"""The pure rules of server/core/accounts.py: handles, codes, rate limits."""

from __future__ import annotations

import doctest
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import server.core.account_flows
import server.core.accounts
import server.core.passkeys
from server.core.accounts import (
    CODE_ALPHABET,
    LINK_CODE_LENGTH,
    AccountError,
    LinkCode,
    RateLimit,
    check_handle,
    decide,
    handle_key,
    link_code_matches,
    normalise_code,
)


@pytest.mark.parametrize(
    "module", [server.core.accounts, server.core.passkeys, server.core.account_flows]
)
def test_doctests(module: object) -> None:
    failed, _ = doctest.testmod(module)  # type: ignore[arg-type]
    assert failed == 0


@pytest.mark.parametrize(
    "one, other",
    [
        ("Ada", "ada"),
        ("Ada", "\N{CYRILLIC CAPITAL LETTER A}da"),
        ("Ada", "\N{GREEK CAPITAL LETTER ALPHA}da"),
        ("Ada", "\N{MATHEMATICAL BOLD CAPITAL A}da"),
        ("paypal", "p\N{CYRILLIC SMALL LETTER A}yp\N{CYRILLIC SMALL LETTER A}l"),
        ("Straße", "STRASSE"),  # case folding
        ("bob", "b0b"),  # TR39 maps 0 to O
        ("modern", "rnodern"),  # and m to rn
    ],
)
def test_look_alikes_share_a_key(one: str, other: str) -> None:
    assert handle_key(one) == handle_key(other)


@pytest.mark.parametrize("one, other", [("Ada", "Adb"), ("Zoë", "Zoe"), ("anna", "anna1")])
def test_different_names_keep_different_keys(one: str, other: str) -> None:
    assert handle_key(one) != handle_key(other)


HANDLE_CHARS = st.characters(categories=("Lu", "Ll", "Lo", "Nd"))


@settings(max_examples=200)
@given(st.text(HANDLE_CHARS, min_size=3, max_size=20))
def test_a_key_ignores_case(handle: str) -> None:
    assert handle_key(handle) == handle_key(handle.upper()) == handle_key(handle.casefold())


@settings(max_examples=200)
@given(st.text(max_size=30))
def test_check_handle_accepts_or_refuses_with_a_code(raw: str) -> None:
    try:
        handle = check_handle(raw)
    except AccountError as err:
        assert err.code in {"bad_handle", "handle_reserved"}
        return
    assert 3 <= len(handle) <= 20
    assert handle == unicodedata.normalize("NFKC", handle) == check_handle(handle)


def test_link_codes_read_unambiguously() -> None:
    assert not set("01OILUV") & set(CODE_ALPHABET)
    codes = {LinkCode.new("p", now=0).code for _ in range(200)}
    assert len(codes) == 200
    assert all(len(c) == LINK_CODE_LENGTH and set(c) <= set(CODE_ALPHABET) for c in codes)
    code = codes.pop()
    assert link_code_matches(code.lower(), code)
    assert link_code_matches(f"{code[:4]} - {code[4:]}", code)
    assert not link_code_matches(code[:-1], code)
    assert not link_code_matches("0" * 8, code)
    with pytest.raises(AccountError) as caught:
        normalise_code("0OIL1234", LINK_CODE_LENGTH)
    assert caught.value.code == "bad_link_code"


@given(
    times=st.lists(st.integers(0, 10_000), max_size=12),
    limit=st.integers(1, 5),
    window=st.integers(1, 5_000),
    now=st.integers(0, 12_000),
)
def test_a_rate_decision_counts_the_window(
    times: list[int], limit: int, window: int, now: int
) -> None:
    rule = RateLimit("t", limit, window)
    decision = decide(times, rule, now=now)
    in_window = [t for t in times if now - window < t <= now]
    assert decision.allowed == (len(in_window) < limit)
    if not decision.allowed:
        # waiting exactly that long is enough, a millisecond less is not
        later = now + decision.retry_after_ms
        assert decide(in_window, rule, now=later).allowed
        assert not decide(in_window, rule, now=later - 1).allowed
