"""The public API: value objects, view, position, tap and drop helpers, replay."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from server.game import (
    AMBIGUOUS,
    Card,
    CrescentError,
    Game,
    IllegalMove,
    InvalidCard,
    InvalidMove,
    InvalidPosition,
    Move,
    ReplayError,
    place_index,
    replay,
)
from tests.game.helpers import build, position

ONLY_DIAMONDS = {"as": 13, "ds": 1, "ah": 13, "dh": 1, "ac": 13, "dc": 1}


# ---------------------------------------------------------------- value objects


def test_cards() -> None:
    assert Card.parse("TH") == Card.parse("10H") == Card.parse("th") == Card("H", 10)
    assert str(Card.parse("10h")) == "TH"
    assert (Card.parse("QS").suit, Card.parse("QS").rank) == ("S", 12)
    assert Card.parse("AC").index == 39 and Card.from_index(39) == Card.parse("AC")
    for bad in ("", "1H", "11H", "XH", "TX", "T", "10", "TH ", "HT"):
        with pytest.raises(InvalidCard) as info:
            Card.parse(bad)
        assert info.value.code == "bad_card" and repr(bad) in info.value.message
    with pytest.raises(InvalidCard):
        Card("X", 3)
    with pytest.raises(InvalidCard):
        Card("S", 14)


def test_moves() -> None:
    move = Move.parse("p10-p14")
    assert (str(move), move.source, move.target) == ("p10-p14", "p10", "p14")
    assert move is Move.parse("P10-P14") and move == Move("p10", "p14")
    texts = {"p3-ad", "as-ds", "dc-p16"}
    assert {str(Move.parse(t)) for t in texts} == texts
    assert repr(move) == "Move('p10-p14')"
    with pytest.raises(InvalidMove):
        Move("p0", "p1")
    with pytest.raises(InvalidMove) as info:
        place_index("p17")
    assert info.value.code == "bad_move"
    assert place_index("AS") == 16 and place_index("p1") == 0
    with pytest.raises(AttributeError):
        move.source = "p1"  # type: ignore[misc]


def test_legal_moves_are_move_objects_in_place_order() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    moves = list(game.legal_moves())
    assert [str(m) for m in moves] == [
        "p2-p8",
        "p7-dc",
        "p8-p2",
        "p9-p15",
        "p12-ds",
        "p14-p15",
        "p15-p9",
        "p15-p14",
        "p15-dh",
    ]
    assert all(isinstance(m, Move) for m in moves)


# ---------------------------------------------------------------- view


def card_strings(value: Any) -> list[str]:
    """Every card-like string anywhere in a JSON value."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in card_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in card_strings(v)]
    if isinstance(value, str) and len(value) == 2 and value[0] in "A23456789TJQK":
        return [value]
    return []


def test_view_shape_default_game() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    game.play("p2-p8")
    view = game.view().to_wire()
    assert set(view) == {"piles", "foundations", "redeals_left", "moves", "undo_left", "status"}
    assert view["piles"][0] == {"n": 6, "top": "TS"}
    assert view["piles"][1] == {"n": 5, "top": "5D"}
    assert view["piles"][7] == {"n": 7, "top": "7C"}
    assert len(view["piles"]) == 16 and all(set(p) == {"n", "top"} for p in view["piles"])
    assert view["foundations"] == {
        "as": {"n": 1, "top": "AS"},
        "ah": {"n": 1, "top": "AH"},
        "ad": {"n": 1, "top": "AD"},
        "ac": {"n": 1, "top": "AC"},
        "ds": {"n": 1, "top": "KS"},
        "dh": {"n": 1, "top": "KH"},
        "dd": {"n": 1, "top": "KD"},
        "dc": {"n": 1, "top": "KC"},
    }
    assert (view["redeals_left"], view["moves"], view["undo_left"], view["status"]) == (
        3,
        1,
        1,
        "playing",
    )
    assert json.loads(json.dumps(view)) == view
    # Only the pile tops and the foundation tops: nothing hidden leaks.
    shown = sorted(card_strings(view))
    expected = sorted(
        [p["top"] for p in view["piles"]] + [f["top"] for f in view["foundations"].values()]
    )
    assert shown == expected


