"""Every rule and every refusal reason of rules.md, on hand-built positions."""

from __future__ import annotations

import pytest

from server.game import (
    REASONS,
    CrescentError,
    Game,
    IllegalMove,
    InvalidMove,
    Move,
)
from tests.game.helpers import build, position, status

# Every suit but hearts complete on its foundations: only hearts are in the piles.
ONLY_HEARTS = {"as": 13, "ds": 1, "ad": 13, "dd": 1, "ac": 13, "dc": 1}
# Diamonds and clubs complete, spades all but AS and KS: 2 spades and the hearts
# in the piles.
SPADES_HEARTS = {"as": 12, "ds": 2, "ad": 13, "dd": 1, "ac": 13, "dc": 1}


def refusal(game: Game, move: str) -> str:
    with pytest.raises(IllegalMove) as info:
        game.play(move)
    return info.value.code


def test_rules_md_messages_verbatim() -> None:
    table = {
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
    }
    for code, (english, swedish) in table.items():
        error = IllegalMove(code)
        assert (error.code, error.message, error.message_sv, str(error)) == (
            code,
            english,
            swedish,
            english,
        )
    for code in ("empty_source", "same_place", "nothing_to_undo", "game_over"):
        english, swedish = REASONS[code]
        assert english and swedish and english != swedish


# ---------------------------------------------------------------- pile to pile


@pytest.mark.parametrize(
    ("card", "target"),
    [
        ("5H", "6H"),
        ("5H", "4H"),
        ("KH", "AH"),
        ("AH", "KH"),
        ("QH", "KH"),
        ("2H", "AH"),
    ],
)
def test_same_suit_one_rank_up_or_down_wrapping(card: str, target: str) -> None:
    game = build({1: [card], 2: [target]}, foundations=ONLY_HEARTS)
    game.play("p1-p2")
    after = game.position()["piles"]
    assert after[1][-1] == card and after[1][-2] == target
    assert game.moves == 1


def test_move_takes_only_the_top_card() -> None:
    game = build({1: ["9H", "5H"], 2: ["6H"]}, foundations=ONLY_HEARTS)
    before = game.position()["piles"]
    game.play("p1-p2")
    after = game.position()["piles"]
    assert after[0] == before[0][:-1] and after[0][-1] == "9H"
    assert after[1] == [*before[1], "5H"]


@pytest.mark.parametrize(
    ("card", "target", "code"),
    [
        ("QH", "KS", "wrong_suit"),
        ("2H", "AS", "wrong_suit"),
        ("KS", "AH", "wrong_suit"),
        ("5H", "KS", "wrong_suit"),  # wrong_suit comes before wrong_rank
        ("5H", "7H", "wrong_rank"),
        ("5H", "5H", "wrong_rank"),
        ("KH", "JH", "wrong_rank"),
        ("QH", "AH", "wrong_rank"),  # only K and A wrap
        ("2H", "KH", "wrong_rank"),
    ],
)
def test_pile_refusals(card: str, target: str, code: str) -> None:
    game = build({1: [card], 2: [target], 3: ["8H"], 4: ["3H"]}, foundations=SPADES_HEARTS)
    before = game.position()
    assert refusal(game, "p1-p2") == code
    assert game.position() == before and game.moves == 0


def test_pile_full_and_its_place_in_the_order() -> None:
    game = build(
        {1: ["5H"], 2: ["6H"], 3: ["KS"], 4: ["2H"]},
        counts={2: 13, 3: 13},
        foundations=SPADES_HEARTS,
    )
    assert refusal(game, "p1-p2") == "pile_full"
    assert refusal(game, "p1-p3") == "wrong_suit"  # full and wrong suit: wrong_suit first
    game2 = build({1: ["5H"], 2: ["9H"], 3: ["2H"]}, counts={2: 13}, foundations=SPADES_HEARTS)
    assert refusal(game2, "p1-p2") == "wrong_rank"  # full and wrong rank: wrong_rank first
    # 12 cards: the 13th is fine.
    game3 = build({1: ["5H"], 2: ["6H"], 3: ["2H"]}, counts={2: 12}, foundations=SPADES_HEARTS)
    game3.play("p1-p2")
    assert len(game3.position()["piles"][1]) == 13
    assert all(len(p) <= 13 for p in game.position()["piles"])


def test_emptied_pile_stays_empty() -> None:
    game = build({1: ["5H"], 2: ["6H"], 3: ["4H"]}, counts={1: 1}, foundations=ONLY_HEARTS)
    game.play("p1-p2")
    assert game.position()["piles"][0] == []
    assert game.view().to_wire()["piles"][0] == {"n": 0, "top": None}
    assert refusal(game, "p2-p1") == "empty_pile"
    assert refusal(game, "p1-p3") == "empty_source"
    assert all(m.target != "p1" for m in game.legal_moves())


