"""The reference search in pure Python (the compiled core does exactly the same).

Winning is reachability: is the won position reachable from this one? A
depth-first search that never expands a canonical state twice answers it
exactly; running out of states without reaching a win is a proof that the deal
cannot be won. What makes that feasible:

- **Canonical states.** Piles are interchangeable (no rule names a pile), so the
  key is the *multiset* of piles: a sum over piles of a non-linear hash of each
  pile, two 64-bit lanes (128 bits). Cards are ints, so the two copies of a card
  are the same card. A suit whose foundations meet is one state whatever its
  split (see ``state.py``). Redeals left are part of the key.
- **Dead cards** (not in R, where foundation cards come back): a fixpoint over
  every pile finds cards that can never leave their pile, whatever is played
  (``dead_card``); every card must reach a foundation, so such a position is lost.
  Cards within reach of the remaining redeals (the bottom ones) are never dead.
- **Move order**: foundation moves first, then pile to pile, redeal last.

``solve_state`` returns the macro line (see ``state.expand``) or a proof.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from server.game import SplitMix64

from .state import FOUNDATION, PILE_LIMIT, PILES, REDEAL, MacroMove, State, neighbours

Outcome = Literal["won", "impossible", "unknown"]
Progress = Callable[[int, float], None]

MASK64: Final = (1 << 64) - 1
LANES: Final = 2
TIME_CHECK_EVERY: Final = 1024
PROGRESS_EVERY: Final = 1 << 17


def _table(rng: SplitMix64, count: int) -> list[int]:
    return [rng.next() for _ in range(count)]


# Zobrist tables, reproducible (the compiled core builds the same from the same seed).
_rng = SplitMix64(0x43524553_43454E54)  # "CRESCENT"
ZCARD: Final = [_table(_rng, PILE_LIMIT * 52) for _ in range(LANES)]  # [lane][h * 52 + c]
ZFOUND: Final = [_table(_rng, 4 * 196) for _ in range(LANES)]  # [lane][s * 196 + code]
ZREDEAL: Final = [_table(_rng, 8) for _ in range(LANES)]
del _rng


def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finaliser: the non-linear step that makes pile sums safe."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK64
    x ^= x >> 33
    return x


def pile_hash(pile: list[int], lane: int) -> int:
    table = ZCARD[lane]
    raw = 0
    for h, card in enumerate(pile):
        raw += table[h * 52 + card]
    return fmix64((raw + lane) & MASK64)


def state_key(state: State) -> int:
    """The 128-bit canonical key of a state (see the module docstring)."""
    key = 0
    for lane in range(LANES):
        total = 0
        for pile in state.piles:
            if pile:
                total += pile_hash(pile, lane)
        found = ZFOUND[lane]
        for s in range(4):
            a, d = state.asc[s], state.desc[s]
            code = 0 if d == a + 1 else a * 14 + d
            total += found[s * 196 + code]
        total += ZREDEAL[lane][state.redeals]
        key = (key << 64) | (total & MASK64)
    return key


def dead_card(state: State) -> bool:
    """True if some pile card provably never leaves its pile (not in R).

    A greatest fixpoint: F starts as every card at a height >= the redeals left
    (the cards below that a redeal can still bring to the top are never in F);
    the topmost F card of a pile leaves F when it has a possible exit. When
    nothing changes, each F card is below an F card or has no exit while F
    stays put, so (looking at the first F card that would ever leave) none ever
    leaves: the position is lost when F is not empty. An exit of Z (suit s,
    rank r), with a/d the foundation tops of s:

    - the suit meets (any card of it goes to the foundations);
    - ascending: r >= 2 and no rank k with max(a, 1) < k < min(r, d) has both
      its copies (both in the piles, as a < k < d) in F;
    - descending: r <= 12 and no rank k with max(r, a) < k < min(d, 13) has both
      copies in F;
    - a pile: some copy of a neighbour of Z (same suit, rank r +- 1 wrapping) in
      the piles that is below the redeal floor or not under an F card.
    """
    if state.returns:
        return False
    piles = state.piles
    floor = state.redeals
    asc, desc = state.asc, state.desc
    frozen = [0] * 52
    where: list[list[tuple[int, int]]] = [[] for _ in range(52)]
    top_frozen = [-1] * PILES
    for p, pile in enumerate(piles):
        for h, card in enumerate(pile):
            where[card].append((p, h))
            if h >= floor:
                frozen[card] += 1
        if len(pile) > floor:
            top_frozen[p] = len(pile) - 1

    def reachable_target(card: int) -> bool:
        return any(h < floor or h > top_frozen[p] for p, h in where[card])

    def has_exit(card: int) -> bool:
        s, r = card // 13, card % 13 + 1
        a, d = asc[s], desc[s]
        if d == a + 1:
            return True
        base = s * 13 - 1  # base + k is the card of rank k
        if r >= 2 and not any(frozen[base + k] == 2 for k in range(max(a, 1) + 1, min(r, d))):
            return True
        if r <= 12 and not any(frozen[base + k] == 2 for k in range(max(r, a) + 1, min(d, 13))):
            return True
        up, down = neighbours(card)
        return reachable_target(up) or reachable_target(down)

    changed = True
    while changed:
        changed = False
        for p in range(PILES):
            pile = piles[p]
            while top_frozen[p] >= floor and has_exit(pile[top_frozen[p]]):
                frozen[pile[top_frozen[p]]] -= 1
                top_frozen[p] -= 1
                changed = True
    return any(t >= floor for t in top_frozen)


@dataclass(slots=True)
class Result:
    outcome: Outcome
    line: list[MacroMove] | None
    nodes: int


class Budget(Exception):
    """Raised inside the search when the node or time budget is spent."""


def closure(state: State, autos: list[MacroMove]) -> None:
    """Greedy mode: play every foundation move there is, pile by pile, until none is left."""
    asc, desc, piles = state.asc, state.desc, state.piles
    changed = True
    while changed:
        changed = False
        for p in range(PILES):
            pile = piles[p]
            while pile:
                card = pile[-1]
                s, r = card // 13, card % 13 + 1
                if not (asc[s] == r - 1 or desc[s] == r + 1 or desc[s] == asc[s] + 1):
                    break
                move = (p, FOUNDATION + s, card)
                autos.append(move)
                state.apply(move)
                changed = True


def solve_state(
    start: State,
    *,
    greedy: bool = False,
    max_nodes: int | None = None,
    max_seconds: float | None = None,
    progress: Progress | None = None,
    shuffle: int = 0,
) -> Result:
    """Search from ``start`` (not changed). Nodes are canonical states expanded.

    ``greedy``: play every foundation move at once after each move (the closure),
    which shrinks the space a lot but is not sound for proofs: "impossible" from a
    greedy search only says that no win is left in the greedy space.
    ``shuffle``: 0 for the natural move order, else the seed of a SplitMix64 that
    shuffles every node's moves (the redeal stays last): restarts search elsewhere.
    """
    state = start.copy()
    seen: set[int] = set()
    began = time.monotonic()
    order = SplitMix64(shuffle) if shuffle else None

    def moves_of(state: State) -> list[MacroMove]:
        moves = list(state.macro_moves())
        if order is not None:
            n = len(moves) - 1 if moves and moves[-1][0] == REDEAL else len(moves)
            for i in range(n - 1, 0, -1):
                j = order.below(i + 1)
                moves[i], moves[j] = moves[j], moves[i]
        return moves

    nodes = 0
    autos: list[MacroMove] = []

    def count_node() -> None:
        nonlocal nodes
        if max_nodes is not None and nodes >= max_nodes:
            raise Budget
        nodes += 1
        if nodes % TIME_CHECK_EVERY == 0:
            elapsed = time.monotonic() - began
            if max_seconds is not None and elapsed > max_seconds:
                raise Budget
            if progress is not None and nodes % PROGRESS_EVERY == 0:
                progress(nodes, elapsed)

    if greedy:
        closure(state, autos)
    seen.add(state_key(state))
    if state.won():
        return Result("won", list(autos), 0)
    # An explicit stack (deep lines would overflow Python's recursion). A frame:
    # its moves, the next index, the move that led to it and where its automatic
    # moves start on ``autos``; ``line`` holds (move, autos start) of the path.
    line: list[tuple[MacroMove, int]] = []
    try:
        count_node()
        if dead_card(state):
            return Result("impossible", None, nodes)
        stack: list[list[Any]] = [[moves_of(state), 0]]
        while stack:
            frame = stack[-1]
            moves, index = frame
            if index == len(moves):
                stack.pop()
                if line:
                    move, auto_from = line.pop()
                    _undo_autos(state, autos, auto_from)
                    _undo(state, move)
                continue
            frame[1] = index + 1
            move = moves[index]
            state.apply(move)
            auto_from = len(autos)
            if greedy:
                closure(state, autos)
            key = state_key(state)
            if key in seen:
                _undo_autos(state, autos, auto_from)
                _undo(state, move)
                continue
            seen.add(key)
            if state.won():
                return Result("won", _line(autos, line, move, auto_from), nodes)
            count_node()
            if dead_card(state):
                _undo_autos(state, autos, auto_from)
                _undo(state, move)
                continue
            line.append((move, auto_from))
            stack.append([moves_of(state), 0])
    except Budget:
        return Result("unknown", None, nodes)
    return Result("impossible", None, nodes)


def _line(
    autos: list[MacroMove], path: list[tuple[MacroMove, int]], last: MacroMove, last_from: int
) -> list[MacroMove]:
    steps = [*path, (last, last_from)]
    ends = [start for _, start in steps[1:]] + [len(autos)]
    first = steps[0][1]
    result = autos[:first]
    for (move, start), end in zip(steps, ends, strict=True):
        result.append(move)
        result.extend(autos[start:end])
    return result


def _undo_autos(state: State, autos: list[MacroMove], start: int) -> None:
    while len(autos) > start:
        _undo(state, autos.pop())


def _undo(state: State, move: MacroMove) -> None:
    src, dst, card = move
    if src == REDEAL:
        for pile in state.piles:
            if len(pile) >= 2:
                pile.insert(0, pile.pop())
        state.redeals += 1
        return
    state.apply((dst, src, card))


__all__ = ["Budget", "Outcome", "Result", "closure", "dead_card", "solve_state", "state_key"]
