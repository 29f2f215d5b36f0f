"""Stopping a background loop task for certain.

Python 3.11's ``asyncio.wait_for`` swallows a cancellation that arrives in the loop turn
in which the call it waits for completes: it returns the call's result instead of
raising ``CancelledError`` (fixed in 3.12; CPython gh-86296). The server's loops (the
progress flush, presence, the daily and tournament ticks) await storage calls through
``wait_for``, so one ``cancel()`` can be lost, the loop goes on, and a ``stop()`` that
awaits it waits forever (seen: a test's teardown hung until its 120-s timeout, the
loop still flushing every 20 ms). :func:`cancel_and_wait` cancels again until the task
is done.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any], *, retry_s: float = 0.1) -> None:
    """Cancel ``task`` (again every ``retry_s`` while it runs) and wait until it is done.
    An exception it ended with, other than the cancellation, is raised here."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=retry_s)
    if not task.cancelled():
        task.result()
