"""Deal codes and the CR1 deal algorithm: parsing, formatting, golden layouts."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from server.game import DealCode, Game, InvalidDealCode, SplitMix64, Variant, canonical_cards
from server.game.deal import SEED_LIMIT, seed_to_letters

# Full layouts (piles p1..p16, bottom to top), generated once by this
# implementation and checked by eye: each card twice, each ace and king once.
GOLDEN = {
    "CR1-N-AAAAAAB": [
        "QD 9C KC 7D 6D TS",
        "9D 5D 7S TH 5D 7C",
        "JC 6S TC 4S 8H 7S",
        "3D 8S AS 2H 9H 5S",
        "TS QH 4H 6H 6C 3C",
        "3C KS JS 2C 5C 7H",
        "AD TD 7C 8C 9S QC",
        "KH 4D 4H 2H 6S 6C",
        "3H JD 4S 6H 3S JH",
        "5S JD QS 4D 8S TC",
        "6D 2C 9C JC 3H KD",
        "2S 5C 8H 4C 7D QS",
        "8C 7H AH 9S 9D 3S",
        "QD 5H AC 4C JS JH",
        "2S 2D 5H 9H 8D QH",
        "TH 3D TD 2D QC 8D",
    ],
    "CR1-N-ZZZZZZZ": [
        "6D 7S QS JS AC TD",
        "AH QH 9C 4H 5C 2S",
        "5S 9S 6C 4S 6D 3H",
        "4D 8S 2S 3D JC 7H",
        "6H AD 9H QC 4C 6C",
        "8C TS 2C JC 2D TS",
        "QD 9D 3H QS 6S 7C",
        "5S QC 3C 8D TH 3C",
        "9D 6H 4H 2D 9C JH",
        "5C TC KS 5D 8S 3S",
        "9S 7D KC TD 2H 5H",
        "9H JD JS JH 8D 4D",
        "3D 7C 6S 2H 8C 7D",
        "7H 7S AS TH 4C QD",
        "8H 4S 5H KD TC 2C",
        "QH JD KH 8H 5D 3S",
    ],
    "CR1-F-AAAAAAB": [
        "QS QH 6S 4H 5H 2D",
        "3S 2C 2C TC 7C 2H",
        "QC AC 9H JC 6H 5H",
        "9C TS JH 9C 6D 5D",
        "6D TD 7H AD 5D 3D",
        "TD KH QD 4C 3H QD",
        "7D TS 3D 4D 4C 4S",
        "8D 3C 2H TH 8S 5C",
        "9S QC 5C 3H 7S JC",
        "3S JD JD KD QH 9D",
        "6H 2S 7H 8C 6C KC",
        "JS 4D 4H JS KS 5S",
        "AH 2D 9S 7D 7C 9H",
        "6S 8S TC 7S 5S 8D",
        "9D 4S 8C AS 8H TH",
        "JH QS 3C 2S 8H 6C",
    ],
    "CR1-F-CRESCNT": [
        "3H JC 9H 7C JH QC",
        "8H 9C 6H KD QS 8C",
        "JS 4C QS 3C QH 2S",
        "4H QH QD TH AS TD",
        "7S 6H 2S JD AD 8C",
        "5D 8H QD 5C 7H 4S",
        "TD 6D 6C 8S 8D 9H",
        "6C JC TS KH TC 3D",
        "8D 5D 5H 7H 4H 4C",
        "6S 2C 2H 9S TH JD",
        "7S 4D 2D 3H 9D KC",
        "TS AH 9C KS 4D QC",
        "5H 7D 3S 6S 3C 5S",
        "JH AC 3D 2D 6D 9D",
        "TC 5S 2H 4S 7C 8S",
        "JS 3S 5C 9S 7D 2C",
    ],
    "CR1-O-AAAAAAB": [
        "5H 2H 2S 8D 7S QC",
        "2S TS 2H 4H 4D JS",
        "9C 3H 5D AD 7D 9D",
        "2C 9C 4D 8C TS 7H",
        "AS KC TD 5H 8D JC",
        "AC 2D 6S TC JC TH",
        "3C JS 4C QH 5C 3S",
        "TH QS 3D 3H 3S 8C",
        "5S QD JD 8H 4S 3C",
        "9D JD 8S 6C KD KS",
        "7C 9H 6D 4C 7C 7D",
        "KH AH 5S 7H TC 6S",
        "4H 7S 2C 6H 9H 8S",
        "9S 5D JH 5C QS 6H",
        "3D TD QC QD 4S 6D",
        "9S 8H 2D 6C QH JH",
    ],
    "CR1-O-OPENAAA": [
        "9S 5D 6S AD AH 3S",
        "5S 2H JD 6S 5S 3D",
        "TS TD JH QH JC 8S",
        "TD 4C QD 5H JD 6H",
        "4D 5C 9C 3H KH 3C",
        "2D 7C 4H 3S AC 4D",
        "4S JS 7S AS TH QD",
        "5H 5D 2H 8H 3D 4C",
        "9S 7D TC 2C 7D 8C",
        "QS 9D TH 8D 9D 3C",
        "7H 8C 7S 7C 4S KS",
        "2S QH 8S 6C KC 6C",
        "JH JC 8D 2C 6D 2S",
        "6H 9H KD QS 6D JS",
        "9C TS 5C 2D QC 3H",
        "TC 7H 9H 8H 4H QC",
    ],
    "CR1-R-AAAAAAB": [
        "TS 4D 9H TD 2D 4D",
        "KS 6H 7D JD TH KC",
        "TS 5D 2S 5H QD 5D",
        "KD 8C 7H 9S 9S 7S",
        "KH 2D 4H 9H 3S 9D",
        "3D QC 8D 2C 8H 3H",
        "3C 7C 6S TC QH 3S",
        "QS AC 8D AH QC 3H",
        "8S JC QH QS 3D 6C",
        "4C 2H 5C 4H JS JH",
        "JD 7H 2H 6C JC 8H",
        "3C 6H 6S 9D AD JS",
        "9C 5S 2C 4S JH TH",
        "QD 6D 5H 8S 7D 9C",
        "7C 2S 7S AS TD 6D",
        "TC 8C 4S 5C 4C 5S",
    ],
    "CR1-R-RETURNS": [
        "2D QH 7S TS 7C 4S",
        "4H JH TH 4C 5H 4S",
        "8S 6H JS 2C 7H 9S",
        "3S 4H 2D 9S 7S 6H",
        "9C 3D JC 3H TS 7D",
        "QC QD 7D 2S 5H 7H",
        "JH 5S 9D 8D 9C TD",
        "3H QC AS KH 8H 7C",
        "6S 3C 4D 8H 2S KD",
        "JC TC 9H AC TC 6C",
        "5D 8D KS AH 9D QS",
        "2H QS 8S 2H 8C 5D",
        "QD 5C 2C 3S 3D JD",
        "4C 8C 4D 6S 5C 6C",
        "9H 5S TD JD KC 6D",
        "3C AD JS 6D QH TH",
    ],
}


def reference_deal(code: str) -> list[list[str]]:
    """CR1 written again from docs/engine.md alone, as a reimplementation would."""
    mask = 2**64 - 1
    _, variant, letters = code.upper().split("-")
    seed = 0
    for letter in letters:
        seed = seed * 26 + (ord(letter) - 65)
    state = (seed + ord(variant) * 2**40) & mask

    def next64() -> int:
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

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


def test_golden_covers_every_variant_twice() -> None:
    assert Counter(code.split("-")[1] for code in GOLDEN) == {"N": 2, "F": 2, "O": 2, "R": 2}
    assert "CR1-N-AAAAAAB" in GOLDEN


def test_fresh_game_from_a_code() -> None:
    game = Game.from_code("cr1-o-aaaaaab")
    assert str(game.code) == "CR1-O-AAAAAAB" and game.variant is Variant.O
    pos = game.position()
    assert pos["foundations"] == {
        "as": ["AS"],
        "ah": ["AH"],
        "ad": ["AD"],
        "ac": ["AC"],
        "ds": ["KS"],
        "dh": ["KH"],
        "dd": ["KD"],
        "dc": ["KC"],
    }
    assert (pos["redeals_left"], pos["moves"], game.foundation_count) == (3, 0, 8)
    assert all(len(pile) == 6 for pile in pos["piles"])


def test_random_codes_deal_each_card_twice() -> None:
    rng = random.Random(7)
    for _ in range(50):
        code = DealCode.random(rng.choice("NFOR"), rng)
        pos = Game.from_code(code).position()
        cards = Counter(c for pile in pos["piles"] for c in pile)
        cards.update(c for f in pos["foundations"].values() for c in f)
        assert set(cards.values()) == {2} and len(cards) == 52


def test_variant_letter_changes_the_deal() -> None:
    layouts = {v: Game.from_code(f"CR1-{v}-QWERTYU").position()["piles"] for v in "NFOR"}
    assert len({str(p) for p in layouts.values()}) == 4


def test_canonical_order() -> None:
    cards = canonical_cards()
    assert len(cards) == 96
    assert cards[:5] == [0, 1, 1, 2, 2]  # AS 2S 2S 3S 3S
    assert cards[22:25] == [11, 12, 13]  # QS KS AH


def test_splitmix64_reference_vector() -> None:
    # The published first outputs of SplitMix64 seeded with 0.
    rng = SplitMix64(0)
    assert [rng.next() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]


def test_below_rejects_the_biased_tail() -> None:
    n = 2**63 + 1  # half of all 64-bit outputs fall in the biased tail
    limit = 2**64 - (2**64 % n)
    plain, sampler = SplitMix64(12345), SplitMix64(12345)
    for _ in range(200):
        while (x := plain.next()) >= limit:
            pass
        assert sampler.below(n) == x % n
    assert all(0 <= SplitMix64(s).below(7) < 7 for s in range(100))


# ---------------------------------------------------------------- codes


@pytest.mark.parametrize(
    ("text", "seed"),
    [
        ("CR1-N-AAAAAAA", 0),
        ("CR1-N-AAAAAAB", 1),
        ("CR1-N-AAAAABA", 26),
        ("cr1-n-aaaaaab", 1),
        ("Cr1-F-BAAAAAA", 26**6),
        ("CR1-R-ZZZZZZZ", 26**7 - 1),
    ],
)
def test_parse_and_format(text: str, seed: int) -> None:
    code = DealCode.parse(text)
    assert code.seed == seed
    assert str(code) == text.upper()
    assert DealCode.parse(str(code)) == code
    assert code.variant is Variant(text[4].upper())


@pytest.mark.parametrize(
    "text",
    [
        "",
        "CR1",
        "CR1-N",
        "CR1-N-AAAAAA",
        "CR1-N-AAAAAAAA",
        "CR2-N-AAAAAAB",
        "CR1-X-AAAAAAB",
        "CR1-N-AAAAAA1",
        "CR1N-AAAAAAB",
        " CR1-N-AAAAAAB",
        "CR1-N-AAAAAAB ",
        "CR1-N-ÄAAAAAA",
        "CR1--AAAAAAB",
        "CR1-NN-AAAAAAB",
        "CR1-N-AAAAAAB-X",
        "CR1_N_AAAAAAB",
    ],
)
def test_malformed_codes_are_refused(text: str) -> None:
    with pytest.raises(InvalidDealCode) as info:
        DealCode.parse(text)
    assert info.value.code == "bad_deal_code"
    assert repr(text) in info.value.message and repr(text) in info.value.message_sv
    with pytest.raises(InvalidDealCode):
        Game.from_code(text)


@pytest.mark.parametrize("value", [None, 5, b"CR1-N-AAAAAAB"])
def test_non_text_codes_are_refused(value: object) -> None:
    with pytest.raises(InvalidDealCode):
        DealCode.parse(value)  # type: ignore[arg-type]


def test_seed_range_is_checked() -> None:
    for seed in (-1, SEED_LIMIT, True):
        with pytest.raises(InvalidDealCode):
            DealCode(Variant.N, seed)
    assert str(DealCode(Variant.N, SEED_LIMIT - 1)) == "CR1-N-ZZZZZZZ"
    assert seed_to_letters(27) == "AAAAABB"


def test_random_codes() -> None:
    a, b = DealCode.random(), DealCode.random("o")
    assert a.variant is Variant.N and b.variant is Variant.O
    assert DealCode.parse(str(a)) == a
    assert len({DealCode.random().seed for _ in range(20)}) > 15  # secrets, not a constant
    assert DealCode.random("R", random.Random(1)) == DealCode.random("R", random.Random(1))
    with pytest.raises(InvalidDealCode):
        DealCode.random("Z")
