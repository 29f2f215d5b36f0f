"""The solver: lines that win, proofs on positions with known answers, budgets,
determinism, the compiled core against the Python reference, and the product API."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from server.game import DealCode, Game, Variant, replay
from server.solver import (
    CertifyFailed,
    Solution,
    certified_deal,
    compiled_available,
    hint,
    solve,
    was_winnable,
)
from server.solver.cli import main
from server.solver.search import dead_card
from server.solver.state import State

from . import positions

WINNABLE = "CR1-N-IPGYBDG"  # tests/game/data/winning_line.json
ENGINES = ["python", "compiled"] if compiled_available() else ["python"]
LINE_FILE = Path(__file__).parents[1] / "game" / "data" / "winning_line.json"


def play_out(position: dict[str, Any], line: tuple[str, ...]) -> Game:
    game = Game.from_position(position)
    for action in line:
        game.apply(action)
    return game


def test_the_compiled_core_is_built() -> None:
    # scripts/setup builds it (pip install -e .); the study's figures depend on it.
    assert compiled_available()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("code", [WINNABLE, "CR1-N-BOXZQIO", "CR1-F-FAOSIYK", "CR1-R-AXOFXHG"])
def test_a_won_deal_replays_to_a_win(engine: str, code: str) -> None:
    solution = solve(code, max_nodes=2_000_000, engine=engine)
    assert solution.outcome == "won"
    assert solution.line is not None
    assert replay(code, solution.line).status == "won"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("TWO_MOVES", "won"),
        ("CROSS_LOCK", "impossible"),
        ("CROSS_LOCK_REDEAL", "won"),
        ("CAPPED", "impossible"),
        ("UNCAPPED", "won"),
    ],
)
def test_near_end_positions(engine: str, name: str, outcome: str) -> None:
    position = getattr(positions, name)
    solution = solve(position, max_nodes=100_000, engine=engine)
    assert solution.outcome == outcome
    if outcome == "won":
        assert solution.line is not None
        assert play_out(position, solution.line).status == "won"
    else:
        assert solution.line is None


def test_two_moves_is_two_moves() -> None:
    solution = solve(positions.TWO_MOVES)
    assert solution.line == ("p1-as", "p1-ds")


def test_the_cross_lock_needs_its_redeal() -> None:
    solution = solve(positions.CROSS_LOCK_REDEAL)
    assert solution.line is not None and "redeal" in solution.line
    # Without it, moves remain (the engine is not locked yet) but every line locks.
    assert Game.from_position(positions.CROSS_LOCK).status == "playing"
    assert solve(positions.CROSS_LOCK).outcome == "impossible"


def test_the_cap_is_what_locks() -> None:
    capped = Game.from_position(positions.CAPPED)
    assert capped.refusal("p2-p1") == "pile_full"
    assert solve(positions.CAPPED).outcome == "impossible"
    assert solve(positions.UNCAPPED).outcome == "won"


def test_meeting_suits_expand_into_foundation_shifts() -> None:
    # Hearts meet at 6/7: a heart goes to the foundations after shifting them.
    solution = solve(positions.UNCAPPED)
    assert solution.line is not None
    assert any(action in ("ah-dh", "dh-ah") for action in solution.line)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_node_budget_is_honoured(engine: str) -> None:
    solution = solve("CR1-N-GNYFYHI", max_nodes=5_000, engine=engine)
    assert solution.outcome == "unknown"
    assert solution.line is None
    assert 0 < solution.nodes <= 5_000


def test_the_time_budget_is_honoured() -> None:
    began = time.monotonic()
    solution = solve("CR1-N-GNYFYHI", max_seconds=0.3)
    assert solution.outcome == "unknown"
    assert time.monotonic() - began < 10  # generous: the machine is shared


@pytest.mark.parametrize("engine", ENGINES)
def test_results_are_deterministic_for_a_node_budget(engine: str) -> None:
    budget = 100_000 if engine == "compiled" else 20_000
    first = solve("CR1-N-YYYLHTV", max_nodes=budget, engine=engine)
    second = solve("CR1-N-YYYLHTV", max_nodes=budget, engine=engine)
    assert (first.outcome, first.nodes, first.line) == (second.outcome, second.nodes, second.line)


@pytest.mark.skipif(not compiled_available(), reason="compiled core not built")
@pytest.mark.parametrize("variant", ["N", "F", "O", "R"])
def test_compiled_and_python_search_alike(variant: str) -> None:
    rng = random.Random(variant)
    for _ in range(3):
        code = DealCode.random(variant, rng)
        fast = solve(code, max_nodes=6_000, engine="compiled")
        slow = solve(code, max_nodes=6_000, engine="python")
        assert (fast.outcome, fast.nodes, fast.line) == (slow.outcome, slow.nodes, slow.line)


@pytest.mark.skipif(not compiled_available(), reason="compiled core not built")
def test_compiled_and_python_agree_on_a_found_win() -> None:
    # Won after a few greedy restarts (shuffled orders) in 2,000 - 9,000 nodes.
    for code in ("CR1-N-IRELRCV", "CR1-N-PVQXKZA", "CR1-R-AXOFXHG"):
        fast = solve(code, max_nodes=40_000, engine="compiled")
        slow = solve(code, max_nodes=40_000, engine="python")
        assert fast.outcome == "won"
        assert (fast.nodes, fast.line) == (slow.nodes, slow.line)


def test_no_dead_card_along_winning_lines() -> None:
    # Soundness of the dead-card proof: every position of a won game is winnable.
    data = json.loads(LINE_FILE.read_text())
    lines = [(data["code"], data["actions"])]
    for code in ("CR1-N-BOXZQIO", "CR1-N-PVQXKZA", "CR1-F-FAOSIYK"):
        found = solve(code, max_nodes=40_000)
        assert found.line is not None
        lines.append((code, list(found.line)))
    for code, actions in lines:
        game = Game.from_code(code)
        for action in actions:
            assert not dead_card(State.from_game(game)), (code, action)
            game.apply(action)
        assert game.status == "won"


def test_was_winnable_and_hint() -> None:
    solution = was_winnable(WINNABLE, max_nodes=2_000_000, max_seconds=None)
    assert solution.outcome == "won"
    game = Game.from_code(WINNABLE)
    action = hint(game, max_nodes=2_000_000, max_seconds=None)
    assert action is not None
    game.apply(action)  # a legal action of the position
    assert hint(Game.from_position(positions.CROSS_LOCK)) is None


def test_certified_deal_draws_until_won() -> None:
    drawn: list[DealCode] = []
    queue = ["CR1-N-GNYFYHI", "CR1-N-BOXZQIO"]

    def draw(variant: Variant, rng: Any) -> DealCode:
        assert variant is Variant.N
        code = DealCode.parse(queue[len(drawn)])
        drawn.append(code)
        return code

    solution = certified_deal("N", draw=draw, max_nodes=40_000)
    assert str(solution.code) == "CR1-N-BOXZQIO"
    assert solution.line is not None
    assert replay(solution.code, solution.line).status == "won"
    assert len(drawn) == 2


def test_certified_deal_default_draw_uses_the_rng() -> None:
    solution = certified_deal("N", random.Random(3), max_seconds=5.0, attempts=30)
    assert solution.outcome == "won"
    assert solution.code.variant is Variant.N


def test_certified_deal_gives_up_after_its_attempts() -> None:
    with pytest.raises(CertifyFailed):
        certified_deal(
            "N", draw=lambda v, r: DealCode.parse("CR1-N-GNYFYHI"), max_nodes=2_000, attempts=2
        )


def test_the_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    status = main([WINNABLE, "--json", "--budget-nodes", "2000000"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0
    assert set(out) == {"code", "result", "line", "nodes", "seconds"}
    assert out["code"] == WINNABLE and out["result"] == "won"
    assert replay(WINNABLE, out["line"]).status == "won"


def test_the_command_reads_a_position_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lock.json"
    path.write_text(json.dumps(positions.CROSS_LOCK))
    assert main([str(path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["result"] == "impossible" and out["line"] is None


def test_the_command_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["CR9-N-AAAAAAA"]) == 3
    assert "crescent-solve:" in capsys.readouterr().err


def test_solution_json_shape() -> None:
    solution = Solution(DealCode.parse(WINNABLE), "unknown", None, 5, 0.1234)
    assert solution.to_json() == {
        "code": WINNABLE,
        "result": "unknown",
        "line": None,
        "nodes": 5,
        "seconds": 0.123,
    }
