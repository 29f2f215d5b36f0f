"""Errors the client library raises. Each carries a ``code``.

Server-side codes (``room_not_found``, ``not_started``…) come straight from the
server's ``error`` message (docs/protocol.md, "Errors"); the client adds its own
codes for what happens on its side of the wire.

>>> err = RequestFailed("room_full", "Every seat in this room is taken")
>>> err.code, str(err)
('room_full', 'room_full: Every seat in this room is taken')
"""

from __future__ import annotations


class ClientError(Exception):
    """Base of every error of this library: ``code`` (machine) and ``message`` (human)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class RequestFailed(ClientError):
    """The server answered a request with ``error``; ``code`` is the server's code."""


class ConnectionLost(ClientError):
    """The connection closed and the client could not (or was told not to) reconnect.

    ``close_code`` is the WebSocket close code when one was received (e.g. 4008).
    """

    def __init__(self, message: str, close_code: int | None = None) -> None:
        super().__init__("connection_lost", message)
        self.close_code = close_code


class RequestTimeout(ClientError):
    """No reply within the client's timeout."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__("timeout", f"no reply to {what} within {seconds:g} s")


class NotInRoom(ClientError):
    """A room operation for a room this client has not joined (or with no room given)."""

    def __init__(self, message: str) -> None:
        super().__init__("not_in_room", message)
