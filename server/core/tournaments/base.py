"""What the tournament service's modules share: the requests it answers, its limits,
tournament codes and TTLs, a watched tournament's local copy, reading one stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from crescent_wire import protocol as p
from crescent_wire.errors import TournamentError
from server.core.ports import Connection, TournamentStorage
from server.core.room_codes import is_room_code, new_room_code
from server.tournament import CODE_PREFIX, Tournament

TOURNAMENT_REQUESTS: Final = (
    p.TCreate,
    p.TJoin,
    p.TWithdraw,
    p.THost,
    p.TGet,
    p.TUnwatch,
    p.TGetResults,
    p.TGetStandings,
)
DealSource = Callable[[str], Awaitable[str]]

UNFINISHED_TTL_S: Final = 7 * 86_400  # a tournament never finished: 7 days after a change
FINISHED_TTL_S: Final = 30 * 86_400  # a finished one stays viewable and exportable
MAX_HOSTED: Final = 3  # unfinished tournaments per host
MAX_SPECTATORS: Final = 1000  # per tournament
MAX_SUBSCRIPTIONS: Final = 4  # tournaments one connection watches
PUSH_INTERVAL_S: Final = 1.0  # tournament snapshots and t_live: at most this often
CERTIFY_WAIT_S: Final = 2.0  # start_round waits this long for a certified deal
CERTIFY_BUDGET_S: Final = 5.0  # the solver's budget per deal drawn (server/core/daily.py)
LIVE_TOP: Final = p.T_LIVE_TOP
STANDINGS_MEMO_SIZE: Final = 256  # tournaments whose standings (spectators) are kept


def is_tournament_code(code: str) -> bool:
    return code.startswith(CODE_PREFIX) and is_room_code(code[len(CODE_PREFIX) :])


def new_tournament_code() -> str:
    return CODE_PREFIX + new_room_code()


def ttl_of(t: Tournament) -> int:
    return FINISHED_TTL_S if t.finished else UNFINISHED_TTL_S


async def load_or_none(storage: TournamentStorage, code: str) -> Tournament | None:
    if not is_tournament_code(code):
        return None
    return await storage.load_tournament(code)


async def load(storage: TournamentStorage, code: str) -> Tournament:
    t = await load_or_none(storage, code)
    if t is None:
        raise TournamentError("tournament_not_found")
    return t


@dataclass
class LocalTournament:
    """A tournament with subscribers on this process."""

    code: str
    tournament: Tournament
    subs: dict[Connection, bool] = field(default_factory=dict)  # conn -> as spectator
    known_ver: int = 0  # the newest version announced on the bus
    pushed_ver: int = -1
    last_push: float = -1e9  # loop time of the last snapshot push
    push_timer: asyncio.TimerHandle | None = None
    entrants: tuple[tuple[str, str], ...] = ()  # the running round's racers
    entrants_room: str | None = None
    live_key: Any = None  # what the last t_live showed (nothing new: no push)
