"""Deal codes and the portable deal algorithms CR1 and CR2 (specified in docs/engine.md).

Both shuffle the same 96 cards the same way and differ only in their seed and
their random stream:

1. The 96 non-base cards in canonical order: suits S H D C; in each suit ranks
   A..K, each card twice except the ace and the king, which appear once (their
   other copy is a foundation base).
2. A stream of 64-bit words:

   - CR1 (seed 7 letters, about 33 bits: only for chosen deals, since a brute
     force over its seeds finds a deal from its pile tops): SplitMix64 whose
     state starts at ``seed + (ord(variant_letter) << 40)``.
   - CR2 (seed 26 Crockford base-32 digits, 130 bits: every random deal):
     SHA-256 in counter mode; block k is
     ``SHA-256(b"CR2" + variant_letter + seed as 17 bytes + k as 4 bytes)``
     (big-endian), read as four big-endian 64-bit words.
3. A Fisher-Yates shuffle: for i = 95 down to 1, j = uniform(i + 1), swap
   cards i and j; uniform(n) draws words x until x < 2**64 - (2**64 mod n)
   (rejection: no modulo bias) and returns x mod n.
4. Card i goes to pile i // 6 (p1 .. p16), bottom to top.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

from .cards import PILE_COUNT, Variant
from .errors import InvalidDealCode

SEED_LETTERS: Final = 7
SEED_LIMIT: Final = 26**SEED_LETTERS  # CR1 seeds are 0 .. 26**7 - 1
CR2_SEED_DIGITS: Final = 26
CR2_SEED_BITS: Final = 5 * CR2_SEED_DIGITS  # 130
CR2_SEED_LIMIT: Final = 1 << CR2_SEED_BITS
CROCKFORD: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Crockford's decoding rules: O reads as 0, I and L as 1 (U is not a digit).
_CROCKFORD_VALUES: Final = {
    **{digit: value for value, digit in enumerate(CROCKFORD)},
    "O": 0,
    "I": 1,
    "L": 1,
}
VERSIONS: Final = (1, 2)
DEFAULT_VERSION: Final = 2  # what DealCode.random draws unless told otherwise
_SEED_LIMITS: Final = {1: SEED_LIMIT, 2: CR2_SEED_LIMIT}
_MASK64: Final = (1 << 64) - 1
_CODE_RE: Final = re.compile(r"([A-Za-z0-9]+)-([A-Za-z0-9]+)-([A-Za-z0-9]+)")


class RandomSource(Protocol):
    """What ``DealCode.random`` needs from an rng (``random.Random`` fits)."""

    def randrange(self, stop: int, /) -> int: ...


def seed_to_letters(seed: int) -> str:
    """``1 -> 'AAAAAAB'``: a CR1 seed as 7 base-26 digits, A = 0, most significant first."""
    letters = []
    for _ in range(SEED_LETTERS):
        seed, digit = divmod(seed, 26)
        letters.append(chr(ord("A") + digit))
    return "".join(reversed(letters))


def seed_to_crockford(seed: int) -> str:
    """``1 -> '000…001'``: a CR2 seed as 26 Crockford base-32 digits, most significant first."""
    digits = []
    for _ in range(CR2_SEED_DIGITS):
        seed, digit = divmod(seed, 32)
        digits.append(CROCKFORD[digit])
    return "".join(reversed(digits))


@dataclass(frozen=True, slots=True)
class DealCode:
    """A deal code ``CR<version>-<variant>-<seed>``: the same code gives the same deal forever.

    >>> code = DealCode.parse("cr1-n-aaaaaab")
    >>> code.variant, code.seed, code.version, str(code)
    (<Variant.N: 'N'>, 1, 1, 'CR1-N-AAAAAAB')
    >>> str(DealCode.parse("cr2-f-000000000000000000000000zz"))
    'CR2-F-000000000000000000000000ZZ'
    """

    variant: Variant
    seed: int
    version: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.variant, Variant):
            raise InvalidDealCode(self.variant, "unknown variant", "okänd variant")
        if isinstance(self.version, bool) or self.version not in VERSIONS:
            raise InvalidDealCode(
                self.version, "the version must be 1 or 2", "versionen måste vara 1 eller 2"
            )
        limit = _SEED_LIMITS[self.version]
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not (0 <= self.seed < limit)
        ):
            raise InvalidDealCode(
                self.seed,
                f"the seed must be 0 .. {limit - 1}",
                f"fröet måste vara 0 .. {limit - 1}",
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
                text,
                "expected three parts separated by '-'",
                "förväntade tre delar åtskilda av '-'",
            )
        version, variant, seed = (part.upper() for part in match.groups())
        if version not in ("CR1", "CR2"):
            raise InvalidDealCode(
                text,
                f"unknown deal algorithm version {version!r} (this server knows CR1 and CR2)",
                f"okänd version {version!r} av givalgoritmen (servern känner CR1 och CR2)",
            )
        if variant not in Variant.__members__:
            raise InvalidDealCode(
                text,
                f"unknown variant {variant!r} (N, F, O or R)",
                f"okänd variant {variant!r} (N, F, O eller R)",
            )
        if version == "CR2":
            return DealCode(Variant(variant), _parse_crockford(text, seed), 2)
        if len(seed) != SEED_LETTERS or not seed.isalpha() or not seed.isascii():
            raise InvalidDealCode(
                text, "a CR1 seed must be 7 letters A-Z", "ett CR1-frö måste vara 7 bokstäver A-Z"
            )
        number = 0
        for letter in seed:
            number = number * 26 + ord(letter) - ord("A")
        return DealCode(Variant(variant), number)

    @staticmethod
    def random(
        variant: str | Variant = "N",
        rng: RandomSource | None = None,
        *,
        version: int = DEFAULT_VERSION,
    ) -> DealCode:
        """A random code of a variant: CR2 (130-bit seed) unless ``version=1``.

        The seed comes from ``secrets`` by default, or from ``rng.randrange``
        (reproducible benchmarks and tests; never for a real race)."""
        try:
            parsed = Variant.parse(variant)
        except ValueError:
            raise InvalidDealCode(variant, "unknown variant", "okänd variant") from None
        if version not in VERSIONS:
            raise InvalidDealCode(
                version, "the version must be 1 or 2", "versionen måste vara 1 eller 2"
            )
        limit = _SEED_LIMITS[version]
        seed = secrets.randbelow(limit) if rng is None else rng.randrange(limit)
        return DealCode(parsed, seed, version)

    def __str__(self) -> str:
        if self.version == 2:
            return f"CR2-{self.variant.value}-{seed_to_crockford(self.seed)}"
        return f"CR1-{self.variant.value}-{seed_to_letters(self.seed)}"

    def __repr__(self) -> str:
        return f"DealCode({str(self)!r})"


def _parse_crockford(text: str, digits: str) -> int:
    if len(digits) != CR2_SEED_DIGITS:
        raise InvalidDealCode(
            text,
            f"a CR2 seed must be {CR2_SEED_DIGITS} base-32 digits (got {len(digits)})",
            f"ett CR2-frö måste vara {CR2_SEED_DIGITS} bas-32-siffror (fick {len(digits)})",
        )
    number = 0
    for digit in digits:
        value = _CROCKFORD_VALUES.get(digit)
        if value is None:
            raise InvalidDealCode(
                text,
                f"{digit!r} is not a base-32 digit (0-9 and A-Z without U)",
                f"{digit!r} är ingen bas-32-siffra (0-9 och A-Z utom U)",
            )
        number = number * 32 + value
    return number


class UniformSampler(ABC):
    """``below(n)`` by rejection sampling over a stream of 64-bit words (no modulo bias)."""

    __slots__ = ()

    @abstractmethod
    def next(self) -> int:
        """The next 64-bit word."""

    def below(self, n: int) -> int:
        """Uniform in 0 .. n-1."""
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next()
            if x < limit:
                return x % n


class SplitMix64(UniformSampler):
    """Sebastiano Vigna's SplitMix64: a tiny, fully specified 64-bit generator (CR1).

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


