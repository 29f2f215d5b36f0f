"""What the core needs from the outside, as protocols: storage, the bus, sockets, a clock,
a CPU runner; and :class:`Parts`, the ports one process runs on.

Adapters: :mod:`server.storage.redis` (Redis: production and the end-to-end tests) and
:mod:`server.storage.memory` (one process, no I/O: the core's fast tests and
``--storage memory``); the web layer implements :class:`Connection`. The core imports
no adapter: :func:`server.compose.build_parts` (the composition root) builds the
:class:`Parts` from the settings, the core's tests over the in-memory adapters
(``bench/_support.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

from server.auth import Player, TokenSigner
from server.core.accounts import Accounts
from server.core.archive import Archive
from server.core.passkeys import RelyingParty
from server.daily import DayRecord, ResultEntry
from server.daily.review import Review
from server.lobby.race import SEQ_WINDOW as SEQ_WINDOW  # storage keeps that many seqs
from server.lobby.race import RacerProgress
from server.lobby.room import Room
from server.tournament.model import Tournament
from server.tournament.scoring import RoundRow

Clock = Callable[[], int]  # server time in ms
BusHandler = Callable[[str, bytes], None]  # (room code, payload)
DealSource = Callable[[str], Awaitable[str]]  # variant -> a deal code (server/core/daily.py)
T = TypeVar("T")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class StoredGame:
    """A racer's game as stored: the action log, the last seq, the progress record and
    the actions of the latest client seqs (seq -> action, up to ``SEQ_WINDOW`` of them)."""

    actions: list[str]
    last_seq: int
    progress: RacerProgress | None
    seq_actions: dict[int, str] = field(default_factory=dict)


class AppendResult(NamedTuple):
    """``stored``: appended, the log now has ``log_len`` actions and the last stored seq
    is ``last_seq``. Not stored: another writer changed the game first (both -1).
    (A named tuple: one is built per stored action.)"""

    stored: bool
    log_len: int
    last_seq: int


APPEND_CONFLICT = AppendResult(False, -1, -1)
AppendCallback = Callable[[AppendResult | BaseException], None]


class Bus(Protocol):
    """This process's subscriptions to room channels; messages go to the handler the
    bus was made with (see :meth:`Storage.bus`)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def subscribe(self, code: str) -> None: ...

    async def unsubscribe(self, code: str) -> None: ...


class Storage(Protocol):
    """Rooms, games, presence, players and the bus, shared by every server process."""

    async def save_player(self, player_id: str, name: str, now: int) -> None: ...

    async def player_rooms(self, player_id: str) -> list[str]:
        """The codes of the rooms the player created that may still be open (a quota)."""

    async def set_player_rooms(self, player_id: str, codes: Sequence[str]) -> None: ...

    async def load_room(self, code: str) -> Room | None:
        """The stored room, or None."""

    async def cas_room(
        self,
        code: str,
        expected_ver: int,
        room: Room,
        event_frames: Sequence[bytes],
        bus_payload: bytes | None,
    ) -> None:
        """Store ``room`` if the stored version is ``expected_ver`` (-1: must not exist),
        append ``event_frames`` to the history and publish ``bus_payload``, atomically;
        ``ConflictError`` if another writer got there first."""

    async def read_events(self, code: str) -> list[bytes]:
        """The room's recent event frames, oldest first."""

    async def presence_change(
        self, code: str, player_id: str, delta: int, *, process: str, now: int, stale_ms: int
    ) -> int:
        """Add ``delta`` to the player's count of open sockets on ``process`` in the room
        and mark ``process`` alive there at ``now``; the player's open sockets in the room
        over every process alive within ``stale_ms`` (this one included)."""

    async def presence_refresh(self, process: str, codes: Sequence[str], now: int) -> None:
        """Mark ``process`` alive at ``now`` in each room of ``codes``."""

    async def presence_lapsed(
        self, codes: Sequence[str], now: int, stale_ms: int, forget_ms: int
    ) -> list[list[str]]:
        """Per room of ``codes``: the players whose open sockets are all on processes not
        alive within ``stale_ms`` (dead, or cut off from storage). A process silent for
        ``forget_ms`` is dropped from the room's presence."""

    async def load_game(self, code: str, round_: int, player_id: str) -> StoredGame: ...

    async def load_logs(self, code: str, round_: int, players: Sequence[str]) -> list[list[str]]:
        """The stored action logs of these racers of a round, in their order (``[]`` for
        one with none): what the archive keeps of a finished race, in one round trip
        (:meth:`load_game` also reads the seqs and the progress)."""

    async def read_progress(
        self, rooms: Sequence[tuple[str, int]]
    ) -> list[dict[str, RacerProgress]]:
        """Every racer's progress, for several (room, round) at once."""

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> None:
        """Publish (room code, payload) pairs on the rooms' channels."""

    def append_action_then(
        self,
        code: str,
        round_: int,
        player_id: str,
        *,
        expected_len: int,
        expected_last_seq: int,
        seq: int,
        action: str,
        progress: RacerProgress,
        then: AppendCallback,
    ) -> None:
        """Queue an append (only if the log length and last seq are still the expected
        ones); ``then`` is called later, without a task, with the AppendResult or the
        exception. Never calls ``then`` before returning."""

    def bus(self, handler: BusHandler) -> Bus:
        """A bus whose messages go to ``handler(code, payload)``."""

    async def ping(self) -> bool:
        """Whether the storage answers (``/healthz``)."""


