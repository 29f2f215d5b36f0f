"""The archive's outbox in this process's memory: the :class:`~server.core.ports.Outbox`
port for the core's fast tests and ``--storage memory`` (the Redis adapter's semantics:
put once by id, claim with a lease, remove after the write)."""

from __future__ import annotations

from collections.abc import Sequence

from server.core.ports import OutboxEntry, OutboxStats


class MemoryOutbox:
    def __init__(self) -> None:
        self.entries: dict[str, OutboxEntry] = {}
        self.due: dict[str, int] = {}  # id -> when it may be claimed (put_at, or lease end)

    async def put(self, entries: Sequence[OutboxEntry], *, replacing: Sequence[str] = ()) -> int:
        added = 0
        for entry in entries:
            if entry.id not in self.entries:
                self.entries[entry.id] = entry
                self.due[entry.id] = entry.put_at
                added += 1
        await self.remove(replacing)
        return added

    async def claim(self, *, now: int, due_by: int, limit: int, lease_ms: int) -> list[OutboxEntry]:
        ready = sorted((due, entry_id) for entry_id, due in self.due.items() if due <= due_by)[
            :limit
        ]
        for _, entry_id in ready:
            self.due[entry_id] = now + lease_ms
        return [self.entries[entry_id] for _, entry_id in ready]

    async def remove(self, ids: Sequence[str]) -> None:
        for entry_id in ids:
            self.entries.pop(entry_id, None)
            self.due.pop(entry_id, None)

    async def holds(self, entry_id: str) -> bool:
        return entry_id in self.entries

    async def stats(self) -> OutboxStats:
        if not self.entries:
            return OutboxStats(0, None)
        return OutboxStats(len(self.entries), min(e.put_at for e in self.entries.values()))
