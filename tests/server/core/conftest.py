"""Fixtures of the core's fast tests: in-memory storage, a manual clock, a started hub
(no sockets, no Redis). A test module overrides ``storage`` or ``clock`` where it needs
another (a failing storage, a clock near midnight)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.storage.memory import MemoryStorage
from tests.server.core_support import ManualClock, SettlingHub, start_hub


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def storage() -> MemoryStorage:
    return MemoryStorage()


@pytest.fixture
async def hub(storage: MemoryStorage, clock: ManualClock) -> AsyncIterator[SettlingHub]:
    hub = await start_hub(storage, clock)
    yield hub
    await hub.stop()