class Connection(Protocol):
    """A client socket as the core sees it (implemented by the web layer)."""

    player: Player | None
    rooms: set[str]

    def send(self, frame: bytes) -> None:
        """Queue an encoded frame; never blocks."""

    def send_progress(self, frame: bytes) -> None:
        """Queue a ``progress`` frame: it may wait a moment to go out with the next reply
        (progress is state: the connection may coalesce it); never blocks."""


class StartUpError(Exception):
    """A configured service (Redis, PostgreSQL) cannot be used when the server starts;
    the message says which, why and what to do. The server exits 2 with it, in words
    rather than a worker's traceback; once running, an outage is handled instead."""


class CpuBusy(Exception):
    """The CPU runner already holds as many jobs as it accepts: nothing was queued."""


class CpuRunner(Protocol):
    """Runs CPU-bound jobs (the solver) away from the event loop: a process pool in
    production (:class:`server.cpu.ProcessCpu`), inline in the core's fast tests
    (:class:`InlineCpu` below). Jobs are module-level functions of picklable
    arguments."""

    def run(self, job: Callable[..., T], *args: Any) -> Awaitable[T]:
        """``job(*args)``'s result, awaitable; raises :class:`CpuBusy` at once (nothing
        queued) when the runner is full."""


class InlineCpu:
    """A :class:`CpuRunner` that runs each job at once, in the caller: the core's fast
    tests (deterministic, no process). ``max_jobs=0`` makes it always busy."""

    def __init__(self, *, max_jobs: int = 1) -> None:
        self.max_jobs = max_jobs
        self.ran = 0

    def run(self, job: Callable[..., T], *args: Any) -> Awaitable[T]:
        if self.max_jobs < 1:
            raise CpuBusy()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        try:
            future.set_result(job(*args))
        except Exception as exc:
            future.set_exception(exc)
        self.ran += 1
        return future

    async def close(self) -> None:
        return None


# ---------------------------------------------------------------- the daily challenge


class BoardEntry(NamedTuple):
    """A row of a daily leaderboard: 1-based rank, player, stored result."""

    rank: int
    player_id: str
    entry: ResultEntry


class BoardView(NamedTuple):
    """What one ``daily_board`` shows: sizes, the top, the rows around the player (on
    the board asked for) and the player's own (board, row) that day."""

    size: int
    late_size: int
    top: list[BoardEntry]
    around: list[BoardEntry]
    you: tuple[str, BoardEntry] | None


class OpenAttempt(NamedTuple):
    """A claimed ranked attempt not on a board yet: its day, player and room."""

    day: str
    player_id: str
    room: str


