"""The Storage port on Redis, its rooms' part: the token secret, players, the rooms
(read, compare-and-set with their events and bus message), the players' room lists, and
presence (a player's sockets over the processes still alive). The keys are
:mod:`server.storage.redis_base`'s, the scripts :mod:`server.storage.redis_scripts`'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import NoScriptError

from crescent_wire.errors import ConflictError
from server.lobby import Room
from server.storage.records import pack_record, unpack_record
from server.storage.redis_base import PLAYER_TTL_S
from server.storage.redis_calls import RedisCalls, raise_errors


class RedisRooms(RedisCalls):
    """Players, rooms and presence (a part of :class:`server.storage.redis.RedisStorage`)."""

    # --- secret and players

    async def ensure_secret(self, candidate: str) -> str:
        """The shared secret: ``candidate`` if no process stored one yet (SET NX)."""
        await self.redis.set(self.keys.secret(), candidate, nx=True)
        stored = await self.redis.get(self.keys.secret())
        if isinstance(stored, bytes):
            return stored.decode()
        return stored or candidate

    async def save_player(self, player_id: str, name: str, now: int) -> None:
        key = self.keys.player(player_id)
        # The whole pipeline under the guard: its exit may raise too (a refused
        # connection in the soak, a request's traceback before).
        await self._call(self._save_player(key, name, now), key)

    async def _save_player(self, key: str, name: str, now: int) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping={"name": name, "seen": now})
            pipe.hsetnx(key, "created", now)
            pipe.expire(key, PLAYER_TTL_S)
            await pipe.execute()

    # --- rooms

    async def player_rooms(self, player_id: str) -> list[str]:
        (blob,) = raise_errors(await self._run(("GET", self.keys.player_rooms(player_id))))
        return list(unpack_record(blob)) if blob is not None else []

    async def set_player_rooms(self, player_id: str, codes: Sequence[str]) -> None:
        raise_errors(
            await self._run(
                (
                    "SET",
                    self.keys.player_rooms(player_id),
                    pack_record(list(codes)),
                    "EX",
                    self.room_ttl_s,
                )
            )
        )

    async def load_room(self, code: str) -> Room | None:
        (blob,) = raise_errors(await self._run(("HGET", self.keys.room(code), "blob")))
        return Room.from_record(unpack_record(blob)) if blob is not None else None

    async def cas_room(
        self,
        code: str,
        expected_ver: int,
        room: Room,
        event_frames: Sequence[bytes],
        bus_payload: bytes | None,
    ) -> None:
        """Store ``room`` if the stored version is ``expected_ver`` (-1: must not exist).

        Appends ``event_frames`` to the history and publishes ``bus_payload`` in the same
        atomic step. Raises ``ConflictError`` if another writer got there first.
        """
        keys = [
            self.keys.room(code),
            self.keys.events(code),
            self.keys.presence(code),
            self.keys.bus(code),
        ]
        args = [
            expected_ver,
            room.ver,
            pack_record(room.to_record()),
            self.room_ttl_s,
            bus_payload or b"",
            *event_frames,
        ]
        (result,) = await self._run(("EVALSHA", self.cas_sha, len(keys), *keys, *args))
        if isinstance(result, NoScriptError):  # Redis restarted or SCRIPT FLUSH: load, once
            await self.load_scripts()
            (result,) = await self._run(("EVALSHA", self.cas_sha, len(keys), *keys, *args))
        if isinstance(result, Exception):
            raise result
        if result != -2:
            raise ConflictError(f"room {code}: expected version {expected_ver}, found {result}")

    async def read_events(self, code: str) -> list[bytes]:
        key = self.keys.events(code)
        frames = await self._call(self.redis.lrange(key, 0, -1), key)
        return [f if isinstance(f, bytes) else f.encode() for f in frames]

    async def presence_change(
        self, code: str, player_id: str, delta: int, *, process: str, now: int, stale_ms: int
    ) -> int:
        """Add ``delta`` to the player's open sockets on ``process`` in the room, mark the
        process alive there; the player's sockets over the processes alive within
        ``stale_ms``."""
        (count,) = await self._eval_scripts(
            lambda: [
                (
                    "EVALSHA",
                    self.presence_change_sha,
                    2,
                    self.keys.presence(code),
                    self.keys.alive(code),
                    process,
                    player_id,
                    delta,
                    now,
                    stale_ms,
                    self.room_ttl_s,
                )
            ]
        )
        return int(count)

    async def presence_refresh(self, process: str, codes: Sequence[str], now: int) -> None:
        """Mark ``process`` alive at ``now`` in each of the rooms (and keep their presence
        keys from expiring)."""
        commands: list[tuple[Any, ...]] = []
        for code in codes:
            alive = self.keys.alive(code)
            commands += [
                ("HSET", alive, process, now),
                ("EXPIRE", alive, self.room_ttl_s),
                ("EXPIRE", self.keys.presence(code), self.room_ttl_s),
            ]
        if commands:
            raise_errors(await self._run(*commands))

    async def presence_lapsed(
        self, codes: Sequence[str], now: int, stale_ms: int, forget_ms: int
    ) -> list[list[str]]:
        """Per room: the players whose sockets are all on processes silent for more than
        ``stale_ms``; processes silent for more than ``forget_ms`` are dropped."""
        if not codes:
            return []
        replies = await self._eval_scripts(
            lambda: [
                (
                    "EVALSHA",
                    self.presence_lapsed_sha,
                    2,
                    self.keys.presence(code),
                    self.keys.alive(code),
                    now,
                    stale_ms,
                    forget_ms,
                )
                for code in codes
            ]
        )
        return [sorted(p.decode() for p in reply) for reply in replies]

    async def _eval_scripts(self, commands: Callable[[], Sequence[Sequence[Any]]]) -> list[Any]:
        """Run EVALSHA commands (built by ``commands`` with the current script hashes);
        after a NOSCRIPT (Redis restarted), load the scripts and run them again, once: a
        script that did not run changed nothing."""
        replies = await self._run(*commands())
        if any(isinstance(r, NoScriptError) for r in replies):
            await self.load_scripts()
            replies = await self._run(*commands())
        return raise_errors(replies)


__all__ = ["RedisRooms"]
