"""The reconnect loop (docs/protocol.md, "Reconnecting"; docs/client.md).

When the connection drops (network, server restart, deploy: close 1001),
:class:`Reconnecting` emits ``Disconnected(close_code, reconnecting=True)``, waits the
backoff delays, opens a new connection with ``hello`` and the token (same player),
joins every room again with the role it had, subscribes to its tournaments again,
resends every action still waiting for its ack and emits ``Reconnected``. Close codes
1009 and 4002 are not retried, nor is a refused token or room; a hello or join answered
``internal_error`` (a server fault, e.g. its Redis failing over) is tried again.
"""

from __future__ import annotations

import asyncio

from websockets.exceptions import ConnectionClosed, InvalidHandshake

from crescent_client.connection import Connection
from crescent_client.errors import ConnectionLost, RequestFailed, RequestTimeout
from crescent_client.session import Disconnected, Reconnected
from crescent_wire.protocol import Join, TGet, TJoin

# Close codes after which reconnecting cannot help (docs/protocol.md, "Close codes").
FATAL_CLOSE_CODES = frozenset({1009, 4002})
# Errors answered to the hello or a join while resuming that say "retry"
# (docs/protocol.md, "Error codes"): the next attempt goes after the next delay.
RETRIED_CODES = frozenset({"internal_error"})
RECONNECT_TAIL = 20  # attempts at the last delay once the list is used up
# A reconnect attempt that fails in one of these ways is tried again after the next delay.
_RETRIED = (
    OSError,
    InvalidHandshake,
    ConnectionClosed,
    ConnectionLost,
    RequestTimeout,
    TimeoutError,
)


class Reconnecting(Connection):
    """A :class:`Connection` that reconnects and resumes after a drop (unless
    ``reconnect=False``)."""

    def _dropped(self, close_code: int | None) -> None:
        current = asyncio.current_task()
        if (
            self._reconnector is not None
            and not self._reconnector.done()
            and self._reconnector is not current
        ):
            return  # the reconnect loop in progress notices the failure itself
        if not self.reconnect_enabled or close_code in FATAL_CLOSE_CODES:
            super()._dropped(close_code)
            return
        self._push(Disconnected(close_code, True))
        self._reconnector = asyncio.get_running_loop().create_task(self._reconnect())
        self._notify()

    async def _reconnect(self) -> None:
        """Reconnect with backoff (docs/protocol.md), then resume the session."""
        for delay in (*self.reconnect_delays, *([self.reconnect_delays[-1]] * RECONNECT_TAIL)):
            await asyncio.sleep(delay)
            try:
                await self._open_connection()
                resent = await self._resume()
            except _RETRIED:
                if self._ws is not None:
                    await self._ws.close()
                continue
            except RequestFailed as err:
                if err.code in RETRIED_CODES:  # a server fault, e.g. its storage away
                    if self._ws is not None:
                        await self._ws.close()
                    continue
                # The server refused our token or a room: reconnecting cannot fix that.
                self._give_up(ConnectionLost(f"reconnect refused: {err.code}"))
                return
            self.reconnects += 1
            self._online.set()
            subscribed = tuple(c for c, t in self.session.tournaments.items() if t.subscribed_as)
            self._push(Reconnected(tuple(self.session.rooms), resent, subscribed))
            self._notify()
            return
        self._give_up(ConnectionLost("could not reconnect"))

    async def _resume(self) -> int:
        """On a new connection: join every room again with its role, subscribe to every
        tournament again, resend the waiting actions; returns how many were resent."""
        session = self.session
        for state in list(session.rooms.values()):
            join = Join(room=state.code, as_=state.role, id=session.next_id())
            self._adopt_snapshot(await self._request(join, online=False))
        for code, as_ in session.subscriptions():
            try:
                reply = await self._request(
                    TJoin(tournament=code, as_=as_, id=session.next_id()), online=False
                )
            except RequestFailed:
                # Removed meanwhile, or the tournament is over: no subscription any
                # more, but its state is still worth having.
                session.tournaments[code].subscribed_as = None
                reply = await self._request(
                    TGet(tournament=code, id=session.next_id()), online=False
                )
            self._adopt_tournament(reply)
        resent = 0
        for pending in session.acts_to_resend():
            future = self._waiters.get(pending.id)
            if future is None or future.done():
                continue
            # Its seq may be at or below the stored last_seq: then the server answers
            # a duplicate ack, which is what we want.
            ws = self._ws
            assert ws is not None
            await ws.send(pending.frame())
            resent += 1
        return resent