class DailyStorage(Protocol):
    """The daily challenge's records (docs/daily.md): days, attempts, leaderboards and
    players' histories, shared by every server process. ``board`` is ``"ranked"`` or
    ``"late"`` (identities created after the day went live). Its records are typed
    values (:class:`~server.daily.DayRecord`, :class:`~server.daily.ResultEntry`,
    :class:`~server.daily.review.Review`), stored by the adapters as their records."""

    async def create_day(self, record: DayRecord) -> DayRecord:
        """Store the day's record unless one exists (once across processes); the stored
        record, this one or the earlier winner's."""

    async def load_days(self, days: Sequence[str]) -> list[DayRecord | None]: ...

    async def claim_certification(self, day: str, owner: str, ttl_ms: int) -> bool:
        """Lease the day's certification to ``owner`` for ``ttl_ms`` (or renew it, if
        ``owner`` holds it): False while another owner holds it (across processes)."""

    async def release_certification(self, day: str, owner: str) -> None:
        """End ``owner``'s lease of the day's certification (nothing if not theirs)."""

    async def claim_attempt(self, day: str, player_id: str, room: str, deadline: int) -> str | None:
        """Claim the player's one ranked attempt of the day, atomically: None when this
        call claimed it, else the room of the attempt claimed before."""

    async def attempt_of(self, day: str, player_id: str) -> str | None: ...

    async def record_result(
        self, day: str, player_id: str, board: str, score: int, entry: ResultEntry
    ) -> bool:
        """Put the attempt on the board once (False: it already was); stored with its
        ``board``."""

    async def open_attempts(self, until: int) -> list[OpenAttempt]:
        """Claimed attempts not yet on a board whose deadline is at or before ``until``."""

    async def board_top(self, day: str, board: str, count: int) -> list[BoardEntry]: ...

    async def board_around(
        self, day: str, board: str, player_id: str, radius: int
    ) -> list[BoardEntry]:
        """The player's row and up to ``radius`` rows either side (empty: not on it)."""

    async def board_size(self, day: str, board: str) -> int: ...

    async def board_entry(self, day: str, player_id: str) -> tuple[str, BoardEntry] | None:
        """(board, row) of the player's result that day, or None."""

    async def board_view(
        self, day: str, board: str, player_id: str, top: int, around: int
    ) -> BoardView:
        """A whole board view at once (on Redis: one round trip)."""

    async def player_created(self, player_id: str) -> int | None:
        """When the identity was first seen (server ms), or None if unknown."""

    async def player_history(self, player_id: str) -> dict[str, ResultEntry]:
        """Day → result of the player's ranked attempts."""

    async def reviews(self, day: str) -> dict[str, Review]:
        """Player → review of the day's results flagged for review
        (server/daily/review.py): state, reason, game id, who decided."""

    async def set_review(self, day: str, player_id: str, review: Review) -> None: ...

    async def remove_from_board(self, day: str, player_id: str) -> bool:
        """Take the player's result off the day's board (a disqualification); False if
        it was not on it. The result entry itself stays (the player's history)."""

    async def rename_player(self, days: Sequence[str], player_id: str, name: str) -> int:
        """Write ``name`` into the player's records of those ``days`` (a deleted
        account's): the result (its board row and the player's history) and its review,
        if any; how many days changed. Atomic per day; a day without the player is left
        alone. The boards' order is unchanged."""


# ---------------------------------------------------------------- tournaments


class TournamentStorage(Protocol):
    """Tournaments (docs/tournaments.md): one record per tournament stored with
    compare-and-set by version like rooms, each finished round's rows beside it, the
    spectator set, and per host the codes of their tournaments (a quota). Every key of
    a tournament carries its code as one hash tag; ``ttl_s`` is refreshed on each write."""

    async def load_tournament(self, code: str) -> Tournament | None: ...

    async def cas_tournament(
        self,
        code: str,
        expected_ver: int,
        tournament: Tournament,
        *,
        ttl_s: int,
        round_rows: tuple[int, tuple[RoundRow, ...]] | None = None,
    ) -> None:
        """Store ``tournament`` if the stored version is ``expected_ver`` (-1: must not
        exist), with a finished round's rows (round, rows) in the same atomic step;
        ``ConflictError`` if another writer got there first."""

    async def round_results(self, code: str, round_: int) -> tuple[RoundRow, ...] | None: ...

    async def all_results(self, code: str) -> dict[int, tuple[RoundRow, ...]]: ...

    async def host_tournaments(self, host: str) -> list[str]: ...

    async def set_host_tournaments(self, host: str, codes: Sequence[str], ttl_s: int) -> None: ...

    async def add_spectator(self, code: str, player_id: str, limit: int, ttl_s: int) -> bool:
        """Add the player to the spectators (True), unless ``limit`` are there (False)."""

    async def remove_spectator(self, code: str, player_id: str) -> None: ...

    async def spectator_count(self, code: str) -> int: ...


