"""Deal codes and the portable deal algorithm CR1 (specified in docs/engine.md).

CR1, in short:

1. The 96 non-base cards in canonical order: suits S H D C; in each suit ranks
   A..K, each card twice except the ace and the king, which appear once (their
   other copy is a foundation base).
2. A SplitMix64 generator whose 64-bit state starts at
   ``seed + (ord(variant_letter) << 40)`` (so each variant's deal differs).
3. A Fisher-Yates shuffle: for i = 95 down to 1, j = uniform(i + 1), swap
   cards i and j; uniform(n) draws 64-bit outputs x until
   x < 2**64 - (2**64 mod n) (rejection: no modulo bias) and returns x mod n.
4. Card i goes to pile i // 6 (p1 .. p16), bottom to top.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

from .cards import PILE_COUNT, Variant
from .errors import InvalidDealCode

SEED_LETTERS: Final = 7
SEED_LIMIT: Final = 26**SEED_LETTERS  # seeds are 0 .. 26**7 - 1
_MASK64: Final = (1 << 64) - 1
_CODE_RE: Final = re.compile(r"([A-Za-z0-9]+)-([A-Za-z0-9]+)-([A-Za-z0-9]+)")


class RandomSource(Protocol):
    """What ``DealCode.random`` needs from an rng (``random.Random`` fits)."""

    def randrange(self, stop: int, /) -> int: ...


def seed_to_letters(seed: int) -> str:
    """``1 -> 'AAAAAAB'``: the seed as 7 base-26 digits, A = 0, most significant first."""
    letters = []
    for _ in range(SEED_LETTERS):
        seed, digit = divmod(seed, 26)
        letters.append(chr(ord("A") + digit))
    return "".join(reversed(letters))


@dataclass(frozen=True, slots=True)
class DealCode:
    """A deal code ``CR1-<variant>-<seed>``: the same code gives the same deal forever.

    >>> code = DealCode.parse("cr1-n-aaaaaab")
    >>> code.variant, code.seed, str(code)
    (<Variant.N: 'N'>, 1, 'CR1-N-AAAAAAB')
    """

    variant: Variant
    seed: int

    def __post_init__(self) -> None:
        if not isinstance(self.variant, Variant):
            raise InvalidDealCode(self.variant, "unknown variant", "okänd variant")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (
            0 <= self.seed < SEED_LIMIT
        ):
            raise InvalidDealCode(
                self.seed, f"the seed must be 0 .. {SEED_LIMIT - 1}",
                f"fröet måste vara 0 .. {SEED_LIMIT - 1}",
            )

    @staticmethod
    def parse(text: str | DealCode) -> DealCode:
        """Parse a code, case-insensitively; raise ``InvalidDealCode`` if malformed."""
        if isinstance(text, DealCode):
            return text
        if not isinstance(text, str):
            raise InvalidDealCode(text, "not text", "ingen text")
        match = _CODE_RE.fullmatch(text)
        if match is None:
            raise InvalidDealCode(
                text, "expected three parts separated by '-'",
                "förväntade tre delar åtskilda av '-'",
            )
        version, variant, seed = (part.upper() for part in match.groups())
        if version != "CR1":
            raise InvalidDealCode(
                text, f"unknown deal algorithm version {version!r} (this server knows CR1)",
                f"okänd version {version!r} av givalgoritmen (servern känner CR1)",
            )
        if variant not in Variant.__members__:
            raise InvalidDealCode(
                text, f"unknown variant {variant!r} (N, F, O or R)",
                f"okänd variant {variant!r} (N, F, O eller R)",
            )
        if len(seed) != SEED_LETTERS or not seed.isalpha() or not seed.isascii():
            raise InvalidDealCode(
                text, "the seed must be 7 letters A-Z", "fröet måste vara 7 bokstäver A-Z"
            )
        number = 0
        for letter in seed:
            number = number * 26 + ord(letter) - ord("A")
        return DealCode(Variant(variant), number)

    @staticmethod
    def random(variant: str | Variant = "N", rng: RandomSource | None = None) -> DealCode:
        """A random code of a variant: ``secrets`` by default, or ``rng.randrange``."""
        seed = secrets.randbelow(SEED_LIMIT) if rng is None else rng.randrange(SEED_LIMIT)
        try:
            parsed = Variant.parse(variant)
        except ValueError:
            raise InvalidDealCode(variant, "unknown variant", "okänd variant") from None
        return DealCode(parsed, seed)

    def __str__(self) -> str:
        return f"CR1-{self.variant.value}-{seed_to_letters(self.seed)}"

    def __repr__(self) -> str:
        return f"DealCode({str(self)!r})"


class SplitMix64:
    """Sebastiano Vigna's SplitMix64: a tiny, fully specified 64-bit generator.

    >>> rng = SplitMix64(0)
    >>> hex(rng.next())
    '0xe220a8397b1dcdaf'
    """

    __slots__ = ("state",)

    def __init__(self, state: int) -> None:
        self.state = state & _MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform in 0 .. n-1 by rejection sampling (no modulo bias)."""
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next()
            if x < limit:
                return x % n


def canonical_cards() -> list[int]:
    """The 96 non-base cards (engine ints) in CR1's canonical order."""
    cards = []
    for suit in range(4):
        for rank in range(1, 14):
            copies = 1 if rank in (1, 13) else 2
            cards.extend([suit * 13 + rank - 1] * copies)
    return cards


def initial_state(code: DealCode) -> int:
    """SplitMix64's starting state for a deal code."""
    return (code.seed + (ord(code.variant.value) << 40)) & _MASK64


def deal_piles(code: DealCode) -> list[list[int]]:
    """The 16 piles (bottom to top, engine ints) of a deal code, by CR1 (fresh lists)."""
    return [list(pile) for pile in _dealt(code)]


@lru_cache(maxsize=1024)
def _dealt(code: DealCode) -> tuple[tuple[int, ...], ...]:
    # Cached: every racer of a room, and every replay, deals the same code; the
    # pure-Python generator costs about 0.1 ms a deal.
    cards = canonical_cards()
    rng = SplitMix64(initial_state(code))
    for i in range(len(cards) - 1, 0, -1):
        j = rng.below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    per_pile = len(cards) // PILE_COUNT
    return tuple(tuple(cards[p * per_pile : (p + 1) * per_pile]) for p in range(PILE_COUNT))
