"""The Storage port on Redis, its games' part: a racer's game loaded (its action log,
last seq and progress), the progress of many rooms read at once, bus messages
published, and actions appended: through the fast path's write batcher
(:mod:`server.storage.redis_pipelines`) or, with it off, one redis-py pipeline per
append; with ``wait_replicas``, acknowledged once replicated (WAIT).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoScriptError

from server.core.ports import (
    APPEND_CONFLICT,
    SEQ_WINDOW,
    AppendCallback,
    AppendResult,
    StoredGame,
)
from server.lobby import RacerProgress
from server.storage import redis_cluster
from server.storage.records import pack_record, unpack_record
from server.storage.redis_base import UNAVAILABLE, check_replicated
from server.storage.redis_calls import RedisCalls, pairs, raise_errors


class RedisGames(RedisCalls):
    """Games, progress and publishing (a part of
    :class:`server.storage.redis.RedisStorage`)."""

    # --- games

    async def load_game(self, code: str, round_: int, player_id: str) -> StoredGame:
        if self.wait_replicas > 0:
            # What is loaded may include actions whose WAIT failed (never acknowledged):
            # a retry of one is acknowledged as a duplicate, so first make sure the
            # replicas have everything the master has.
            await self._call(self._replicated_so_far(code), self.keys.sync(code))
        actions, last_seq, progress = raise_errors(
            await self._run(
                ("LRANGE", self.keys.log(code, round_, player_id), 0, -1),
                ("HGET", self.keys.seqs(code, round_), player_id),
                ("HGET", self.keys.progress(code, round_), player_id),
            )
        )
        last = int(last_seq or 0)
        seq_actions: dict[int, str] = {}
        if last > 0:
            seqs = range(max(1, last - SEQ_WINDOW + 1), last + 1)
            (stored,) = raise_errors(
                await self._run(
                    ("HMGET", self.keys.seqs(code, round_), *(f"{player_id}#{seq}" for seq in seqs))
                )
            )
            seq_actions = {
                seq: action.decode()
                for seq, action in zip(seqs, stored, strict=True)
                if action is not None
            }
        return StoredGame(
            actions=[a.decode() for a in actions],
            last_seq=last,
            progress=RacerProgress.from_record(unpack_record(progress)) if progress else None,
            seq_actions=seq_actions,
        )

    async def load_logs(self, code: str, round_: int, players: Sequence[str]) -> list[list[str]]:
        if not players:
            return []
        if self.wait_replicas > 0:  # as load_game: nothing a replica may not have
            await self._call(self._replicated_so_far(code), self.keys.sync(code))
        logs = raise_errors(
            await self._run(
                *(("LRANGE", self.keys.log(code, round_, player), 0, -1) for player in players)
            )
        )
        return [[action.decode() for action in log] for log in logs]

    async def read_progress(
        self, rooms: Sequence[tuple[str, int]]
    ) -> list[dict[str, RacerProgress]]:
        """Every racer's progress record, for several (room, round) at once."""
        if not rooms:
            return []
        replies = raise_errors(
            await self._run(
                *(("HGETALL", self.keys.progress(code, round_)) for code, round_ in rooms)
            )
        )
        return [
            {k.decode(): RacerProgress.from_record(unpack_record(v)) for k, v in pairs(reply)}
            for reply in replies
        ]

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> None:
        if not messages:
            return
        raise_errors(
            await self._run(
                *((self.publish, self.keys.bus(code), payload) for code, payload in messages)
            )
        )

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
        """Queue an append; ``then`` gets the result or the exception, later."""
        if self.fast_paths is not None:
            self.fast_paths.append(
                code,
                round_,
                player_id,
                expected_len,
                expected_last_seq,
                seq,
                action,
                progress,
                then,
            )
            return
        task = asyncio.get_running_loop().create_task(
            self._append_plain(
                code,
                round_,
                player_id,
                expected_len,
                expected_last_seq,
                seq,
                action,
                progress,
                then,
            )
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _append_plain(
        self,
        code: str,
        round_: int,
        player_id: str,
        expected_len: int,
        expected_last_seq: int,
        seq: int,
        action: str,
        progress: RacerProgress,
        then: AppendCallback,
    ) -> None:
        keys = (
            self.keys.seqs(code, round_),
            self.keys.progress(code, round_),
            self.keys.log(code, round_, player_id),
        )
        args = (
            self.room_ttl_s,
            expected_len,
            expected_last_seq,
            seq,
            action,
            player_id,
            pack_record(progress.to_record()),
        )
        try:
            reply = await self._call(self._append_replicated(keys, args), keys[0])
            if isinstance(reply, NoScriptError):  # Redis restarted or SCRIPT FLUSH: load, once
                await self._call(self.load_scripts())
                reply = await self._call(self._append_replicated(keys, args), keys[0])
            if isinstance(reply, Exception):
                raise reply
        except Exception as exc:
            outcome: AppendResult | BaseException = exc
        else:
            reply = int(reply)
            outcome = (
                AppendResult(True, reply, max(seq, expected_last_seq))
                if reply >= 0
                else APPEND_CONFLICT
            )
        if self.on_batch is not None:
            self.on_batch(1, 0.0)
        then(outcome)

    async def _replicated_so_far(self, code: str) -> None:
        """Return once ``wait_replicas`` replicas have every write the master of the
        room's slot has made so far (a write of the room's ``sync`` key, then WAIT, on
        one connection: replication is in order); NotReplicated if they do not within
        the WAIT timeout."""
        await self.replicated_so_far(self.keys.sync(code))

    async def replicated_so_far(self, key: str) -> None:
        """:meth:`_replicated_so_far` for the slot of ``key`` (a key of its own, written
        with a 1-min TTL): the archive's outbox waits so for its puts."""
        commands = [
            ("SET", key, "1", "PX", 60_000),
            ("WAIT", self.wait_replicas, self.wait_timeout_ms),
        ]
        if self.node_clients is not None:
            replies = await redis_cluster.run_on_owner(self.node_clients, key, commands)
        else:  # a pooled connection of its own: WAIT must not hold up the shared pipe
            async with self.redis.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                replies = list(await pipe.execute(raise_on_error=False))
        raise_errors(replies[:1])
        check_replicated(replies[1], self.wait_replicas, self.wait_timeout_ms)

    async def _append_replicated(self, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The append script's reply (an error reply as its exception), after WAIT when
        ``wait_replicas`` asks for it: one pipeline on one connection to the master of
        the room's slot."""
        commands: list[Sequence[Any]] = [("EVALSHA", self.append_sha, len(keys), *keys, *args)]
        if self.wait_replicas > 0:
            commands.append(("WAIT", self.wait_replicas, self.wait_timeout_ms))
        if self.node_clients is not None:
            replies = await redis_cluster.run_on_owner(self.node_clients, keys[0], commands)
        else:
            async with self.redis.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                replies = list(await pipe.execute(raise_on_error=False))
        if isinstance(replies[0], UNAVAILABLE):
            raise replies[0]  # the master is not answering (_call says so)
        if isinstance(replies[0], Exception):
            return replies[0]
        if self.wait_replicas > 0:
            check_replicated(replies[1], self.wait_replicas, self.wait_timeout_ms)
        return replies[0][0]


__all__ = ["RedisGames"]