class Sha256Stream(UniformSampler):
    """CR2's stream: SHA-256 of ``key + counter`` (4 bytes, big-endian), counter 0, 1, ...,
    each digest read as four big-endian 64-bit words.

    >>> hex(Sha256Stream(b"").next())
    '0xdf3f619804a92fdb'
    """

    __slots__ = ("_counter", "_key", "_words")

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._counter = 0
        self._words: list[int] = []

    def next(self) -> int:
        if not self._words:
            block = hashlib.sha256(self._key + self._counter.to_bytes(4, "big")).digest()
            self._counter += 1
            self._words = [int.from_bytes(block[i : i + 8], "big") for i in (24, 16, 8, 0)]
        return self._words.pop()


def canonical_cards() -> list[int]:
    """The 96 non-base cards (engine ints) in the canonical order of CR1 and CR2."""
    cards = []
    for suit in range(4):
        for rank in range(1, 14):
            copies = 1 if rank in (1, 13) else 2
            cards.extend([suit * 13 + rank - 1] * copies)
    return cards


def initial_state(code: DealCode) -> int:
    """SplitMix64's starting state for a CR1 deal code."""
    return (code.seed + (ord(code.variant.value) << 40)) & _MASK64


def cr2_key(code: DealCode) -> bytes:
    """The 21 bytes CR2 hashes before its counter: ``CR2``, the variant letter, the seed."""
    return b"CR2" + code.variant.value.encode("ascii") + code.seed.to_bytes(17, "big")


def deal_stream(code: DealCode) -> UniformSampler:
    """The random stream that shuffles ``code``'s deal."""
    if code.version == 2:
        return Sha256Stream(cr2_key(code))
    return SplitMix64(initial_state(code))


def deal_piles(code: DealCode) -> list[list[int]]:
    """The 16 piles (bottom to top, engine ints) of a deal code (fresh lists)."""
    return [list(pile) for pile in _dealt(code)]


@lru_cache(maxsize=1024)
def _dealt(code: DealCode) -> tuple[tuple[int, ...], ...]:
    # Cached: every racer of a room, and every replay, deals the same code; the
    # pure-Python generator costs about 0.1 ms a deal.
    cards = canonical_cards()
    rng = deal_stream(code)
    for i in range(len(cards) - 1, 0, -1):
        j = rng.below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    per_pile = len(cards) // PILE_COUNT
    return tuple(tuple(cards[p * per_pile : (p + 1) * per_pile]) for p in range(PILE_COUNT))
