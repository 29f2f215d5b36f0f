"""finishing_line: foundation moves only, a visited set, a node bound; progress_move."""

from __future__ import annotations

from server.game import Game, Move, replay
from server.solver.finishing import finishing_line, progress_move
from tests.solver.positions import CROSS_LOCK, TWO_MOVES, position

# Spades ascending at 5, descending at 7: 6S fits both foundations of its suit. The
# 6S on top of p2 must end on the right one at the right time: always taking the
# first foundation move that fits (pile sources first, ascending before descending)
# leaves cards that no foundation takes.
CHOOSE_FOUNDATION = position(
    {
        1: ["2S", "8S"],
        2: ["KS", "JS", "AS", "3S", "5S", "7S", "TS", "6S"],
        3: ["QS", "6S", "9S"],
        4: ["4S"],
    },
    {"as": 5, "ds": 7},
)


def first_fit_finishes(game: Game) -> bool:
    game = game.copy()
    while game.status == "playing":
        moves = [m for m in game.legal_moves() if m.dst >= 16]
        if not moves:
            return False
        moves.sort(key=lambda m: m.src >= 16)
        game.play(moves[0])
    return game.status == "won"


def replays_to_win(pos: dict[str, object], line: list[str]) -> bool:
    game = Game.from_position(pos)
    for move in line:
        game.play(move)
    return game.status == "won"


def test_finishes_only_with_the_right_foundation_choice() -> None:
    game = Game.from_position(CHOOSE_FOUNDATION)
    assert not first_fit_finishes(game)
    line = finishing_line(game)
    assert line is not None
    assert all(Move.parse(m).dst >= 16 for m in line)  # foundation moves only
    assert replays_to_win(CHOOSE_FOUNDATION, line)
    assert game.foundation_count == 104 - 14  # the caller's game is left alone


def test_two_moves() -> None:
    assert finishing_line(Game.from_position(TWO_MOVES)) == ["p1-as", "p1-ds"]


def test_a_position_that_needs_a_pile_move_does_not_finish() -> None:
    # Each ace waits under the other suit's king-side card: only a pile move (or a
    # redeal) would free them.
    assert finishing_line(Game.from_position(CROSS_LOCK)) is None
    assert finishing_line(Game.from_code("CR1-N-IPGYBDG")) is None


def test_the_node_bound_gives_up() -> None:
    game = Game.from_position(CHOOSE_FOUNDATION)
    assert finishing_line(game, max_nodes=1) is None


def test_won_game_needs_nothing() -> None:
    game = Game.from_position(TWO_MOVES)
    game.play("p1-as")
    game.play("p1-ds")
    assert finishing_line(game) == []


def test_progress_move_prefers_foundations_and_never_reverses() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    first = progress_move(game)
    assert first == next(str(m) for m in game.legal_moves() if m.dst >= 16 and m.src < 16)
    # With no foundation move, a pile move that is not the last move taken back.
    game = replay("CR1-N-AAAAAAB", [])
    for _ in range(40):
        action = progress_move(game)
        if action is None:
            break
        if action != "redeal" and game.history:
            last = game.peek()
            assert action != f"{last.target}-{last.source}"
        game.apply(action)
    assert game.moves > 0
