"""The DailyStorage port in memory (one process, no I/O: the core's fast tests)."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from server.core.ports import BoardEntry, BoardView, OpenAttempt
from server.daily import DayRecord, ResultEntry
from server.daily.review import Review


class MemoryDailyStorage:
    def __init__(self, player_created: Callable[[str], int | None]) -> None:
        self._player_created = player_created
        # The records are immutable values: kept as they are, no codec needed.
        self.days: dict[str, DayRecord] = {}
        self.attempts: dict[tuple[str, str], str] = {}
        self.open: dict[tuple[str, str], tuple[int, str]] = {}
        self.results: dict[tuple[str, str], ResultEntry] = {}
        self.boards: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
        self.order: dict[str, int] = {}
        self.history: dict[str, dict[str, ResultEntry]] = {}
        self.review: dict[str, dict[str, Review]] = {}  # day → player → review
        self.leases: dict[str, tuple[str, float]] = {}  # day → (owner, expires, monotonic s)

    async def create_day(self, record: DayRecord) -> DayRecord:
        return self.days.setdefault(str(record.day), record)

    async def load_days(self, days: Sequence[str]) -> list[DayRecord | None]:
        return [self.days.get(d) for d in days]

    async def claim_certification(self, day: str, owner: str, ttl_ms: int) -> bool:
        now = time.monotonic()
        holder = self.leases.get(day)
        if holder is not None and holder[0] != owner and holder[1] > now:
            return False
        self.leases[day] = (owner, now + ttl_ms / 1000)
        return True

    async def release_certification(self, day: str, owner: str) -> None:
        if self.leases.get(day, ("", 0.0))[0] == owner:
            del self.leases[day]

    async def claim_attempt(self, day: str, player_id: str, room: str, deadline: int) -> str | None:
        existing = self.attempts.get((day, player_id))
        if existing is not None:
            return existing
        self.attempts[(day, player_id)] = room
        self.open[(day, player_id)] = (deadline, room)
        return None

    async def attempt_of(self, day: str, player_id: str) -> str | None:
        return self.attempts.get((day, player_id))

    async def record_result(
        self, day: str, player_id: str, board: str, score: int, entry: ResultEntry
    ) -> bool:
        if (day, player_id) in self.results:
            return False
        order = self.order[day] = self.order.get(day, 0) + 1
        stored = entry.on_board(board)
        self.results[(day, player_id)] = stored
        bisect.insort(self.boards.setdefault((day, board), []), (score, order, player_id))
        self.history.setdefault(player_id, {})[day] = stored
        self.open.pop((day, player_id), None)
        return True

    async def open_attempts(self, until: int) -> list[OpenAttempt]:
        return [
            OpenAttempt(day, pid, room)
            for (day, pid), (deadline, room) in self.open.items()
            if deadline <= until
        ]

    def _rows(self, day: str, board: str, first: int, last: int) -> list[BoardEntry]:
        rows = self.boards.get((day, board), [])[first:last]
        return [
            BoardEntry(first + 1 + i, pid, self.results[(day, pid)])
            for i, (_, _, pid) in enumerate(rows)
        ]

    async def board_top(self, day: str, board: str, count: int) -> list[BoardEntry]:
        return self._rows(day, board, 0, max(count, 0))

    async def board_around(
        self, day: str, board: str, player_id: str, radius: int
    ) -> list[BoardEntry]:
        rows = self.boards.get((day, board), [])
        for rank, (_, _, pid) in enumerate(rows):
            if pid == player_id:
                return self._rows(day, board, max(0, rank - radius), rank + radius + 1)
        return []

    async def board_size(self, day: str, board: str) -> int:
        return len(self.boards.get((day, board), []))

    async def board_entry(self, day: str, player_id: str) -> tuple[str, BoardEntry] | None:
        stored = self.results.get((day, player_id))
        if stored is None:
            return None
        board = stored.board or ""
        rows = await self.board_around(day, board, player_id, 0)
        return (board, rows[0]) if rows else None

    async def board_view(
        self, day: str, board: str, player_id: str, top: int, around: int
    ) -> BoardView:
        return BoardView(
            await self.board_size(day, board),
            await self.board_size(day, "late"),
            await self.board_top(day, board, top),
            await self.board_around(day, board, player_id, around),
            await self.board_entry(day, player_id),
        )

    async def player_created(self, player_id: str) -> int | None:
        return self._player_created(player_id)

    async def player_history(self, player_id: str) -> dict[str, ResultEntry]:
        return dict(self.history.get(player_id, {}))

    async def reviews(self, day: str) -> dict[str, Review]:
        return dict(self.review.get(day, {}))

    async def set_review(self, day: str, player_id: str, review: Review) -> None:
        self.review.setdefault(day, {})[player_id] = review

    async def remove_from_board(self, day: str, player_id: str) -> bool:
        removed = False
        for board in ("ranked", "late"):
            rows = self.boards.get((day, board), [])
            kept = [row for row in rows if row[2] != player_id]
            removed = removed or len(kept) != len(rows)
            self.boards[(day, board)] = kept
        return removed

    async def rename_player(self, days: Sequence[str], player_id: str, name: str) -> int:
        changed = 0
        for day in days:
            stored = self.results.get((day, player_id))
            review = self.review.get(day, {}).get(player_id)
            touched = False
            if stored is not None and stored.name != name:
                renamed = replace(stored, name=name)
                self.results[(day, player_id)] = renamed
                history = self.history.get(player_id, {})
                if day in history:
                    history[day] = renamed
                touched = True
            if review is not None and review.name != name:
                self.review[day][player_id] = replace(review, name=name)
                touched = True
            changed += touched
        return changed


__all__ = ["MemoryDailyStorage"]
