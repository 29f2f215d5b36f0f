"""In-memory tournament storage: the :class:`~server.core.ports.TournamentStorage`
port without I/O, for the core's fast tests (records go through msgpack as in Redis;
compare-and-set checks the version; no expiry). Loading and compare-and-set yield to
the event loop once, as a round trip to Redis does, so requests in flight interleave
between a read and a write and the fast tests see compare-and-set conflicts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from crescent_wire.errors import ConflictError
from server.storage.records import pack_record, unpack_record
from server.tournament.model import Tournament
from server.tournament.scoring import RoundRow


class MemoryTournamentStorage:
    def __init__(self) -> None:
        self.records: dict[str, tuple[int, bytes]] = {}
        self.results: dict[str, dict[int, bytes]] = {}
        self.hosts: dict[str, list[str]] = {}
        self.spectators: dict[str, set[str]] = {}
        self.writes = 0

    async def load_tournament(self, code: str) -> Tournament | None:
        await asyncio.sleep(0)
        stored = self.records.get(code)
        return Tournament.from_record(unpack_record(stored[1])) if stored is not None else None

    async def cas_tournament(
        self,
        code: str,
        expected_ver: int,
        tournament: Tournament,
        *,
        ttl_s: int,
        round_rows: tuple[int, tuple[RoundRow, ...]] | None = None,
    ) -> None:
        await asyncio.sleep(0)
        stored = self.records.get(code)
        current = stored[0] if stored is not None else -1
        if current != expected_ver:
            raise ConflictError(f"tournament {code}: expected {expected_ver}, found {current}")
        self.records[code] = (tournament.ver, pack_record(tournament.to_record()))
        if round_rows is not None:
            rows = [row.to_record() for row in round_rows[1]]
            self.results.setdefault(code, {})[round_rows[0]] = pack_record(rows)
        self.writes += 1

    async def round_results(self, code: str, round_: int) -> tuple[RoundRow, ...] | None:
        blob = self.results.get(code, {}).get(round_)
        return _rows_of(blob) if blob is not None else None

    async def all_results(self, code: str) -> dict[int, tuple[RoundRow, ...]]:
        return {n: _rows_of(b) for n, b in sorted(self.results.get(code, {}).items())}

    async def host_tournaments(self, host: str) -> list[str]:
        return list(self.hosts.get(host, ()))

    async def set_host_tournaments(self, host: str, codes: Sequence[str], ttl_s: int) -> None:
        self.hosts[host] = list(codes)

    async def add_spectator(self, code: str, player_id: str, limit: int, ttl_s: int) -> bool:
        watching = self.spectators.setdefault(code, set())
        if player_id not in watching and len(watching) >= limit:
            return False
        watching.add(player_id)
        return True

    async def remove_spectator(self, code: str, player_id: str) -> None:
        self.spectators.get(code, set()).discard(player_id)

    async def spectator_count(self, code: str) -> int:
        return len(self.spectators.get(code, ()))


def _rows_of(blob: bytes) -> tuple[RoundRow, ...]:
    """A finished round's rows from their stored blob (the list of their records)."""
    return tuple([RoundRow.from_record(record) for record in unpack_record(blob)])