def test_view_open_crescent_shows_every_card() -> None:
    game = Game.from_code("CR1-O-AAAAAAB")
    view = game.view().to_wire()
    piles = game.position()["piles"]
    for entry, pile in zip(view["piles"], piles, strict=True):
        assert entry == {"n": len(pile), "top": pile[-1], "cards": pile}
    assert json.loads(json.dumps(view)) == view


def test_view_is_a_fresh_value() -> None:
    game = Game.from_code("CR1-O-AAAAAAB")
    view = game.view().to_wire()
    view["piles"][0]["cards"].append("XX")
    assert (
        game.view().to_wire()["piles"][0]["n"] == 6
        and "XX" not in game.view().to_wire()["piles"][0]["cards"]
    )


# ---------------------------------------------------------------- position


def test_position_round_trips_exactly() -> None:
    game = Game.from_code("CR1-R-AAAAAAB")
    game.play(next(game.legal_moves()))
    game.redeal()
    pos = game.position()
    assert list(pos) == ["code", "piles", "foundations", "redeals_left", "moves"]
    assert list(pos["foundations"]) == ["as", "ah", "ad", "ac", "ds", "dh", "dd", "dc"]
    assert Game.from_position(json.loads(json.dumps(pos))).position() == pos
    twin = Game.from_position(pos)
    assert twin.code == game.code and twin.variant == game.variant
    assert (twin.moves, twin.redeals_left, twin.undo_left) == (game.moves, 2, 0)
    assert [str(m) for m in twin.legal_moves()] == [str(m) for m in game.legal_moves()]


def test_position_accepts_10_for_ten() -> None:
    pos = Game.from_code("CR1-N-AAAAAAB").position()
    spelled = copy.deepcopy(pos)
    spelled["piles"][0][-1] = "10S"
    assert Game.from_position(spelled).position() == pos


def broken(mutate: Any) -> dict[str, Any]:
    pos = Game.from_code("CR1-N-AAAAAAB").position()
    mutate(pos)
    return pos


@pytest.mark.parametrize(
    "bad",
    [
        "not a dict",
        broken(lambda p: p.pop("moves")),
        broken(lambda p: p.update(extra=1)),
        broken(lambda p: p.update(code="CR9-N-AAAAAAB")),
        broken(lambda p: p["piles"].pop()),
        broken(lambda p: p.update(piles="x")),
        broken(lambda p: p["piles"].__setitem__(0, "QD")),
        broken(lambda p: p["piles"][0].__setitem__(0, "ZZ")),
        broken(lambda p: p["piles"][0].__setitem__(0, 7)),
        broken(lambda p: p["piles"][0].__setitem__(0, "QS")),  # QD now once, QS three times
        broken(
            lambda p: (
                p["piles"][0].extend(p["piles"][1])
                or p["piles"][1].clear()
                or p["piles"][0].extend(p["piles"][2])
                or p["piles"][2].clear()
            )
        ),  # 18 cards
        broken(lambda p: p["foundations"].pop("dc")),
        broken(lambda p: p["foundations"].__setitem__("as", [])),
        broken(lambda p: p["foundations"].__setitem__("as", ["AH"])),
        broken(lambda p: p["foundations"].__setitem__("ds", ["AS"])),
        broken(lambda p: p["foundations"]["as"].append("3S")),
        broken(lambda p: p.update(redeals_left=4)),
        broken(lambda p: p.update(redeals_left=-1)),
        broken(lambda p: p.update(redeals_left="3")),
        broken(lambda p: p.update(moves=-1)),
        broken(lambda p: p.update(moves=True)),
        broken(lambda p: p.update(moves=1.5)),
    ],
)
def test_bad_positions_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidPosition) as info:
        Game.from_position(bad)
    assert info.value.code == "bad_position"
    assert info.value.message.startswith("Not a valid position: ")
    assert info.value.message_sv.startswith("Ingen giltig ställning: ")


def test_a_pile_of_14_is_refused() -> None:
    pos = position({1: ["5D"], 2: ["9D"]}, counts={1: 13}, foundations={**ONLY_DIAMONDS, "ad": 3})
    pos["piles"][0].append(pos["piles"][1].pop())
    with pytest.raises(InvalidPosition, match="14 cards"):
        Game.from_position(pos)


# ---------------------------------------------------------------- tap and drop


