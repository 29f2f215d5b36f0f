"""A WebSocketResponse whose binary frames are first offered to a synchronous handler.

aiohttp hands every received frame to a queue, and the socket's handler task wakes up
to ``receive()`` it: a future, a wake-up and a task step per frame. For the server's
hottest request (``act``), the hub can do its part without awaiting anything (it
applies the action and queues its append; the write batcher calls back when Redis has
stored it), so :class:`DispatchQueue` offers each binary frame to ``fast`` (set by the
web layer) as it is parsed, inside ``data_received``. What ``fast`` declines goes to
aiohttp's queue and the handler task as usual: text and control frames, every other
request, and any act the fast path cannot answer on its own.

Order is kept per socket, as if one task handled every frame in turn:

- while the handler task still has frames (``slow`` > 0), later frames queue behind
  them instead of overtaking them;
- while a frame taken by ``fast`` waits for its reply (``busy``), later binary frames
  wait in ``backlog`` and are offered again, in order, once it is answered.

This is the only module touching aiohttp internals (``WebSocketResponse._post_start``
and the ``WebSocketDataQueue`` / ``WebSocketReader`` pair of
``aiohttp._websocket.reader``). It is imported only with the ``aiohttp`` fast path on
(``Settings.fast_paths``, the default); off, sockets are plain aiohttp (slower, same
behaviour). :data:`WRITTEN_FOR` names the aiohttp version it was written against:
tests/server/test_pins.py fails, naming it, when the installed version differs.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web
from aiohttp._websocket.reader import WebSocketDataQueue, WebSocketReader
from aiohttp.helpers import DEFAULT_CHUNK_SIZE

log = logging.getLogger("server.web")

WRITTEN_FOR = ("aiohttp", "3.14.5")  # (distribution, exact version): tests/server/test_pins.py

# Above this many frames parked behind an unanswered one, stop reading the socket: a
# client flooding frames must not grow the server's memory (the rate limit answers
# them once they are handled).
BACKLOG_PAUSE = 64


class DispatchQueue(WebSocketDataQueue):
    """aiohttp's per-socket frame queue, offering binary frames to ``fast`` first."""

    def __init__(self, protocol: Any, limit: int, *, loop: Any) -> None:
        super().__init__(protocol, limit, loop=loop)
        # payload -> True if taken (answered now, or later with ``answered()``)
        self.fast: Callable[[bytes], bool] | None = None
        self.slow = 0  # binary frames given to the handler task, not yet done
        self.busy = False  # a frame ``fast`` took is not answered yet
        self.backlog: collections.deque[tuple[Any, int]] = collections.deque()
        self.paused = False

    def feed_data(self, data: Any, size: int) -> None:
        if data.type is WSMsgType.BINARY:
            if self.busy:
                self.backlog.append((data, size))
                if len(self.backlog) >= BACKLOG_PAUSE and not self.paused:
                    self.paused = True
                    self._protocol.pause_reading()
                return
            fast = self.fast
            if self.slow == 0 and fast is not None and fast(data.data):
                return
            self.slow += 1
        WebSocketDataQueue.feed_data(self, data, size)

    def slow_done(self) -> None:
        """The handler task has handled one binary frame it got from the queue."""
        self.slow -= 1
        if not self.slow:
            self._drain_backlog()

    def answered(self) -> None:
        """The reply to the frame ``fast`` took has been sent (or queued to send)."""
        self.busy = False
        self._drain_backlog()

    def _drain_backlog(self) -> None:
        backlog = self.backlog
        while backlog and not self.busy:
            data, size = backlog.popleft()
            self.feed_data(data, size)
        if self.paused and not backlog:
            self.paused = False
            self._protocol.resume_reading()


class DispatchingWebSocketResponse(web.WebSocketResponse):
    """A WebSocketResponse whose frames arrive through a :class:`DispatchQueue`."""

    dispatch: DispatchQueue | None = None

    def _post_start(self, request: Any, protocol: Any, writer: Any) -> None:
        # aiohttp 3.14's _post_start, with the queue replaced by a DispatchQueue.
        self._ws_protocol = protocol
        self._writer = writer
        self._reset_heartbeat()
        loop = self._loop
        assert loop is not None
        queue = DispatchQueue(request._protocol, DEFAULT_CHUNK_SIZE, loop=loop)  # noqa: SLF001
        self._reader = queue
        self._parser = WebSocketReader(
            queue, self._max_msg_size, compress=bool(self._compress), decode_text=self._decode_text
        )
        cb = None if self._heartbeat is None else self._on_data_received
        request.protocol.set_parser(self._parser, data_received_cb=cb)
        request.protocol.keep_alive(False)
        self.dispatch = queue