# ---------------------------------------------------------------- the archive's outbox


class OutboxEntry(NamedTuple):
    """An archive record waiting in the outbox: its stable id (the archived record's),
    the record as bytes (:mod:`server.core.outbox` encodes it) and when it was put."""

    id: str
    record: bytes
    put_at: int


class OutboxStats(NamedTuple):
    """The archive's lag: entries waiting, and when the oldest of them was put."""

    pending: int
    oldest_put_at: int | None


class Outbox(Protocol):
    """Archive records between the end of a game and their write to the archive
    (docs/archive.md, "The outbox"), shared by every server process. Delivery is at
    least once: the archive's write is idempotent by id."""

    async def put(self, entries: Sequence[OutboxEntry], *, replacing: Sequence[str] = ()) -> int:
        """Add each entry unless one of its id is waiting already (a retry of the same
        end adds nothing), and drop the entries ``replacing`` names (the note of a
        race's end, once its record is put), in one step; how many were added."""

    async def claim(self, *, now: int, due_by: int, limit: int, lease_ms: int) -> list[OutboxEntry]:
        """Up to ``limit`` entries that are due at ``due_by`` (put then or before, and
        not leased to a drainer past it), oldest first, leased until ``now + lease_ms``
        (another process's drainer skips them until then)."""

    async def remove(self, ids: Sequence[str]) -> None:
        """Drop these entries (their write to the archive succeeded)."""

    async def holds(self, entry_id: str) -> bool:
        """Whether an entry of this id is waiting."""

    async def stats(self) -> OutboxStats: ...


# ---------------------------------------------------------------- the parts


class ArchivePorts(NamedTuple):
    """What the archive's writer runs on (:func:`server.core.wiring.archiver_for`): all a
    serving process's :class:`Parts` has of it, and all the archive writer process builds
    (:func:`server.compose.build_writer_ports`: no solver, no accounts)."""

    storage: Storage
    daily_storage: DailyStorage
    archive: Archive | None
    outbox: Outbox | None


@dataclass(frozen=True, slots=True)
class Parts:
    """The ports one server process runs on: built once from the settings by the
    composition root (:func:`server.compose.build_parts`: Redis, Redis Cluster or
    memory), or over the in-memory adapters by the core's tests (``bench/_support.py``),
    and handed to :class:`server.core.hub.Hub`. A new port (the archive, accounts) is a
    new field here, built there."""

    storage: Storage  # rooms, games, presence, players, the bus
    daily_storage: DailyStorage
    tournament_storage: TournamentStorage
    cpu: CpuRunner  # the players' solver jobs (hints, winnable)
    # Certified deals for the daily challenge and tournaments' random rounds (in the
    # server: the solver on a CPU runner of their own, so a certification of many
    # seconds never makes a hint wait).
    daily_deals: DealSource
    tournament_deals: DealSource
    signer: TokenSigner  # players' tokens
    # The archive (docs/archive.md) and the outbox that feeds it; None: --archive off.
    archive: Archive | None = None
    outbox: Outbox | None = None
    # Accounts (docs/accounts.md) and the relying party its passkeys are bound to; None:
    # no accounts (no database): the account routes answer accounts_off.
    accounts: Accounts | None = None
    relying_party: RelyingParty | None = None

    @property
    def archive_ports(self) -> ArchivePorts:
        return ArchivePorts(self.storage, self.daily_storage, self.archive, self.outbox)