def test_tap_targets() -> None:
    game = build(
        {1: ["5D"], 2: ["6D"], 3: ["4D"], 4: ["JD"], 5: ["9D"]},
        foundations={**ONLY_DIAMONDS, "ad": 3, "dd": 10},
    )
    assert [str(m) for m in game.tap_targets("p1")] == ["p1-p2", "p1-p3"]  # choose
    assert [str(m) for m in game.tap_targets("p3")] == ["p3-p1", "p3-ad"]
    assert [str(m) for m in game.tap_targets("p5")] == ["p5-dd"]  # the one place: tap plays it
    assert game.tap_targets("p4") == []
    assert game.tap_targets("p9") == []  # empty pile
    assert game.tap_targets("ad") == []  # no return in N
    with pytest.raises(InvalidMove):
        game.tap_targets("p0")


def test_drop_on_foundations_asks_when_both_accept() -> None:
    # Seed 004: diamonds at 6 up and 8 down, a free 7D fits both.
    game = build(
        {1: ["7D"], 2: ["QD"], 3: ["5D"], 4: ["9D"]},
        foundations={**ONLY_DIAMONDS, "ad": 6, "dd": 8},
        variant="R",
    )
    assert game.drop_on_foundations("p1") == AMBIGUOUS == "ambiguous"
    assert game.drop_on_foundations("p2") is None
    assert game.drop_on_foundations("p3") is None
    assert game.drop_on_foundations("p9") is None
    game.play("p1-ad")
    assert game.drop_on_foundations("ad") == Move.parse("ad-dd")  # 7D over onto 8D
    assert game.drop_on_foundations("dd") == Move.parse("dd-ad")  # 8D over onto 7D
    game2 = build({1: ["7D"], 2: ["QD"]}, foundations={**ONLY_DIAMONDS, "ad": 6, "dd": 10})
    assert game2.drop_on_foundations("p1") == Move.parse("p1-ad")


# ---------------------------------------------------------------- replay


def test_replay_rebuilds_the_game() -> None:
    actions = ["p2-p8", "p15-dh", "undo", "redeal", "p7-dc"]
    game = Game.from_code("CR1-N-AAAAAAB")
    for action in actions[:4]:
        game.apply(action)
    legal = [str(m) for m in game.legal_moves()]
    actions[4] = legal[0]
    game.apply(actions[4])
    again = replay("CR1-N-AAAAAAB", actions)
    assert again.position() == game.position()
    assert (again.moves, again.undo_left, again.redeals_left) == (2, 1, 2)


@pytest.mark.parametrize(
    ("actions", "index", "code"),
    [
        (["p2-p8", "p1-p2"], 1, "wrong_suit"),
        (["undo"], 0, "nothing_to_undo"),
        (["p2-p8", "nonsense"], 1, "bad_move"),
        (["redeal", "redeal", "redeal", "redeal"], 3, "no_redeals"),
        (["p2-p8", "p2-p2"], 1, "same_place"),
    ],
)
def test_replay_names_the_first_bad_action(actions: list[str], index: int, code: str) -> None:
    with pytest.raises(ReplayError) as info:
        replay("CR1-N-AAAAAAB", [*actions, "p1-p1", "undo"])
    error = info.value
    assert (error.index, error.action, error.code) == (index, actions[index], code)
    assert f"action {index}" in error.message and repr(actions[index]) in error.message
    assert error.message_sv.startswith(f"åtgärd {index}")
    assert isinstance(error, CrescentError) and isinstance(error.cause, CrescentError)


def test_replay_with_a_bad_code() -> None:
    with pytest.raises(CrescentError) as info:
        replay("CR1-N-AAA", [])
    assert info.value.code == "bad_deal_code"


def test_refusal_and_is_legal() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    assert game.refusal("p2-p8") is None and game.is_legal(Move.parse("p2-p8"))
    assert game.refusal("p1-p2") == "wrong_suit" and not game.is_legal("p1-p2")
    with pytest.raises(IllegalMove):
        game.play("p1-p2")
    assert game.top_card("p1") == "TS" and game.top_card("as") == "AS"
    assert "CR1-N-AAAAAAB" in repr(game)


def test_copy_is_independent() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    game.play("p2-p8")
    twin = game.copy()
    twin.undo()
    assert game.moves == 1 and twin.moves == 0 and game.undo_left == 1
    assert game.position() != twin.position()
