"""The engine's one exception tree.

Every error carries a machine-readable ``code`` (stable: clients switch on it),
an English ``message`` and a Swedish ``message_sv``. ``str(error)`` is the
English message.

::

    CrescentError                 base class: .code, .message, .message_sv
    ├── InvalidMove               malformed move notation / action (code "bad_move")
    ├── InvalidCard               malformed card notation (code "bad_card")
    ├── InvalidDealCode           malformed deal code (code "bad_deal_code")
    ├── InvalidPosition           a position dict that is not a legal position ("bad_position")
    ├── IllegalMove               well-formed but refused by the rules (codes in REASONS)
    └── ReplayError               an action list with a bad action (.index, .action)
"""

from __future__ import annotations

from typing import Final

# Reason codes for refused actions: (English, Swedish). The first seven are
# rules.md's table verbatim; the rest are this engine's additions.
REASONS: Final[dict[str, tuple[str, str]]] = {
    "wrong_suit": ("Must be the same suit", "Måste vara i samma färg"),
    "wrong_rank": ("Must be one rank higher or lower", "Måste ha en högre eller lägre valör"),
    "pile_full": (
        "This pile is full; choose another place",
        "Den här högen är full; välj en annan plats",
    ),
    "empty_pile": (
        "You can't place a card on an empty pile",
        "Det går inte att lägga på en tom hög",
    ),
    "base_locked": ("The foundation's base is locked", "Grundhögens bas är låst"),
    "no_return": (
        "A card never goes back from a foundation to a pile",
        "Ett kort går aldrig tillbaka från en grundhög till en hög",
    ),
    "no_redeals": ("No redeals left", "Inga omfördelningar kvar"),
    # Additions (rules.md: "More codes are fine ... each with a clear message").
    "empty_source": (
        "There is no card to move there: the pile is empty",
        "Det finns inget kort att flytta där: högen är tom",
    ),
    "same_place": (
        "The card is already there; choose another place",
        "Kortet ligger redan där; välj en annan plats",
    ),
    "nothing_to_undo": (
        "There is nothing to undo",
        "Det finns inget att ångra",
    ),
    "game_over": (
        "The game is already won",
        "Spelet är redan vunnet",
    ),
}


class CrescentError(Exception):
    """Base of every engine error: ``code``, English ``message``, Swedish ``message_sv``."""

    code: str
    message: str
    message_sv: str

    def __init__(self, code: str, message: str, message_sv: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.message_sv = message_sv

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class IllegalMove(CrescentError):
    """A well-formed action that the rules refuse; ``code`` is a key of ``REASONS``."""

    def __init__(self, code: str) -> None:
        english, swedish = REASONS[code]
        super().__init__(code, english, swedish)


_MOVE_HINT = " (write a move as <from>-<to>, e.g. p10-p14, p3-ad, as-ds; or redeal, undo)"
_MOVE_HINT_SV = (
    " (skriv ett drag som <från>-<till>, t.ex. p10-p14, p3-ad, as-ds; eller redeal, undo)"
)


class InvalidMove(CrescentError):
    """Text that is not a move or action in the notation (code ``bad_move``)."""

    def __init__(self, text: object, detail: str = "", detail_sv: str = "") -> None:
        super().__init__(
            "bad_move",
            f"Not a move: {text!r}{detail or _MOVE_HINT}",
            f"Inget giltigt drag: {text!r}{detail_sv or _MOVE_HINT_SV}",
        )


class InvalidCard(CrescentError):
    """Text that is not a card in the notation (code ``bad_card``)."""

    def __init__(self, text: object) -> None:
        super().__init__(
            "bad_card",
            f"Not a card: {text!r} (write rank A 2-9 T J Q K then suit S H D C, e.g. TH or 10H)",
            f"Inget giltigt kort: {text!r}"
            " (skriv valör A 2-9 T J Q K och sedan färg S H D C, t.ex. TH eller 10H)",
        )


class InvalidDealCode(CrescentError):
    """Text that is not a deal code (code ``bad_deal_code``)."""

    def __init__(self, text: object, detail: str, detail_sv: str) -> None:
        super().__init__(
            "bad_deal_code",
            f"Not a deal code: {text!r}: {detail}"
            " (expected CR2-<N|F|O|R>-<26 base-32 digits> or CR1-<N|F|O|R>-<7 letters A-Z>,"
            " e.g. CR1-N-AAAAAAB)",
            f"Ingen giltig spelkod: {text!r}: {detail_sv}"
            " (förväntat CR2-<N|F|O|R>-<26 bas-32-siffror> eller CR1-<N|F|O|R>-<7 bokstäver"
            " A-Z>, t.ex. CR1-N-AAAAAAB)",
        )


class InvalidPosition(CrescentError):
    """A position dict that is malformed or impossible (code ``bad_position``)."""

    def __init__(self, detail: str, detail_sv: str) -> None:
        super().__init__(
            "bad_position",
            f"Not a valid position: {detail}",
            f"Ingen giltig ställning: {detail_sv}",
        )


class ReplayError(CrescentError):
    """The first bad action of a replayed action list.

    ``index`` (0-based) and ``action`` name it; ``code`` is the reason code of the
    underlying error (e.g. ``wrong_suit`` or ``bad_move``), available as ``cause``.
    """

    index: int
    action: str
    cause: CrescentError

    def __init__(self, index: int, action: str, cause: CrescentError) -> None:
        super().__init__(
            cause.code,
            f"action {index} ({action!r}): {cause.message}",
            f"åtgärd {index} ({action!r}): {cause.message_sv}",
        )
        self.index = index
        self.action = action
        self.cause = cause
