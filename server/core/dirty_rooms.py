"""The codes of rooms with new progress, kept in slices for the progress flusher
(:mod:`server.core.progress`); the rooms (:mod:`server.core.rooms`) mark them."""

from __future__ import annotations

FLUSH_SLICES = 10


class DirtyRooms:
    """The codes of rooms whose progress must be flushed, kept in slices by code (a
    room is always in the same slice within a process)."""

    def __init__(self, slices: int = FLUSH_SLICES) -> None:
        self._slices: list[set[str]] = [set() for _ in range(slices)]

    def add(self, code: str) -> None:
        # str caches its hash: a room's code object is hashed once.
        self._slices[hash(code) % len(self._slices)].add(code)

    def take(self, index: int | None = None) -> set[str]:
        """Remove and return one slice's codes (``index`` modulo the slices), or all."""
        if index is None:
            taken = set().union(*self._slices)
            for codes in self._slices:
                codes.clear()
            return taken
        index %= len(self._slices)
        taken, self._slices[index] = self._slices[index], set()
        return taken

    def __contains__(self, code: object) -> bool:
        return any(code in codes for codes in self._slices)

    def __len__(self) -> int:
        return sum(map(len, self._slices))
