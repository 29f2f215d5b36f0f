"""The replay format (docs/replay.md) and the check of recorded results, on real games."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from server.core.archive import Action, ArchivedGame, GameKind
from server.core.replay import (
    FORMAT,
    ReplayFormatError,
    parse_replay,
    replay_document,
    verify_game,
)
from tests.archive.games import WINNING_DEAL, greedy_actions, paced, race, winning_actions

DOCS = Path(__file__).parents[2] / "docs" / "replay.md"


def a_race() -> ArchivedGame:
    return race(
        "ROOM-7",
        WINNING_DEAL,
        {
            "w": paced(winning_actions(), 800),
            "g": greedy_actions(WINNING_DEAL),
            "q": paced((*winning_actions()[:10], "resign")),
            "t": paced(winning_actions()[:40]),  # still playing at the end: timeout
        },
    )


def test_a_document_round_trips_through_json() -> None:
    game = a_race()
    document = json.loads(json.dumps(replay_document(game)))
    assert document["format"] == FORMAT
    assert document["racers"][0]["actions"][0] == {"t": 800, "a": "p10-ah"}
    assert parse_replay(document) == game


@pytest.mark.parametrize("variant", ["N", "F", "O", "R"])
def test_real_games_of_every_variant_verify(variant: str) -> None:
    deals = [f"CR1-{variant}-AAAAAA{c}" for c in "BCD"]
    for deal in deals:
        game = race(f"G-{deal}", deal, {f"p{i}": greedy_actions(deal, i) for i in range(3)})
        verdicts = verify_game(game)
        assert [v.problems for v in verdicts] == [(), (), ()], deal
        assert all(v.ok for v in verdicts)


def test_the_recorded_results_verify() -> None:
    verdicts = verify_game(a_race())
    assert [(v.player, v.status, v.ok) for v in verdicts] == [
        ("w", "won", True),
        ("g", "locked", True),
        ("q", "resigned", True),
        ("t", "timeout", True),
    ]
    assert verdicts[0].time_ms == 123 * 800 and verdicts[0].foundation == 104


def _tampered(game: ArchivedGame, seat: int, **changes: Any) -> ArchivedGame:
    racers = list(game.racers)
    result_changes = {k: v for k, v in changes.items() if k != "actions"}
    racer = racers[seat]
    if result_changes:
        racer = dataclasses.replace(
            racer, result=dataclasses.replace(racer.result, **result_changes)
        )
    if "actions" in changes:
        racer = dataclasses.replace(racer, actions=changes["actions"])
    racers[seat] = racer
    return dataclasses.replace(game, racers=tuple(racers))


@pytest.mark.parametrize(
    ("seat", "changes", "problem"),
    [
        (0, {"time_ms": 60_000}, "time_ms: recorded 60000, replayed 98400"),
        (1, {"moves": 3}, "moves: recorded 3"),
        (1, {"status": "won"}, "status: recorded won, replayed locked"),
        (1, {"foundation": 104}, "foundation: recorded 104"),
        (3, {"time_ms": 10}, "time_ms: recorded 10, before the last action"),
    ],
)
def test_a_changed_result_is_caught(seat: int, changes: dict[str, Any], problem: str) -> None:
    verdicts = verify_game(_tampered(a_race(), seat, **changes))
    assert not verdicts[seat].ok
    assert any(p.startswith(problem) for p in verdicts[seat].problems), verdicts[seat].problems


def test_a_changed_log_is_caught() -> None:
    game = a_race()
    actions = list(game.racers[0].actions)
    actions[5] = Action(actions[5].t, "p1-p1")  # refused by the rules
    verdict = verify_game(_tampered(game, 0, actions=tuple(actions)))[0]
    assert verdict.problems[0] == "illegal_action: action 5 ('p1-p1'): same_place"
    swapped = list(game.racers[0].actions)
    swapped[3], swapped[4] = swapped[4], swapped[3]  # out of time order
    verdict = verify_game(_tampered(game, 0, actions=tuple(swapped)))[0]
    assert verdict.problems[0].startswith("offsets_not_ordered: action 4")


def test_ranks_out_of_order_are_caught() -> None:
    game = a_race()
    worse = _tampered(_tampered(game, 0, rank=2), 1, rank=1)  # the locked racer first
    verdicts = verify_game(worse)
    assert any(p.startswith("rank: ranked 1 above w") for p in verdicts[1].problems)
    duplicate = _tampered(game, 1, rank=1)
    assert any("not 1 … n" in p for v in verify_game(duplicate) for p in v.problems)


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda d: d.update(format="crescent-replay/2"), "format"),
        (lambda d: d.pop("deal"), "deal"),
        (lambda d: d.update(kind="casual"), "kind"),
        (lambda d: d.update(racers=[]), "racers"),
        (lambda d: d["racers"][1]["actions"][3].update(t=True), "racers[1].actions[3].t"),
        (lambda d: d["racers"][1]["actions"][3].update(t=-5), "racers[1].actions[3].t"),
        (lambda d: d["racers"][0]["actions"][0].pop("a"), "racers[0].actions[0].a"),
        (lambda d: d["racers"][2]["result"].update(status="won!"), "racers[2].result.status"),
        (lambda d: d["racers"][2].update(player="x" * 65), "racers[2].player"),
        (lambda d: d.update(deal="CR1-N-AAAA"), "$"),
        (lambda d: d.update(variant="F"), "$"),
        (lambda d: d["racers"][0]["actions"][0].update(a="p1 p2"), "$"),
    ],
)
def test_a_bad_document_is_refused_with_its_path(edit: Any, path: str) -> None:
    document = replay_document(a_race())
    edit(document)
    with pytest.raises(ReplayFormatError) as refused:
        parse_replay(document)
    assert refused.value.code == "bad_replay"
    assert refused.value.path == path, refused.value.message


def test_the_example_in_the_docs_parses_and_verifies() -> None:
    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.S)
    example = json.loads(blocks[0])
    game = parse_replay(example)
    assert game.kind == GameKind.ROOM and len(game.racers) == 2
    assert [v.problems for v in verify_game(game)] == [(), ()]
