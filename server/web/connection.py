"""One client socket (:class:`WsConnection`): its player and rooms, its outgoing frames
written straight to the transport with backpressure (the send queue, the drain, the 4009
close of a client that does not read), and its rate limit. Its act fast path:
:mod:`server.web.fast_acts`."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable

from aiohttp import web

from crescent_wire import protocol as p
from crescent_wire.errors import CLOSE_SLOW_CONSUMER, ProtocolError
from server.auth import Player

log = logging.getLogger("server.web")


# A racer active this recently gets progress frames with its next reply (at most this
# much later): see WsConnection.send_progress.
PROGRESS_STASH_S = 0.1

# Above this many bytes waiting in a socket's transport (the kernel's buffer is full: the
# client is not keeping up) the connection stops writing each turn's frames directly and
# queues them; the drain writes the whole queue in one write whenever the transport holds
# at most DRAIN_LOW_WATER, looking every DRAIN_POLL_S. One write per drain, not one per
# frame: uvloop keeps each write() call as its own request with ~1 KiB of bookkeeping
# until the client reads it, so 256 KiB of small frames written one by one held ~3 MiB
# (tests/server/test_memory.py).
WRITE_HIGH_WATER = 16 * 1024
DRAIN_LOW_WATER = 64 * 1024
DRAIN_POLL_S = 0.02

# A client closed for not reading (4009) gets this long to read what is still buffered
# (the close frame last) before its socket is dropped.
SLOW_CONSUMER_GRACE_S = 5.0


def _frame_header(length: int) -> bytes:
    """RFC 6455 header of an unmasked, final, binary frame (what a server sends)."""
    if length < 126:
        return bytes((0x82, length))
    if length < 65536:
        return b"\x82\x7e" + length.to_bytes(2, "big")
    return b"\x82\x7f" + length.to_bytes(8, "big")


def _framed(frames: Iterable[bytes]) -> bytes:
    """The frames, each behind its header, as one buffer for one write."""
    return b"".join([part for frame in frames for part in (_frame_header(len(frame)), frame)])


class WsConnection:
    """One client socket: its player, its rooms, its outgoing frames, its rate.

    Outgoing frames are written straight to the transport as binary WebSocket frames
    (the socket never negotiates compression): broadcasts queued during one turn of the
    event loop go out together with the request's reply in one ``write`` (one system
    call instead of one per frame), in the order they were queued. A client that stops
    reading (its transport's buffer above ``WRITE_HIGH_WATER``) gets its frames queued
    and written in one write whenever its buffer drains (``_drain``); meanwhile its
    progress frames are coalesced (the newest per room waits), and once
    more than ``send_limit`` bytes wait for it (queued frames plus the socket's write
    buffer) it is closed with 4009: memory per connection stays bounded.
    """

    __slots__ = (
        "_draining",
        "_flush_scheduled",
        "_held_progress",
        "_queue",
        "_queued_bytes",
        "_stashed",
        "address",
        "flood_count",
        "high_water",
        "last_refill",
        "last_seen",
        "loop",
        "overflowed",
        "ping_sent",
        "player",
        "rooms",
        "send_limit",
        "tokens",
        "transport",
        "ws",
    )

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        burst: int,
        send_limit: int = 0,
        address: str = "",
    ) -> None:
        self.ws = ws
        self.transport = transport
        # asyncio.get_running_loop() costs a getpid() system call on every call (its
        # fork check): the loop is looked up once per socket.
        self.loop = asyncio.get_running_loop()
        self.player: Player | None = None
        self.rooms: set[str] = set()
        self.tokens = float(burst)
        self.last_refill = time.monotonic()
        self.last_seen = self.last_refill  # when a frame (any) last arrived
        self.ping_sent = 0.0  # when the heartbeat pinged this silent socket (0: not)
        self.flood_count = 0
        self._queue: collections.deque[bytes] = collections.deque()
        self._draining = False  # the slow path (a task awaiting aiohttp's send) runs
        self._stashed: bytes | None = None  # a progress frame waiting for the next reply
        self._flush_scheduled = False
        self._queued_bytes = 0  # the bytes of the frames in _queue
        self._held_progress: dict[object, bytes] = {}  # room -> newest, while _draining
        self.send_limit = send_limit  # 0: no limit
        self.address = address
        self.overflowed = False
        # never more in the socket's buffer than the connection may hold in all
        self.high_water = min(WRITE_HIGH_WATER, send_limit) if send_limit else WRITE_HIGH_WATER

    def _enqueue(self, frame: bytes) -> None:
        self._queue.append(frame)
        self._queued_bytes += len(frame)
        if self._draining and self.send_limit:
            transport = self.transport
            waiting = self._queued_bytes + (
                transport.get_write_buffer_size() if transport is not None else 0
            )
            if waiting > self.send_limit:
                self._overflow()

    def _overflow(self) -> None:
        """The client leaves more than ``send_limit`` bytes unread: drop what waits for
        it, write a 4009 close frame behind what is buffered and end the sending side
        (the handler discards what still arrives: closing a socket with unread input
        would reset it, and the client would lose the close frame); the socket is
        dropped if it is still open ``SLOW_CONSUMER_GRACE_S`` later."""
        if self.overflowed:
            return
        self.overflowed = True
        log.warning(
            "closing a connection that does not read its frames",
            extra={"player": self.player.id if self.player else None, "limit": self.send_limit},
        )
        self._queue.clear()
        self._queued_bytes = 0
        self._held_progress.clear()
        self._stashed = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        reason = CLOSE_SLOW_CONSUMER.to_bytes(2, "big") + b"send buffer full"
        transport.write(bytes((0x88, len(reason))) + reason)
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(SLOW_CONSUMER_GRACE_S, transport.abort)

    def send(self, frame: bytes) -> None:
        """Queue a broadcast frame; written at the end of this loop turn, in order."""
        if self.ws.closed or self.overflowed:
            return
        self._unstash()
        self._enqueue(frame)
        if not self._flush_scheduled and not self._draining:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def send_progress(self, frame: bytes) -> None:
        """A progress frame. A racer who sent a frame in the last ``PROGRESS_STASH_S``
        will most likely get a reply soon: the frame waits for it (a later progress
        frame replaces it) and both go out in one write, at most ``PROGRESS_STASH_S``
        later. Progress is most of what a racer receives; this spares a system call
        on each side for most of them. While the client is not reading (the slow
        path drains), only the newest frame per room waits."""
        if self._draining:
            self._hold_progress(frame)
            return
        if len(self.rooms) != 1 or time.monotonic() - self.last_seen > PROGRESS_STASH_S:
            self.send(frame)
            return
        if self._stashed is None:
            self.loop.call_later(PROGRESS_STASH_S, self._release_stash)
        self._stashed = frame

    def _unstash(self) -> None:
        """Queue the waiting progress frame (if any) before the frame about to go: it
        shows the state before that frame."""
        stashed = self._stashed
        if stashed is not None:
            self._stashed = None
            self._enqueue(stashed)

    def _release_stash(self) -> None:
        frame, self._stashed = self._stashed, None
        if frame is not None:
            if self._draining:
                self._hold_progress(frame)
            else:
                self.send(frame)

    def _hold_progress(self, frame: bytes) -> None:
        """Keep ``frame`` as its room's newest progress until the drain gets to it."""
        if self.ws.closed or self.overflowed:
            return
        try:
            room = p.unpack_map(frame).get("room")
        except ProtocolError:
            room = None
        self._held_progress[room if isinstance(room, str) else None] = frame

    def reply_soon(self, frame: bytes) -> None:
        """``reply`` for a caller that cannot await: written now if it can be, else
        queued behind the frames already waiting (the slow path sends it)."""
        if self.overflowed:
            return
        self._unstash()
        if self._queue or self._draining or not self._write_one(frame):
            self._enqueue(frame)
            if not self._draining:
                self._flush()

    def _write_one(self, frame: bytes) -> bool:
        """``_write`` of one frame (an ack, most often), without the join."""
        return self._write_bytes(_frame_header(len(frame)) + frame)

    async def reply(self, frame: bytes) -> None:
        """Send a request's reply after every frame queued before it (e.g. the events
        the request caused), so a client sees them in the order they happened. A
        client that does not read gets it queued (within ``send_limit``)."""
        self.reply_soon(frame)

    def _write(self, frames: Iterable[bytes]) -> bool:
        """Write the frames now, as one write; False if the slow path must do it."""
        return self._write_bytes(_framed(frames))

    def _write_bytes(self, data: bytes) -> bool:
        """Write framed bytes now; False if the slow path must do it (the client is not
        reading); True also when the socket is gone (the handler cleans up)."""
        transport = self.transport
        if self.ws.closed or self.overflowed or transport is None or transport.is_closing():
            return True
        if transport.get_write_buffer_size() > self.high_water:
            return False
        transport.write(data)
        return True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._draining or not self._queue:
            return
        if self._write(self._queue):
            self._queue.clear()
            self._queued_bytes = 0
        else:
            self._draining = True
            self.loop.create_task(self._drain())

    async def _drain(self) -> None:
        """Write what waits for a client that is not keeping up, all of it in one write
        each time its transport's buffer has drained to ``DRAIN_LOW_WATER``."""
        queue, held = self._queue, self._held_progress
        transport = self.transport
        try:
            # Until the transport has drained, even with nothing queued: meanwhile every
            # frame queued counts against the send buffer (a 4009 when over it).
            while not self.ws.closed and not self.overflowed:
                if transport is None or transport.is_closing():
                    break
                if transport.get_write_buffer_size() > DRAIN_LOW_WATER:
                    await asyncio.sleep(DRAIN_POLL_S)
                    continue
                if not (queue or held):
                    break
                frames = [*queue, *held.values()]  # progress last: the newest state
                queue.clear()
                held.clear()
                self._queued_bytes = 0
                transport.write(_framed(frames))
        except (ConnectionError, RuntimeError):
            pass  # the socket closed meanwhile; the handler cleans up
        finally:
            if self.ws.closed or self.overflowed:
                queue.clear()
                held.clear()
                self._queued_bytes = 0
            self._draining = False

    def control(self, opcode: int, payload: bytes = b"") -> None:
        """Write a control frame (ping 0x9, pong 0xA) now; payload at most 125 bytes."""
        transport = self.transport
        if (
            not self.ws.closed
            and not self.overflowed
            and transport is not None
            and not transport.is_closing()
        ):
            transport.write(bytes((0x80 | opcode, len(payload))) + payload)

    def take_token(self, rate: float, burst: int) -> bool:
        now = time.monotonic()
        self.last_seen = now
        self.tokens = min(float(burst), self.tokens + (now - self.last_refill) * rate)
        self.last_refill = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False