def test_empty_pile_is_checked_before_the_card() -> None:
    game = build({1: ["5H"], 3: ["KS"], 4: ["9H"]}, foundations=SPADES_HEARTS, counts={1: 12})
    assert game.position()["piles"][1] == []
    assert refusal(game, "p1-p2") == "empty_pile"
    assert refusal(game, "p2-p5") == "empty_source"  # source first, even if target is empty too


def test_same_place() -> None:
    game = build({1: ["5H"], 2: ["6H"]}, foundations={**ONLY_HEARTS, "ah": 4})
    assert refusal(game, "p1-p1") == "same_place"
    assert refusal(game, "ah-ah") == "same_place"
    assert refusal(game, "dh-dh") == "base_locked"  # the source problem first


# ---------------------------------------------------------------- foundations


def test_ascending_foundation_takes_next_rank_only() -> None:
    game = build({1: ["4H"], 2: ["6H"], 3: ["KS"]}, foundations={**SPADES_HEARTS, "ah": 3})
    assert refusal(game, "p2-ah") == "wrong_rank"
    assert refusal(game, "p3-ah") == "wrong_suit"
    before = game.foundation_count
    assert before == 104 - 2 - (26 - 3 - 1)
    game.play("p1-ah")
    assert game.position()["foundations"]["ah"] == ["AH", "2H", "3H", "4H"]
    assert game.foundation_count == before + 1
    assert game.view().to_wire()["foundations"]["ah"] == {"n": 4, "top": "4H"}


def test_descending_foundation_takes_next_lower_rank_only() -> None:
    game = build({1: ["QH"], 2: ["JH"], 3: ["KS"]}, foundations=SPADES_HEARTS)
    assert refusal(game, "p2-dh") == "wrong_rank"
    assert refusal(game, "p3-dh") == "wrong_suit"
    game.play("p1-dh")
    game.play("p2-dh")
    assert game.position()["foundations"]["dh"] == ["KH", "QH", "JH"]


def test_foundations_do_not_wrap() -> None:
    # Ascending hearts complete up to K: an ace does not go on it. Descending
    # spades down to A: a king does not go on it.
    game = build(
        {1: ["AH"], 2: ["KS"], 3: ["5H"]},
        foundations={**ONLY_HEARTS, "as": 3, "ds": 1, "ah": 13, "dh": 6},
    )
    assert refusal(game, "p1-ah") == "wrong_rank"
    assert refusal(game, "p2-ds") == "wrong_rank"


def test_base_never_moves() -> None:
    game = build({1: ["2H"], 2: ["QH"], 3: ["AH"], 4: ["KH"]}, foundations=SPADES_HEARTS)
    for move in ("ah-dh", "dh-ah", "ah-p3", "dh-p4", "ah-ah", "dh-p1"):
        assert refusal(game, move) == "base_locked", move
    game_r = build(
        {1: ["2H"], 2: ["QH"], 3: ["AH"], 4: ["KH"]}, foundations=SPADES_HEARTS, variant="R"
    )
    assert refusal(game_r, "ah-p4") == "base_locked"


def test_foundation_to_foundation_when_they_meet() -> None:
    # Hearts up to 5 and down to 6: the tops meet, the 5 and the 6 can shuttle.
    game = build({1: ["9H"], 2: ["2H"]}, foundations={**ONLY_HEARTS, "ah": 5, "dh": 6})
    moves = {str(m) for m in game.legal_moves()}
    assert {"ah-dh", "dh-ah"} <= moves
    before = game.foundation_count
    game.play("ah-dh")  # 5H onto the descending 6H
    f = game.position()["foundations"]
    assert f["ah"][-1] == "4H" and f["dh"][-1] == "5H"
    assert game.foundation_count == before  # a shuttle keeps the count
    game.play("dh-ah")
    game.play("dh-ah")  # 6H from the descending onto the ascending 5H
    f = game.position()["foundations"]
    assert f["ah"][-1] == "6H" and f["dh"][-1] == "7H"


def test_foundation_to_foundation_refused_when_not_following() -> None:
    game = build({1: ["9H"], 2: ["KS"], 3: ["2H"]}, foundations={**SPADES_HEARTS, "ah": 5, "dh": 8})
    assert refusal(game, "ah-dh") == "wrong_rank"
    assert refusal(game, "dh-ah") == "wrong_rank"
    assert refusal(game, "ah-ds") == "wrong_suit"


