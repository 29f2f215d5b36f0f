"""rules.md's JSON position read back (``Game.from_position``): every check a position
must pass, with its message in English and Swedish."""

from __future__ import annotations

from typing import Any

from .board import FCARD, foundation_ranks
from .cards import CARD_INDEX, CARD_TEXT, FOUNDATION_NAMES, PILE_COUNT, PILE_LIMIT
from .deal import DealCode
from .errors import InvalidDealCode, InvalidPosition


def parse_position(position: object) -> tuple[DealCode, list[list[int]], list[int], int, int]:
    """rules.md's JSON position, checked: its deal code, piles (card ints, bottom to top),
    foundation top ranks, redeals left and moves (what ``Game`` is made from), else
    ``InvalidPosition`` saying what is wrong (in English and Swedish), checked in this
    order: the keys, the code, the piles, the foundations, the cards, the counters."""
    fields = _fields(position)
    try:
        code = DealCode.parse(fields["code"])
    except InvalidDealCode as error:
        raise InvalidPosition(f"code: {error.message}", f"code: {error.message_sv}") from None
    piles = _piles(fields["piles"])
    ftop = _foundation_tops(fields["foundations"])
    _check_every_card_twice(piles, ftop)
    redeals = fields["redeals_left"]
    if type(redeals) is not int or not 0 <= redeals <= code.variant.redeals:
        raise InvalidPosition(
            f"redeals_left must be an integer 0 .. {code.variant.redeals}",
            f"redeals_left måste vara ett heltal 0 .. {code.variant.redeals}",
        )
    moves = fields["moves"]
    if type(moves) is not int or moves < 0:
        raise InvalidPosition("moves must be an integer >= 0", "moves måste vara ett heltal >= 0")
    return code, piles, ftop, redeals, moves


def _fields(position: object) -> dict[str, Any]:
    if not isinstance(position, dict):
        raise InvalidPosition("a position is a JSON object", "en ställning är ett JSON-objekt")
    expected = {"code", "piles", "foundations", "redeals_left", "moves"}
    if set(position) != expected:
        missing = sorted(expected - set(position))
        extra = sorted(set(position) - expected, key=str)
        raise InvalidPosition(
            f"keys must be {sorted(expected)}; missing {missing}, unknown {extra}",
            f"nycklarna måste vara {sorted(expected)}; saknas {missing}, okända {extra}",
        )
    return position


def _card_of(text: object, where: str) -> int:
    index = CARD_INDEX.get(text.upper()) if isinstance(text, str) else None
    if index is None:
        raise InvalidPosition(
            f"{where}: {text!r} is not a card", f"{where}: {text!r} är inget kort"
        )
    return index


def _piles(raw_piles: object) -> list[list[int]]:
    if not isinstance(raw_piles, list) or len(raw_piles) != PILE_COUNT:
        raise InvalidPosition(
            "piles must be a list of 16 lists", "piles måste vara en lista med 16 listor"
        )
    piles: list[list[int]] = []
    for p, raw in enumerate(raw_piles, start=1):
        if not isinstance(raw, list):
            raise InvalidPosition(
                f"pile p{p} must be a list of cards", f"hög p{p} måste vara en lista med kort"
            )
        if len(raw) > PILE_LIMIT:
            raise InvalidPosition(
                f"pile p{p} has {len(raw)} cards (at most {PILE_LIMIT})",
                f"hög p{p} har {len(raw)} kort (högst {PILE_LIMIT})",
            )
        piles.append([_card_of(c, f"pile p{p}") for c in raw])
    return piles


def _foundation_tops(raw_found: object) -> list[int]:
    if not isinstance(raw_found, dict) or set(raw_found) != set(FOUNDATION_NAMES):
        raise InvalidPosition(
            f"foundations must have exactly the keys {list(FOUNDATION_NAMES)}",
            f"foundations måste ha exakt nycklarna {list(FOUNDATION_NAMES)}",
        )
    ftop: list[int] = []
    for f, name in enumerate(FOUNDATION_NAMES):
        raw = raw_found[name]
        if not isinstance(raw, list) or not raw:
            raise InvalidPosition(
                f"foundation {name} must be a non-empty list (its base first)",
                f"grundhög {name} måste vara en icke-tom lista (basen först)",
            )
        cards = [_card_of(c, f"foundation {name}") for c in raw]
        top = cards[-1] % 13 + 1
        if len(cards) > 13 or cards != [FCARD[f][r] for r in foundation_ranks(f, top)]:
            raise InvalidPosition(
                f"foundation {name} must run {'A, 2, 3' if f < 4 else 'K, Q, J'} ... "
                f"in its suit, got {raw}",
                f"grundhög {name} måste gå {'A, 2, 3' if f < 4 else 'K, Q, J'} ... "
                f"i sin färg, fick {raw}",
            )
        ftop.append(top)
    return ftop


def _check_every_card_twice(piles: list[list[int]], ftop: list[int]) -> None:
    counts = [0] * 52
    for pile in piles:
        for c in pile:
            counts[c] += 1
    for f, top in enumerate(ftop):
        for r in foundation_ranks(f, top):
            counts[FCARD[f][r]] += 1
    wrong = [f"{CARD_TEXT[c]} x{n}" for c, n in enumerate(counts) if n != 2]
    if wrong:
        raise InvalidPosition(
            f"every card must appear exactly twice: {', '.join(wrong)}",
            f"varje kort måste finnas exakt två gånger: {', '.join(wrong)}",
        )
