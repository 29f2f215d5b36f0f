"""The compiled search core (server/solver/_core.c): search.py's search, compiled."""

from collections.abc import Callable

def solve(
    piles: list[list[int]],
    asc: list[int],
    desc: list[int],
    redeals: int,
    returns: bool,
    max_nodes: int,
    max_seconds: float,
    progress: Callable[[int, float], None] | None,
    greedy: bool,
    shuffle: int,
    /,
) -> tuple[str, list[tuple[int, int, int]] | None, int]: ...
