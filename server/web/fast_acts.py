"""The act fast path of one socket (:class:`FastActs`): an ``act`` the hub can answer
without awaiting anything is taken as its frame is parsed (server.web.aiohttp_fast),
without waking the socket's handler task; anything else is declined and the handler
task answers it as any other frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from server.config import Settings
from server.core import wire_server
from server.core.hub import Hub
from server.metrics import Metrics

if TYPE_CHECKING:  # only with the aiohttp fast path on: imported by websocket.py then
    from server.web.aiohttp_fast import DispatchQueue
    from server.web.connection import WsConnection


@dataclass(slots=True, eq=False)
class FastActs:
    """Offered every binary frame of ``conn`` by its ``dispatch`` queue (``frame``); made,
    it sets itself as the queue's ``fast`` (which holds it)."""

    conn: WsConnection
    dispatch: DispatchQueue
    hub: Hub
    metrics: Metrics
    settings: Settings

    def __post_init__(self) -> None:
        self.dispatch.fast = self.frame

    def frame(self, data: bytes) -> bool:
        """Takes an ``act`` the hub can handle without awaiting anything (True), else
        declines (False) and the handler task answers the frame as any other.
        Declining does nothing: no token is spent, no reply is sent."""
        conn = self.conn
        if conn.player is None or conn.overflowed:
            return False
        msg = wire_server.decode_act(data)
        if msg is None:
            return False
        settings = self.settings
        if not conn.take_token(settings.rate_per_s, settings.rate_burst):
            return False  # the handler task answers rate_limited (and counts the flood)
        self.dispatch.busy = True  # before the hub: a refusal is answered at once
        try:
            taken = self.hub.act_now(conn, msg, self._answer)
        except Exception as exc:  # a bug: answer as the handler task would, keep the socket
            self._answer(self.hub.error_frame(exc, msg.id))
            return True
        if taken:
            conn.flood_count = 0
            self.metrics.count_message("act")
            self.metrics.fast_path += 1
            return True
        self.dispatch.busy = False
        conn.tokens += 1.0  # give back the token: the handler task takes one again
        return False

    def _answer(self, frame: bytes) -> None:
        self.conn.reply_soon(frame)
        self.dispatch.answered()