def test_no_return_in_the_default_game() -> None:
    for variant in "NFO":
        game = build(
            {1: ["4H"], 2: ["KS"], 4: ["9H"], 5: ["QH"]},
            foundations={**SPADES_HEARTS, "ah": 5},
            variant=variant,
        )
        assert refusal(game, "ah-p1") == "no_return"
        assert refusal(game, "ah-p3") == "no_return"  # before empty_pile
        assert refusal(game, "ah-p2") == "no_return"  # before wrong_suit
        assert not any(m.source == "ah" for m in game.legal_moves())


def test_return_to_a_pile_in_variant_r() -> None:
    game = build(
        {1: ["4H"], 2: ["KS"], 4: ["7H"], 5: ["2H"]},
        counts={4: 13},
        foundations={**SPADES_HEARTS, "ah": 5, "dh": 8},
        variant="R",
    )
    assert {str(m) for m in game.legal_moves() if m.source == "ah"} == {"ah-p1"}
    assert refusal(game, "ah-p2") == "wrong_suit"
    assert refusal(game, "ah-p3") == "empty_pile"
    assert refusal(game, "dh-p1") == "wrong_rank"
    assert refusal(game, "dh-p4") == "pile_full"
    before = game.foundation_count
    game.play("ah-p1")
    assert game.position()["piles"][0][-2:] == ["4H", "5H"]
    assert game.foundation_count == before - 1
    game.undo()
    assert game.foundation_count == before


# ---------------------------------------------------------------- redeal


def test_redeal_moves_each_bottom_card_to_the_top() -> None:
    game = build(
        {1: ["5H", "9H", "JH"], 2: ["3H"], 3: ["7H", "8H"], 5: ["QH"]},
        counts={1: 3, 2: 1},
        foundations=ONLY_HEARTS,
        moves=7,
    )
    before = game.position()
    game.redeal()
    after = game.position()
    assert after["piles"][0] == ["9H", "JH", "5H"]
    assert after["piles"][1] == ["3H"]  # one card: unchanged
    assert after["piles"][3] == []  # empty: unchanged
    assert after["piles"][2] == before["piles"][2][1:] + before["piles"][2][:1]
    assert after["foundations"] == before["foundations"]
    assert (game.moves, game.redeals_left) == (7, 2)


def test_redeal_clears_undo_history() -> None:
    game = build({1: ["5H"], 2: ["6H"], 3: ["9H"]}, foundations=ONLY_HEARTS)
    game.play("p1-p2")
    assert game.undo_left == 1
    game.redeal()
    assert game.undo_left == 0 and game.moves == 1
    with pytest.raises(IllegalMove) as info:
        game.undo()
    assert info.value.code == "nothing_to_undo"


@pytest.mark.parametrize(("variant", "redeals"), [("N", 3), ("F", 4), ("O", 3), ("R", 3)])
def test_redeals_per_variant(variant: str, redeals: int) -> None:
    game = Game.from_code(f"CR1-{variant}-BCDEFGH")
    assert game.redeals_left == redeals
    for _ in range(redeals):
        game.redeal()
    assert game.redeals_left == 0
    with pytest.raises(IllegalMove) as info:
        game.redeal()
    assert (info.value.code, info.value.message, info.value.message_sv) == (
        "no_redeals",
        "No redeals left",
        "Inga omfördelningar kvar",
    )


# ---------------------------------------------------------------- undo and counters


def test_undo_restores_and_lowers_the_counter() -> None:
    game = build({1: ["5H"], 2: ["6H"], 3: ["3H"]}, foundations={**ONLY_HEARTS, "ah": 2}, moves=4)
    start = game.position()
    game.play("p1-p2")
    game.play("p3-ah")
    assert (game.moves, game.undo_left) == (6, 2)
    game.undo()
    game.undo()
    assert game.position() == start
    assert (game.moves, game.undo_left) == (4, 0)


def test_undo_reaches_back_100_moves_only() -> None:
    game = build({1: ["5H"], 2: ["6H"], 3: ["4H"]}, foundations=ONLY_HEARTS)
    game.play("p1-p2")
    for i in range(129):
        game.play("p2-p3" if i % 2 == 0 else "p3-p2")
    assert game.moves == 130 and game.undo_left == 100
    for _ in range(100):
        game.undo()
    assert game.moves == 30 and game.undo_left == 0
    with pytest.raises(IllegalMove) as info:
        game.undo()
    assert info.value.code == "nothing_to_undo"


def test_fresh_game_has_nothing_to_undo() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    with pytest.raises(IllegalMove) as info:
        game.apply("undo")
    assert info.value.code == "nothing_to_undo"
    assert info.value.message_sv == "Det finns inget att ångra"


# ---------------------------------------------------------------- end of game


