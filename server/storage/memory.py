"""In-memory storage: the :class:`~server.core.ports.Storage` port without I/O.

For the core's fast tests: rooms, games and the bus of several hubs ("processes") that
share one :class:`MemoryStorage`. It keeps the Redis adapter's semantics — records go
through msgpack as in Redis, compare-and-set and appends check what the caller expected,
the bus delivers each publish to every subscribed hub later in the loop, an append's
callback comes later too — but keeps nothing after the process ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from crescent_wire.errors import ConflictError
from server.core.ports import (
    APPEND_CONFLICT,
    SEQ_WINDOW,
    AppendCallback,
    AppendResult,
    BusHandler,
    StoredGame,
)
from server.lobby import RacerProgress, Room
from server.storage.records import pack_record, unpack_record

EVENT_HISTORY = 200  # as the Redis adapter


class MemoryBus:
    def __init__(self, storage: MemoryStorage, handler: BusHandler) -> None:
        self.storage = storage
        self.handler = handler
        self.channels: set[str] = set()

    async def start(self) -> None:
        self.storage.buses.add(self)

    async def stop(self) -> None:
        self.storage.buses.discard(self)

    async def subscribe(self, code: str) -> None:
        self.channels.add(code)

    async def unsubscribe(self, code: str) -> None:
        self.channels.discard(code)


class MemoryStorage:
    def __init__(self) -> None:
        self.players: dict[str, tuple[str, int]] = {}
        self.created: dict[str, int] = {}  # player → first seen (the daily challenge)
        self.rooms: dict[str, tuple[int, bytes]] = {}
        self.events: dict[str, list[bytes]] = {}
        # (room, process, player) → that process's open sockets of the player in the room
        self.presence: dict[tuple[str, str, str], int] = {}
        self.alive: dict[tuple[str, str], int] = {}  # (room, process) → last sign of life
        self.logs: dict[tuple[str, int, str], list[str]] = {}
        self.seqs: dict[tuple[str, int, str], int] = {}
        self.seq_actions: dict[tuple[str, int, str], dict[int, str]] = {}
        self.progress: dict[tuple[str, int], dict[str, bytes]] = {}
        self.buses: set[MemoryBus] = set()
        self.rooms_of: dict[str, list[str]] = {}  # player → rooms they created, still in
        self.appends = 0  # appends queued so far

    def bus(self, handler: BusHandler) -> MemoryBus:
        return MemoryBus(self, handler)

    async def ping(self) -> bool:
        return True  # in this process: always there

    async def save_player(self, player_id: str, name: str, now: int) -> None:
        self.players[player_id] = (name, now)
        self.created.setdefault(player_id, now)

    async def player_rooms(self, player_id: str) -> list[str]:
        return list(self.rooms_of.get(player_id, ()))

    async def set_player_rooms(self, player_id: str, codes: Sequence[str]) -> None:
        self.rooms_of[player_id] = list(codes)

    async def load_room(self, code: str) -> Room | None:
        stored = self.rooms.get(code)
        return Room.from_record(unpack_record(stored[1])) if stored is not None else None

    async def cas_room(
        self,
        code: str,
        expected_ver: int,
        room: Room,
        event_frames: Sequence[bytes],
        bus_payload: bytes | None,
    ) -> None:
        stored = self.rooms.get(code)
        current = stored[0] if stored is not None else -1
        if current != expected_ver:
            raise ConflictError(f"room {code}: expected version {expected_ver}, found {current}")
        self.rooms[code] = (room.ver, pack_record(room.to_record()))
        if event_frames:
            history = self.events.setdefault(code, [])
            history.extend(event_frames)
            del history[:-EVENT_HISTORY]
        if bus_payload:
            self._publish(code, bus_payload)

    async def read_events(self, code: str) -> list[bytes]:
        return list(self.events.get(code, ()))

    async def presence_change(
        self, code: str, player_id: str, delta: int, *, process: str, now: int, stale_ms: int
    ) -> int:
        key = (code, process, player_id)
        count = self.presence.get(key, 0) + delta
        if count > 0:
            self.presence[key] = count
        else:
            self.presence.pop(key, None)
        self.alive[(code, process)] = now
        return sum(
            self.presence.get((code, proc, player_id), 0)
            for (room, proc), seen in self.alive.items()
            if room == code and now - seen <= stale_ms
        )

    async def presence_refresh(self, process: str, codes: Sequence[str], now: int) -> None:
        for code in codes:
            self.alive[(code, process)] = now

    async def presence_lapsed(
        self, codes: Sequence[str], now: int, stale_ms: int, forget_ms: int
    ) -> list[list[str]]:
        lapsed = []
        for code in codes:
            stale: set[str] = set()
            live: set[str] = set()
            for (room, proc, player), count in list(self.presence.items()):
                if room != code or count <= 0:
                    continue
                seen = self.alive.get((code, proc))
                if seen is None or now - seen > forget_ms:
                    del self.presence[(room, proc, player)]
                    continue
                (live if seen is not None and now - seen <= stale_ms else stale).add(player)
            for (room, proc), seen in list(self.alive.items()):
                if room == code and now - seen > forget_ms:
                    del self.alive[(room, proc)]
            lapsed.append(sorted(stale - live))
        return lapsed

    async def load_game(self, code: str, round_: int, player_id: str) -> StoredGame:
        progress = self.progress.get((code, round_), {}).get(player_id)
        return StoredGame(
            actions=list(self.logs.get((code, round_, player_id), ())),
            last_seq=self.seqs.get((code, round_, player_id), 0),
            seq_actions=dict(self.seq_actions.get((code, round_, player_id), {})),
            progress=RacerProgress.from_record(unpack_record(progress)) if progress else None,
        )

    async def load_logs(self, code: str, round_: int, players: Sequence[str]) -> list[list[str]]:
        return [list(self.logs.get((code, round_, player), ())) for player in players]

    async def read_progress(
        self, rooms: Sequence[tuple[str, int]]
    ) -> list[dict[str, RacerProgress]]:
        return [
            {
                pid: RacerProgress.from_record(unpack_record(record))
                for pid, record in self.progress.get(room, {}).items()
            }
            for room in rooms
        ]

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> None:
        for code, payload in messages:
            self._publish(code, payload)

    def append_action_then(
        self,
        code: str,
        round_: int,
        player_id: str,
        *,
        expected_len: int,
        expected_last_seq: int,
        seq: int,
        action: str,
        progress: RacerProgress,
        then: AppendCallback,
    ) -> None:
        self.appends += 1
        game = (code, round_, player_id)
        packed = pack_record(progress.to_record())

        def store() -> None:
            log = self.logs.setdefault(game, [])
            last = self.seqs.get(game, 0)
            if len(log) != expected_len or last != expected_last_seq:
                then(APPEND_CONFLICT)
                return
            log.append(action)
            if seq > last:
                recent = self.seq_actions.setdefault(game, {})
                recent[seq] = action
                recent.pop(seq - SEQ_WINDOW, None)
            self.seqs[game] = max(last, seq)
            self.progress.setdefault((code, round_), {})[player_id] = packed
            then(AppendResult(True, len(log), self.seqs[game]))

        asyncio.get_running_loop().call_soon(store)

    def _publish(self, code: str, payload: bytes) -> None:
        loop = asyncio.get_running_loop()
        for bus in list(self.buses):
            if code in bus.channels:
                loop.call_soon(bus.handler, code, payload)


__all__ = ["MemoryBus", "MemoryStorage"]
