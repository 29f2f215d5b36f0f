"""Crescent solver: winning lines, proofs that a deal cannot be won, hints.

Pure like the engine (no I/O, no clock but the search's own time budget). The
solver sees every card: a deal is winnable if a player who knew all cards could
win it. Full guide: docs/winnability.md.

>>> from server.solver import solve
>>> solution = solve("CR1-N-IPGYBDG", max_nodes=200_000)
>>> solution.outcome, solution.line is not None
('won', True)
>>> from server.game import replay
>>> replay(solution.code, solution.line).status
'won'

Public API:

- ``solve(subject, *, max_nodes=None, max_seconds=None, progress=None, engine="auto")``
  -> ``Solution``: a deal code (text or ``DealCode``), a ``Game`` or a rules.md
  position dict.
- ``hint(game, ...)`` -> the next action of a winning line, or ``None`` (for
  practice games only, never in ranked races).
- ``was_winnable(code, ...)`` -> ``Solution`` from the deal's start (for
  finished games, once the deal is revealed).
- ``certified_deal(variant, rng=None, *, draw=None, ...)`` -> a ``Solution`` for a
  random deal proved winnable (its ``.code`` and ``.line``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from server.game import DealCode, Game, Variant, replay

from . import search
from .search import Outcome, Progress
from .state import State, expand

__all__ = [
    "DEFAULT_CERTIFY_SECONDS",
    "CertifyFailed",
    "Outcome",
    "Solution",
    "certified_deal",
    "compiled_available",
    "hint",
    "solve",
    "was_winnable",
]

DEFAULT_CERTIFY_SECONDS: Final = 10.0
# The share of a budget the greedy search for a win gets before the exact search.
GREEDY_SHARE: Final = 0.9
RESTART_NODES: Final = 1_000
Subject = str | DealCode | Game | dict[str, Any]
DealDraw = Callable[[Variant, Any], DealCode]

try:
    from . import _core
except ImportError:  # pragma: no cover - the extension is built by scripts/setup
    _core = None  # type: ignore[assignment]


def compiled_available() -> bool:
    """True when the compiled search core is built (``pip install -e .``)."""
    return _core is not None


@dataclass(frozen=True, slots=True)
class Solution:
    """What the solver found.

    ``outcome``: ``"won"`` (``line`` replays to a win from the subject with the
    engine's ``replay``/``apply``), ``"impossible"`` (every reachable position was
    searched: nobody can win it) or ``"unknown"`` (the budget ran out first).
    ``nodes``: canonical positions expanded; ``seconds``: wall time.
    """

    code: DealCode
    outcome: Outcome
    line: tuple[str, ...] | None
    nodes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The ``crescent-solve --json`` object."""
        return {
            "code": str(self.code),
            "result": self.outcome,
            "line": list(self.line) if self.line is not None else None,
            "nodes": self.nodes,
            "seconds": round(self.seconds, 3),
        }


class CertifyFailed(Exception):
    """``certified_deal`` drew its maximum of deals without proving one winnable."""


def _as_game(subject: Subject) -> Game:
    if isinstance(subject, Game):
        return subject
    if isinstance(subject, dict):
        return Game.from_position(subject)
    return Game.from_code(subject)


def solve(
    subject: Subject,
    *,
    max_nodes: int | None = None,
    max_seconds: float | None = None,
    progress: Progress | None = None,
    engine: str = "auto",
    restart_nodes: int = RESTART_NODES,
    greedy_share: float = GREEDY_SHARE,
    mixed_restarts: bool = False,
) -> Solution:
    """Solve a deal code, a ``Game`` or a position dict (validated by the engine).

    ``engine``: ``"compiled"``, ``"python"`` (the reference) or ``"auto"`` (compiled
    when built). Both search identically: same nodes, same line. A budget in nodes
    gives a deterministic result; a budget in seconds depends on the machine.
    ``restart_nodes``, ``greedy_share`` and ``mixed_restarts`` tune the search (see
    ``_two_phases``; ``restart_nodes=0``: one greedy search without restarts).
    """
    game = _as_game(subject)
    start = State.from_game(game)
    began = time.monotonic()
    if game.status == "won":
        return Solution(game.code, "won", (), 0, 0.0)
    if engine not in ("auto", "compiled", "python"):
        raise ValueError(f"unknown engine {engine!r}: auto, compiled or python")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    compiled = engine == "compiled" or (engine == "auto" and _core is not None)
    if compiled and _core is None:
        raise RuntimeError("the compiled solver core is not built (run scripts/setup)")
    if restart_nodes < 0 or not 0 <= greedy_share <= 1:
        raise ValueError("restart_nodes must be >= 0 and greedy_share within 0 .. 1")
    result = _two_phases(
        start,
        compiled,
        max_nodes,
        max_seconds,
        progress,
        began,
        restart_nodes,
        greedy_share,
        mixed_restarts,
    )
    seconds = time.monotonic() - began
    line = None
    if result.line is not None:
        line = tuple(expand(start.copy(), result.line))
    return Solution(game.code, result.outcome, line, result.nodes, seconds)


