"""Presence of players whose server process died: each process keeps its own presence
alive, and marks offline the players of processes that went silent.

Every process counts its own sockets per room and player in storage and refreshes, about
every third of the staleness window, a sign of life in each room it has sockets in. A
process that stops refreshing (killed, hung, cut off from storage) is silent: once it has
been silent for the window, every process with the room local marks that process's
players ``connected: false`` (the usual compare-and-set event, which also starts their
disconnect-resign clock), unless they have a socket on a live process.

Two safeguards against marking live players offline:
- A process judges others only after its own refreshes have succeeded, without a gap
  longer than the window, for a whole window (at start-up, after a storage outage or a
  pause, when every process's signs of life may have lapsed together): by then every
  live process has refreshed too.
- A process whose own players are marked offline while their sockets are still here
  (it was paused or cut off for longer than the window) marks them online again.

Tournament rounds are left out: they do not track who is online (``Room.set_connected``
changes nothing there), so judging them would find the same players lapsed at every
tick. Lapses are logged once per episode with a count (``RepeatedEvent``), never once
per player per tick.
"""

from __future__ import annotations

import logging

from server.core.periodic import run_periodically
from server.core.ports import Clock, Storage
from server.core.rooms import Rooms
from server.logs import RepeatedEvent

log = logging.getLogger("server.presence")

# A process silent for this many windows is dropped from a room's presence.
FORGET_AFTER_WINDOWS = 10


def presence_stale_ms(timeout_s: float) -> int:
    """The staleness window for a promise of ``timeout_s``: a process refreshes every
    third of the window, so a dead one's players are marked offline at most a window and
    a third (the timeout) after its last refresh."""
    return round(timeout_s * 1000 * 3 / 4)


class Presence:
    def __init__(self, storage: Storage, rooms: Rooms, clock: Clock, *, stale_ms: int) -> None:
        self.storage = storage
        self.rooms = rooms
        self.clock = clock
        self.stale_ms = stale_ms
        self.refresh_every_s = stale_ms / 3 / 1000
        # Since when this process's refreshes have all succeeded (None: the last failed).
        self.refreshing_since: int | None = None
        self.refreshed_at: int | None = None  # this process's last refresh
        self.lapses = RepeatedEvent(
            log,
            "presence lapsed: marking offline the players of silent processes",
            clock=lambda: self.clock() / 1000,
        )

    async def run(self) -> None:
        await run_periodically(self.tick, self.refresh_every_s, name="presence refresh", log=log)

    async def tick(self) -> None:
        """Refresh this process's presence; then, if it has refreshed for a whole window,
        mark offline the players whose sockets were all on silent processes (and online
        again this process's own players marked offline meanwhile)."""
        codes = list(self.rooms.local)
        now = self.clock()
        try:
            await self.storage.presence_refresh(self.rooms.process, codes, now)
        except BaseException:
            self.refreshing_since = None
            raise
        if (
            self.refreshing_since is None
            or self.refreshed_at is None
            or now - self.refreshed_at > self.stale_ms
        ):
            # The first refresh, or the first after a failure or a pause longer than the
            # window (say, the whole machine was suspended): start counting again.
            self.refreshing_since = now
        self.refreshed_at = now
        if now - self.refreshing_since < self.stale_ms or not codes:
            return
        lapsed = await self.storage.presence_lapsed(
            codes, now, self.stale_ms, FORGET_AFTER_WINDOWS * self.stale_ms
        )
        offline: list[tuple[str, str]] = []
        for code, players in zip(codes, lapsed, strict=True):
            local = self.rooms.local.get(code)
            if local is None or local.room.tournament is not None:
                continue
            for member in local.room.members:
                here = member.id in local.player_conns
                if member.connected and not here and member.id in players:
                    offline.append((code, member.id))
                elif here and not member.connected:
                    await self.rooms.set_connected(code, member.id, True)
        if not offline:
            self.lapses.recovered()
            return
        self.lapses.occurred(
            len(offline),
            rooms=len({code for code, _ in offline}),
            example={"room": offline[0][0], "player": offline[0][1]},
        )
        for code, player_id in offline:
            await self.rooms.set_connected(code, player_id, False)
