"""Practice-game helpers that need no search budget worth a process: can the game
finish by foundation moves alone, and a cheap move that makes progress.

Pure like the engine: the caller's ``Game`` is never changed (the search plays on a
copy).

>>> from server.game import Game
>>> from tests.solver.positions import TWO_MOVES
>>> finishing_line(Game.from_position(TWO_MOVES))
['p1-as', 'p1-ds']
>>> finishing_line(Game.from_code("CR1-N-IPGYBDG")) is None
True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from server.game import Game, Move
from server.game.board import TOTAL_CARDS
from server.game.cards import FIRST_FOUNDATION

__all__ = ["FINISHING_MAX_NODES", "finishing_line", "progress_move"]

# Positions the search may visit. Foundation-only positions are few (each pile only
# shrinks, and the tops of a suit's two foundations move together), so this is far
# more than a finishing position needs; it bounds the work of one that does not.
FINISHING_MAX_NODES: Final = 2_000
PILES: Final = FIRST_FOUNDATION


def _key(game: Game) -> tuple[int, ...]:
    # Foundation moves only take pile tops, so pile sizes and foundation tops say
    # everything about the position reached.
    return (
        *(game.pile_size_and_top(p)[0] for p in range(PILES)),
        *(game.foundation_rank(f) for f in range(8)),
    )


def finishing_line(game: Game, *, max_nodes: int = FINISHING_MAX_NODES) -> list[str] | None:
    """The moves (notation) that put every remaining card on the foundations using
    foundation moves only (pile to foundation, foundation to foundation), or ``None``
    if there is none or the search met ``max_nodes`` first. ``[]`` for a won game.

    Depth-first, pile-to-foundation moves first, with a visited set: a card that fits
    both foundations of its suit is tried on each.
    """
    if game.status == "won":
        return []
    if game.status != "playing":
        return None
    # The engine's undo history is bounded: each depth keeps its own copy instead.
    seen: set[tuple[int, ...]] = {_key(game)}
    line: list[Move] = []
    stack: list[tuple[Game, Iterator[Move]]] = [(game, _foundation_moves(game))]
    nodes = 0
    while stack:
        here, untried = stack[-1]
        move = next(untried, None)
        if move is None:
            stack.pop()
            if line:
                line.pop()
            continue
        work = here.copy()
        work.play(move)
        key = _key(work)
        if key in seen:
            continue
        seen.add(key)
        line.append(move)
        if work.foundation_count == TOTAL_CARDS:
            return [str(m) for m in line]
        nodes += 1
        if nodes >= max_nodes:
            return None
        stack.append((work, _foundation_moves(work)))
    return None


def _foundation_moves(game: Game) -> Iterator[Move]:
    moves = [m for m in game.legal_moves() if m.dst >= FIRST_FOUNDATION]
    moves.sort(key=lambda m: m.src >= FIRST_FOUNDATION)  # pile sources first, stable
    return iter(moves)


def progress_move(game: Game) -> str | None:
    """A legal action that makes progress, chosen from the position alone: a card to a
    foundation, else a pile move that uncovers a card (never the reverse of the last
    move), else ``redeal``; ``None`` when the game is over or nothing is left."""
    if game.status != "playing":
        return None
    legal = list(game.legal_moves())
    for move in legal:
        if move.src < PILES <= move.dst:
            return str(move)
    try:
        last: Move | None = game.peek()
    except IndexError:
        last = None
    for move in legal:
        uncovers = move.src < PILES and move.dst < PILES and game.pile_size_and_top(move.src)[0] > 1
        if uncovers and (last is None or (move.src, move.dst) != (last.dst, last.src)):
            return str(move)
    if game.redeals_left > 0:
        return "redeal"
    return None