def almost_won(variant: str = "N") -> Game:
    # Everything on the foundations but the queen of hearts, last on the descending hearts.
    foundations = {"as": 13, "ds": 1, "ad": 13, "dd": 1, "ac": 13, "dc": 1, "ah": 13, "dh": 13}
    return build(
        {5: ["AH", "2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H", "TH", "JH", "QH"]},
        foundations=foundations,
        variant=variant,
    )


def test_win_and_game_over() -> None:
    game = almost_won()
    assert game.status == "playing"
    for _ in range(12):
        game.play(next(iter(game.legal_moves())))
    assert status(game) == "won" and game.foundation_count == 104
    assert list(game.legal_moves()) == []
    for action in ("p5-dh", "redeal", "undo", "dh-p5"):
        with pytest.raises(IllegalMove) as info:
            game.apply(action)
        assert info.value.code == "game_over"
    assert game.view().to_wire()["status"] == "won"


def test_locked_when_no_move_and_no_redeal() -> None:
    # Hearts: A..3 up, K..T down; piles topped by 7H and 7H: nothing fits anywhere.
    hearts = {**ONLY_HEARTS, "ah": 3, "dh": 10}
    game = build({1: ["7H"], 2: ["7H"]}, foundations=hearts, redeals_left=1)
    assert list(game.legal_moves()) == []
    assert game.status == "playing"  # a redeal remains
    game = build({1: ["7H"], 2: ["7H"]}, foundations=hearts, redeals_left=0)
    assert game.status == "locked"
    assert game.view().to_wire()["status"] == "locked"
    for action in ("redeal", "p1-p2"):
        with pytest.raises(IllegalMove):
            game.apply(action)


def test_locked_offers_undo() -> None:
    hearts = {**ONLY_HEARTS, "ah": 3, "dh": 10}
    game = build({1: ["7H", "4H"], 2: ["7H"]}, foundations=hearts, redeals_left=0)
    assert game.status == "playing"
    game.play("p1-ah")
    assert status(game) == "locked" and game.undo_left == 1
    game.undo()
    assert game.status == "playing"


def test_not_locked_when_a_foundation_shuttle_frees_a_move() -> None:
    # Hearts meet (up to 5, down from 6); the pile's 9H fits nowhere directly, but
    # after shuttling 6H, 7H, 8H over to the ascending side 9H goes on the 10H.
    game = build(
        {1: ["9H"], 2: ["2H"]},
        counts={1: 11},
        foundations={**ONLY_HEARTS, "ah": 5, "dh": 6},
        redeals_left=0,
    )
    assert not any(m.source.startswith("p") for m in game.legal_moves())
    assert game.status == "playing"
    for move in ("dh-ah", "dh-ah", "dh-ah"):
        game.play(move)
    assert "p1-ah" in {str(m) for m in game.legal_moves()}  # 9H onto the ascending 8H


def test_foundation_to_pile_counts_against_lock_in_r_only() -> None:
    hearts = {**ONLY_HEARTS, "ah": 5, "dh": 10}
    game_n = build({1: ["4H"], 2: ["8H"]}, foundations=hearts, redeals_left=0)
    assert game_n.status == "locked"
    game_r = build({1: ["4H"], 2: ["8H"]}, foundations=hearts, redeals_left=0, variant="R")
    assert game_r.status == "playing"
    assert [str(m) for m in game_r.legal_moves()] == ["ah-p1"]


# ---------------------------------------------------------------- actions and notation


@pytest.mark.parametrize(
    "text",
    [
        "p0-p1",
        "p17-p1",
        "p1p2",
        "p1-",
        "-p2",
        "",
        "p1-p2-p3",
        "a-p1",
        "resign",
        " p1-p2",
        "p1_p2",
    ],
)
def test_bad_notation(text: str) -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    with pytest.raises(InvalidMove) as info:
        game.apply(text)
    assert info.value.code == "bad_move"
    assert repr(text) in info.value.message and repr(text) in info.value.message_sv
    assert isinstance(info.value, CrescentError)


def test_play_accepts_move_objects_and_any_case() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    game.play(Move.parse("p2-p8"))
    game.undo()
    game.apply("P2-P8")
    game.apply("UNDO")
    game.apply("Redeal")
    assert game.moves == 0 and game.redeals_left == 2


def test_non_string_action() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    with pytest.raises(InvalidMove):
        game.apply(42)
    with pytest.raises(InvalidMove):
        game.play(None)


def test_position_builder_sanity() -> None:
    pos = position({1: ["5H"], 2: ["5H"]}, foundations={**ONLY_HEARTS, "ah": 4, "dh": 13})
    assert Game.from_position(pos).position() == pos
