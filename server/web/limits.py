"""Per-address quotas (docs/server.md, "Limits and backpressure"): open connections and
new guest players per minute. Plain Python, per process; the web layer asks and tells.

>>> quotas = AddressQuotas(max_connections=2, new_players_per_min=1)
>>> quotas.open_connection("10.0.0.1"), quotas.open_connection("10.0.0.1")
(True, True)
>>> quotas.open_connection("10.0.0.1")
False
>>> quotas.close_connection("10.0.0.1"); quotas.open_connection("10.0.0.1")
True
>>> quotas.may_create_player("10.0.0.1", now=0.0)
True
>>> quotas.player_created("10.0.0.1", now=0.0); quotas.may_create_player("10.0.0.1", now=30.0)
False
>>> quotas.prune(now=61.0); quotas.may_create_player("10.0.0.1", now=61.0)
True
"""

from __future__ import annotations

import collections

# The window of the new-players quota.
NEW_PLAYER_WINDOW_S = 60.0


class AddressQuotas:
    """Counts per client address; a limit of 0 means no limit. Memory is bounded by the
    addresses with an open connection or a guest created in the last minute (each with
    at most ``new_players_per_min`` timestamps); ``prune`` forgets the rest."""

    def __init__(self, max_connections: int, new_players_per_min: int) -> None:
        self.max_connections = max_connections
        self.new_players_per_min = new_players_per_min
        self._connections: dict[str, int] = {}
        self._new_players: dict[str, collections.deque[float]] = {}

    def open_connection(self, address: str) -> bool:
        """Count a new connection of ``address``; False (not counted) if over the limit."""
        count = self._connections.get(address, 0)
        if self.max_connections and count >= self.max_connections:
            return False
        self._connections[address] = count + 1
        return True

    def close_connection(self, address: str) -> None:
        count = self._connections.get(address, 0) - 1
        if count > 0:
            self._connections[address] = count
        else:
            self._connections.pop(address, None)

    def connections(self, address: str) -> int:
        return self._connections.get(address, 0)

    def may_create_player(self, address: str, now: float) -> bool:
        if not self.new_players_per_min:
            return True
        times = self._new_players.get(address)
        if times is None:
            return True
        while times and now - times[0] >= NEW_PLAYER_WINDOW_S:
            times.popleft()
        return len(times) < self.new_players_per_min

    def player_created(self, address: str, now: float) -> None:
        if not self.new_players_per_min:
            return
        times = self._new_players.setdefault(
            address, collections.deque(maxlen=self.new_players_per_min)
        )
        times.append(now)

    def prune(self, now: float) -> None:
        """Forget addresses whose last guest was created over a minute ago."""
        stale = [
            address
            for address, times in self._new_players.items()
            if not times or now - times[-1] >= NEW_PLAYER_WINDOW_S
        ]
        for address in stale:
            del self._new_players[address]