def _two_phases(
    start: State,
    compiled: bool,
    max_nodes: int | None,
    max_seconds: float | None,
    progress: Progress | None,
    began: float,
    restart_nodes: int,
    greedy_share: float,
    mixed_restarts: bool,
) -> search.Result:
    """Restarts on a share of the budget, then the exact search on the rest.

    The share is spent on restarts: the natural move order first, then shuffled
    orders (seeds 1, 2, ...); with ``mixed_restarts`` the odd seeds run the exact
    search (no greedy closure: it finds the wins that need a card kept back from
    the foundations, and one that runs out of positions is a proof), the even
    ones the greedy search. The k-th restart may expand ``RESTART_NODES * luby(k)``
    nodes (Luby, Sinclair and Zuckerman's universal restart schedule: 1 1 2 1 1 2 4
    1 1 2 ...). Searches for a win here are heavy-tailed: many short randomised
    searches win far more deals than one long one (docs/winnability.md).
    """
    greedy_nodes = None if max_nodes is None else int(max_nodes * greedy_share)
    greedy_until = None if max_seconds is None else began + max_seconds * greedy_share
    used = 0
    seed = 0
    while True:
        allowance = restart_nodes * luby(seed + 1) if restart_nodes else 1 << 62
        nodes = allowance if greedy_nodes is None else min(allowance, greedy_nodes - used)
        seconds = None if greedy_until is None else greedy_until - time.monotonic()
        if nodes < 1 or (seconds is not None and seconds <= 0):
            break
        greedy = not mixed_restarts or seed % 2 == 0
        attempt = _run(
            start, greedy, compiled, nodes, seconds, _shifted(progress, used, began), seed
        )
        used += attempt.nodes
        if attempt.outcome == "won":
            return search.Result("won", attempt.line, used)
        if attempt.outcome == "impossible":
            if not greedy:
                return search.Result("impossible", None, used)  # an exact search: a proof
            break  # the greedy space holds no win: no other order will find one
        seed += 1
        if restart_nodes == 0 or (greedy_nodes is None and greedy_until is None):
            break  # one greedy search only, then the exact search
    nodes_left = None if max_nodes is None else max_nodes - used
    seconds_left = None if max_seconds is None else max_seconds - (time.monotonic() - began)
    if (nodes_left is not None and nodes_left < 1) or (
        seconds_left is not None and seconds_left <= 0
    ):
        return search.Result("unknown", None, used)
    exact = _run(
        start, False, compiled, nodes_left, seconds_left, _shifted(progress, used, began), 0
    )
    return search.Result(exact.outcome, exact.line, used + exact.nodes)


def luby(k: int) -> int:
    """The k-th term (k >= 1) of the Luby sequence: 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ..."""
    while True:
        bits = k.bit_length()  # 2 ** (bits - 1) <= k < 2 ** bits
        if k == (1 << bits) - 1:
            return 1 << (bits - 1)
        k -= (1 << (bits - 1)) - 1


def _shifted(progress: Progress | None, offset: int, began: float) -> Progress | None:
    """Progress of one search reported as nodes and seconds of the whole solve."""
    if progress is None:
        return None
    report = progress

    def shifted(nodes: int, seconds: float) -> None:
        report(offset + nodes, time.monotonic() - began)

    return shifted


def _run(
    start: State,
    greedy: bool,
    compiled: bool,
    max_nodes: int | None,
    max_seconds: float | None,
    progress: Progress | None,
    shuffle: int,
) -> search.Result:
    if not compiled:
        result = search.solve_state(
            start,
            greedy=greedy,
            max_nodes=max_nodes,
            max_seconds=max_seconds,
            progress=progress,
            shuffle=shuffle,
        )
    else:
        assert _core is not None
        outcome, line, nodes = _core.solve(
            [list(p) for p in start.piles],
            list(start.asc),
            list(start.desc),
            start.redeals,
            start.returns,
            max_nodes if max_nodes is not None else 0,
            max_seconds if max_seconds is not None else 0.0,
            progress,
            greedy,
            shuffle,
        )
        if outcome not in ("won", "impossible", "unknown"):
            raise RuntimeError(f"compiled core returned {outcome!r}")
        result = search.Result(outcome, line, nodes)  # type: ignore[arg-type]
    return result


def hint(
    game: Game, *, max_nodes: int | None = None, max_seconds: float | None = 2.0
) -> str | None:
    """The next action of a winning line from ``game``'s position, or ``None`` when
    the solver finds none within the budget (or the position is lost or won).

    For practice games only: never offer it in a ranked race.
    """
    solution = solve(game, max_nodes=max_nodes, max_seconds=max_seconds)
    if solution.outcome != "won" or not solution.line:
        return None
    return solution.line[0]


def was_winnable(
    code: str | DealCode, *, max_nodes: int | None = None, max_seconds: float | None = 10.0
) -> Solution:
    """Could the deal have been won from its start? With a line to replay.

    Only once the deal is revealed (after the game): the line shows every card.
    """
    return solve(DealCode.parse(code), max_nodes=max_nodes, max_seconds=max_seconds)


def _default_draw(variant: Variant, rng: Any) -> DealCode:
    return DealCode.random(variant, rng)


def certified_deal(
    variant: str | Variant,
    rng: Any = None,
    *,
    draw: DealDraw | None = None,
    max_seconds: float = DEFAULT_CERTIFY_SECONDS,
    max_nodes: int | None = None,
    attempts: int = 50,
) -> Solution:
    """A random deal the solver proved winnable: ``.code`` to deal, ``.line`` the proof.

    ``draw(variant, rng)`` draws one random code (default ``DealCode.random``, so
    ``rng=None`` means ``secrets``). Deals are drawn until one is won within the
    budget per deal; ``CertifyFailed`` after ``attempts`` draws.
    """
    parsed = Variant.parse(variant)
    draw_code = draw or _default_draw
    for _ in range(attempts):
        code = draw_code(parsed, rng)
        solution = solve(code, max_nodes=max_nodes, max_seconds=max_seconds)
        if solution.outcome == "won":
            assert solution.line is not None
            if replay(code, solution.line).status == "won":
                return solution
    raise CertifyFailed(f"no deal of variant {parsed} certified in {attempts} draws")
