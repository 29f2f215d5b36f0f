"""What the storage tests need beyond the Storage port, kept out of the production package:
an append as an awaitable, and a write batcher that can hold its replies back and break
its own connection."""

from __future__ import annotations

import asyncio
from typing import Any

from server.core.ports import AppendResult, Storage
from server.storage.redis_pipelines import ActionWriter


def append_action(store: Storage, *args: Any, **kwargs: Any) -> asyncio.Future[AppendResult]:
    """``store.append_action_then(*args, **kwargs)`` (the port's arguments but ``then``) as
    a future."""
    fut: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()

    def then(outcome: AppendResult | BaseException) -> None:
        if fut.done():
            return
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)

    store.append_action_then(*args, **kwargs, then=then)
    return fut


class ProbedWriter(ActionWriter):
    """The write batcher with handles for tests: hold the replies back, count what is in
    flight, break the socket."""

    @property
    def in_flight(self) -> int:
        """Pipelines sent and not answered yet."""
        return len(self._inflight)

    @property
    def connected(self) -> bool:
        return self._reader is not None and not self._reader.lost

    def pause_replies(self) -> None:
        assert self._reader is not None
        self._reader.transport.pause_reading()

    def resume_replies(self) -> None:
        assert self._reader is not None
        self._reader.transport.resume_reading()

    async def break_connection(self) -> None:
        """Close the socket under the pipeliner, as a network failure would."""
        assert self._conn is not None
        await self._conn.disconnect()
