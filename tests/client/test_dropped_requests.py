"""A request whose connection drops while its frame is being sent: the caller gets
``ConnectionLost``, and the reply's future, failed by the drop, is not left behind for
asyncio to report as "Future exception was never retrieved" (the soak's clients logged
it at every server kill)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from crescent_client.connection import Connection
from crescent_client.errors import ConnectionLost
from crescent_wire.protocol import Join


async def test_a_request_dropped_while_sending_leaves_no_unretrieved_future() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    conn = Connection("ws://127.0.0.1:9/ws", reconnect=False)

    async def send_while_the_connection_drops(data: bytes, **_: Any) -> None:
        # The reader saw the close while this frame was going out: every waiting
        # request is failed, then the send itself fails.
        conn._connection_closed(1006)  # noqa: SLF001
        raise ConnectionLost("connection dropped while sending")

    conn._send = send_while_the_connection_drops  # type: ignore[method-assign]  # noqa: SLF001
    with pytest.raises(ConnectionLost):
        await conn._request(Join(room="ABCDEF", id=7))  # noqa: SLF001
    gc.collect()  # a future with an unretrieved exception is reported when it is freed
    assert [c["message"] for c in reported] == []
