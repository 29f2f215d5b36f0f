"""Deal codes CR2 (130-bit seeds, SHA-256 stream): parsing, formatting, golden layouts."""

from __future__ import annotations

import hashlib
import random
from collections import Counter

import pytest

from server.game import DealCode, Game, InvalidDealCode, Variant
from server.game.deal import CR2_SEED_LIMIT, Sha256Stream, cr2_key

# Full layouts (piles p1..p16, bottom to top), generated once by this
# implementation; reference_deal below re-derives them from docs/engine.md.
GOLDEN = {
    "CR2-N-00000000000000000000000001": [
        "9D 6C QC TS TD 2C",
        "2H QS QD JS 5D 9C",
        "QD 7S 5C 8H JH 2C",
        "8D 3S 4D 7S 9S 7C",
        "AD 3C QC JC 2S 9H",
        "8C 5C 7D 6H JD 8C",
        "8H 4D 9D JC TH 5D",
        "TD TS 6S 7C KD 9S",
        "5S 6S AH AS 5H JH",
        "9H 3S 8S 6C 8S 6D",
        "7D 4H AC 7H 4S QS",
        "QH 3D 8D 4H 4S KH",
        "KC 3C JD 3D 3H 2S",
        "KS 3H 4C TC 2H 5S",
        "4C 2D QH 2D 7H 9C",
        "6D JS TC 6H TH 5H",
    ],
    "CR2-F-ZZZZZZZZZZZZZZZZZZZZZZZZZZ": [
        "9D 3D AD JH TH 7D",
        "4D 8S 7H TH JC 3S",
        "3S 5D 2H QC AS TC",
        "QS 7S 8H AH 8S 6H",
        "3H 6C 9H 6S 4C 9H",
        "9S AC 4S 3H KH 7D",
        "7S 8D QS JD 3D 2D",
        "6D 9C 2H QC 3C TD",
        "JC 6H KD 6D 9S 4S",
        "2S 5H QD TD JH 5C",
        "TC 4C 7C JS TS QH",
        "2S JS 8C 2C 2D KS",
        "7H 6S 8D 9C 5S QH",
        "7C 4H 5S 6C 5C 3C",
        "2C 5H TS 4H QD 9D",
        "5D 8C 8H KC 4D JD",
    ],
    "CR2-O-CRESCENTRACE00000000000000": [
        "KD 4S JH JD 3D 7S",
        "KS 4S 3S 9S 3S 4D",
        "7C QD TD 8S QS 2C",
        "6S JC 5C 9H JC TH",
        "AS TS TC TH JD QC",
        "TS 4C 6D 5D 6H 3D",
        "4C 3C 5H 6D 7D 2H",
        "8S 7D QH 2S 2D AC",
        "TD 3H 9C 9C 5H 6H",
        "7H 8C 2S TC 8D 8C",
        "JS 2D KC 8H QH 2C",
        "5C JH QC 5S 6S 6C",
        "8H 9S 2H 7S 8D 6C",
        "JS 4H 7H AD QS 3C",
        "5D 3H QD 4H 4D 9D",
        "5S 9H AH KH 7C 9D",
    ],
    "CR2-R-7Z3KQ0M8XW4HB9TJ2DNPV6RC5G": [
        "QS 4S 8D 2D KH 7H",
        "4D 3H 6H JH 4D 8C",
        "JS QD KS 8D 7S 3H",
        "3C 8H 5D 5D 6D 2H",
        "9D 6C QC 5C TH 7C",
        "8H 7S 5C 4S 2H AC",
        "QC TC TC 5H 3D 5H",
        "9S 4C TH 9C 6S TD",
        "9C 8S 7H 2C QS JC",
        "3S 4H TD 2S 3D 8S",
        "3C JS 6C QH 4C 5S",
        "8C QD 6D JD 2D TS",
        "3S 6H JC AD 5S 7D",
        "KD 6S AS 9H KC TS",
        "7C AH 2C JH 9D 2S",
        "9H 4H QH 9S 7D JD",
    ],
}


def reference_deal(code: str) -> list[list[str]]:
    """CR2 written again from docs/engine.md alone, as a reimplementation would."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    _, variant, digits = code.upper().split("-")
    seed = 0
    for digit in digits:
        seed = seed * 32 + alphabet.index(digit)
    key = b"CR2" + variant.encode() + seed.to_bytes(17, "big")
    words: list[int] = []
    counter = 0

    def next64() -> int:
        nonlocal counter
        if not words:
            block = hashlib.sha256(key + counter.to_bytes(4, "big")).digest()
            counter += 1
            words.extend(int.from_bytes(block[8 * w : 8 * w + 8], "big") for w in range(4))
        return words.pop(0)

    deck = []
    for suit in "SHDC":
        for rank in "A23456789TJQK":
            deck += [rank + suit] * (1 if rank in "AK" else 2)
    for i in range(95, 0, -1):
        n = i + 1
        while True:
            x = next64()
            if x < 2**64 - (2**64 % n):
                break
        j = x % n
        deck[i], deck[j] = deck[j], deck[i]
    return [deck[6 * p : 6 * p + 6] for p in range(16)]


@pytest.mark.parametrize("code", sorted(GOLDEN))
def test_golden_layouts(code: str) -> None:
    piles = [pile.split() for pile in GOLDEN[code]]
    assert Game.from_code(code).position()["piles"] == piles
    assert reference_deal(code) == piles
    counts = Counter(card for pile in piles for card in pile)
    assert len(counts) == 52
    assert all(n == (1 if card[0] in "AK" else 2) for card, n in counts.items())


def test_golden_covers_every_variant() -> None:
    assert Counter(code.split("-")[1] for code in GOLDEN) == {"N": 1, "F": 1, "O": 1, "R": 1}


def test_worked_example_of_the_docs() -> None:
    code = DealCode.parse("CR2-N-00000000000000000000000001")
    key = cr2_key(code)
    assert key.hex() == "4352324e0000000000000000000000000000000001"
    stream = Sha256Stream(key)
    assert [stream.next() for _ in range(5)] == [
        0x4FD1D9D184B63B9F,
        0x3371C17C247F7E38,
        0x33DBFA5F1D25E556,
        0x2A672EF533CA3CED,
        0xB94641615698A094,
    ]  # the fifth word is the first of block 1


def test_the_stream_is_sha256_in_counter_mode() -> None:
    stream = Sha256Stream(b"key")
    words = [stream.next() for _ in range(8)]
    for block in range(2):
        digest = hashlib.sha256(b"key" + block.to_bytes(4, "big")).digest()
        assert words[4 * block : 4 * block + 4] == [
            int.from_bytes(digest[i : i + 8], "big") for i in range(0, 32, 8)
        ]


def test_every_seed_bit_and_the_variant_change_the_deal() -> None:
    base = DealCode(Variant.N, 0, 2)
    layouts = {str(Game.from_code(base).position()["piles"])}
    for bit in (0, 63, 64, 127, 129):
        layouts.add(str(Game.from_code(DealCode(Variant.N, 1 << bit, 2)).position()["piles"]))
    for variant in "FOR":
        layouts.add(str(Game.from_code(DealCode(Variant(variant), 0, 2)).position()["piles"]))
    assert len(layouts) == 9


# ---------------------------------------------------------------- codes


@pytest.mark.parametrize(
    ("text", "seed", "canonical"),
    [
        ("CR2-N-00000000000000000000000000", 0, "CR2-N-00000000000000000000000000"),
        ("cr2-n-00000000000000000000000001", 1, "CR2-N-00000000000000000000000001"),
        ("CR2-F-0000000000000000000000000z", 31, "CR2-F-0000000000000000000000000Z"),
        ("CR2-R-00000000000000000000000010", 32, "CR2-R-00000000000000000000000010"),
        ("CR2-O-ZZZZZZZZZZZZZZZZZZZZZZZZZZ", 2**130 - 1, "CR2-O-ZZZZZZZZZZZZZZZZZZZZZZZZZZ"),
        # Crockford's aliases: O reads as 0, I and L as 1.
        ("CR2-N-oOoOoOoOoOoOoOoOoOoOoOoOoI", 1, "CR2-N-00000000000000000000000001"),
        ("CR2-N-0000000000000000000000000L", 1, "CR2-N-00000000000000000000000001"),
    ],
)
def test_parse_and_format(text: str, seed: int, canonical: str) -> None:
    code = DealCode.parse(text)
    assert (code.seed, code.version, str(code)) == (seed, 2, canonical)
    assert DealCode.parse(str(code)) == code
    assert code.variant is Variant(text[4].upper())


def test_cr1_and_cr2_of_the_same_number_are_different_codes() -> None:
    assert DealCode(Variant.N, 1) != DealCode(Variant.N, 1, 2)
    assert str(DealCode(Variant.N, 1)) == "CR1-N-AAAAAAB"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("CR2-N-0000000000000000000000001", "26 base-32 digits (got 25)"),
        ("CR2-N-000000000000000000000000001", "26 base-32 digits (got 27)"),
        ("CR2-N-AAAAAAB", "26 base-32 digits (got 7)"),
        ("CR2-N-0000000000000000000000000U", "'U' is not a base-32 digit"),
        ("CR2-X-00000000000000000000000001", "unknown variant"),
        ("CR3-N-00000000000000000000000001", "this server knows CR1 and CR2"),
        ("CR2-N-00000-00000-00000-00000-000001", "three parts"),
        ("CR2-N-0000000000000000000000000Ä", "three parts"),
    ],
)
def test_malformed_cr2_codes_are_refused(text: str, says: str) -> None:
    with pytest.raises(InvalidDealCode) as info:
        DealCode.parse(text)
    assert info.value.code == "bad_deal_code"
    assert says in info.value.message and repr(text) in info.value.message_sv


def test_seed_range_and_version_are_checked() -> None:
    for seed in (-1, CR2_SEED_LIMIT, True):
        with pytest.raises(InvalidDealCode):
            DealCode(Variant.N, seed, 2)
    for version in (0, 3, True):
        with pytest.raises(InvalidDealCode):
            DealCode(Variant.N, 1, version)
    with pytest.raises(InvalidDealCode):
        DealCode.random("N", version=3)


def test_random_codes_are_cr2_unless_told() -> None:
    codes = [DealCode.random() for _ in range(20)]
    assert all(c.version == 2 and str(c).startswith("CR2-N-") for c in codes)
    assert len({c.seed for c in codes}) == 20
    # 20 draws of 130 bits: the top 10 bits all zero would have odds of 2**-200.
    assert max(c.seed for c in codes) >= 1 << 120
    assert DealCode.random("f", version=1).version == 1
    assert str(DealCode.random("f", version=1)).startswith("CR1-F-")
    assert DealCode.random("R", random.Random(1)) == DealCode.random("R", random.Random(1))
    assert DealCode.random("R", random.Random(1)).version == 2
