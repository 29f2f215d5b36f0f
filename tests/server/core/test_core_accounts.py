"""Accounts in the core, on the in-memory adapters (docs/accounts.md): tokens naming
sessions at ``hello``, revocations on the bus, the daily's main board for accounts older
than the day, the same player id (and host rights) after signing in."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import (
    AccountsError,
    AuthError,
    InternalError,
    RoomError,
    TournamentError,
)
from server.auth import Player
from server.config import Settings
from server.core.account_requests import AccountRequests
from server.core.accounts import DELETED_NAME, MAX_SESSIONS
from server.core.passkeys import RelyingParty
from server.daily import DAY_MS, Day
from server.metrics import Metrics
from server.solver import solve
from server.storage.memory import MemoryStorage
from server.storage.memory_accounts import MemoryAccounts
from server.tasks import cancel_and_wait
from tests.accounts.support import passkey_for
from tests.server.core_support import (
    COUNTDOWN_MS,
    DEAL,
    ManualClock,
    SettlingHub,
    connect,
    memory_parts,
)

MIDNIGHT = Day.parse("2025-11-30").starts_at
LINE = solve(DEAL, max_seconds=30).line
RP = RelyingParty("localhost", "Crescent Race", ("http://localhost:8080",))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(MIDNIGHT - 3_600_000)  # 29 Nov, 23:00 UTC


@pytest.fixture
def accounts() -> MemoryAccounts:
    return MemoryAccounts()


async def started_hub(
    storage: MemoryStorage, accounts: MemoryAccounts, clock: ManualClock
) -> SettlingHub:
    settings = Settings(
        countdown_ms=COUNTDOWN_MS,
        progress_interval_s=3600.0,
        daily_push_interval_s=3600.0,
        daily_check_interval_s=3600.0,
    )
    parts = dataclasses.replace(memory_parts(storage), accounts=accounts, relying_party=RP)
    hub = SettlingHub(parts, settings, Metrics(), clock)
    await hub.start()
    return hub


@pytest.fixture
async def hub(
    storage: MemoryStorage, accounts: MemoryAccounts, clock: ManualClock
) -> AsyncIterator[SettlingHub]:
    hub = await started_hub(storage, accounts, clock)
    assert await hub.daily.prepare()
    yield hub
    await hub.stop()


async def make_account(
    hub: SettlingHub, accounts: MemoryAccounts, player: Player, handle: str
) -> str:
    """The player's account and a session (as a finished ceremony leaves them): the
    session's token."""
    now = hub.clock()
    await accounts.create_account(player.id, handle, passkey_for(player.id, now=now), now=now)
    opened = await accounts.open_session(player.id, "test", now=now)
    return hub.sessions.signer.sign(Player(player.id, handle, opened.session.id))


async def ask(hub: SettlingHub, conn: Any, msg: p.ClientMessage) -> Any:
    reply = await hub.handle(conn, msg)
    return p.decode_server(reply) if isinstance(reply, bytes) else reply


async def hello_code(hub: SettlingHub, token: str) -> str:
    with pytest.raises(AuthError) as refused:
        await hub.hello(p.Hello(token=token))
    return refused.value.code


async def win_today(hub: SettlingHub, clock: ManualClock, conn: Any) -> None:
    """Today's daily attempt played through with the solver's winning line, and settled."""
    assert LINE is not None
    snapshot = await ask(hub, conn, p.DailyStart())
    code = str(snapshot.room["code"])
    clock.advance(COUNTDOWN_MS)
    for seq, action in enumerate(LINE, 1):
        assert isinstance(await ask(hub, conn, p.Act(room=code, seq=seq, action=action)), p.Ack)
    await hub.progress.flush()
    for _ in range(3):
        await asyncio.sleep(0)
        await hub.settle()


async def test_hello_checks_the_session_a_token_names(
    hub: SettlingHub, accounts: MemoryAccounts
) -> None:
    guest = await connect(hub, "Ada")
    assert guest.player is not None
    guest_token = hub.sessions.signer.sign(guest.player)
    token = await make_account(hub, accounts, guest.player, "Ada")
    player, welcome = await hub.hello(p.Hello(token=token))
    assert player.id == guest.player.id and player.session is not None
    assert hub.sessions.signer.verify(welcome.token).session == player.session
    assert await hello_code(hub, guest_token) == "sign_in_required"
    seen = [s.last_seen_at for s in await accounts.sessions(player.id)]
    revoked: list[frozenset[str]] = []
    hub.accounts.on_revoked = revoked.append
    assert await hub.accounts.session_revoke(player, "all") == {"revoked": [player.session]}
    for _ in range(3):
        await asyncio.sleep(0)
    assert revoked == [frozenset({player.session})]  # through the bus, as other processes
    assert await hello_code(hub, token) == "session_revoked"
    assert await hello_code(hub, welcome.token) == "session_revoked"
    with pytest.raises(AccountsError) as refused:
        await hub.accounts.me(player)
    assert refused.value.code == "not_signed_in"
    assert seen == [hub.clock()]
    # A forged session id in a token signed by the server is unknown: refused alike.
    forged = hub.sessions.signer.sign(Player(player.id, "Ada", "no-such-session"))
    assert await hello_code(hub, forged) == "session_revoked"


async def test_the_main_board_ranks_accounts_older_than_the_day(
    hub: SettlingHub, accounts: MemoryAccounts, clock: ManualClock
) -> None:
    assert LINE is not None
    old = await connect(hub, "Old")
    guest = await connect(hub, "Guest")  # an identity older than the day, but a guest
    assert old.player is not None
    await make_account(hub, accounts, old.player, "Old")
    clock.now = MIDNIGHT + 1000  # the 30th's deal goes live
    new = await connect(hub, "New")
    assert new.player is not None
    await make_account(hub, accounts, new.player, "New")  # an account made that day
    for conn in (old, guest, new):
        await win_today(hub, clock, conn)
    board = await ask(hub, guest, p.DailyBoard(top=10))
    assert board.data["ranks"] == "accounts"
    assert [row["name"] for row in board.data["top"]] == ["Old"]
    assert board.data["late_count"] == 2 and board.data["you"]["board"] == "late"
    guests = await ask(hub, guest, p.DailyBoard(top=10, late=True))
    assert sorted(row["name"] for row in guests.data["top"]) == ["Guest", "New"]


async def test_a_deleted_account_leaves_the_daily_boards_as_deleted_player(
    hub: SettlingHub, accounts: MemoryAccounts, clock: ManualClock
) -> None:
    assert LINE is not None
    gone = await connect(hub, "Vanishing")
    stays = await connect(hub, "Stays")
    assert gone.player is not None
    token = await make_account(hub, accounts, gone.player, "Vanishing")
    clock.now = MIDNIGHT + 1000  # the 30th's deal goes live
    for conn in (gone, stays):
        await win_today(hub, clock, conn)
    board = await ask(hub, stays, p.DailyBoard(top=10))
    assert [row["name"] for row in board.data["top"]] == ["Vanishing"]
    player, _ = await hub.hello(p.Hello(token=token))
    assert (await hub.accounts.account_delete(player))["deleted"]
    guests = await ask(hub, stays, p.DailyBoard(top=10, late=True))
    assert [row["name"] for row in guests.data["top"]] == ["Stays"]  # untouched
    board = await ask(hub, stays, p.DailyBoard(top=10))
    assert [row["name"] for row in board.data["top"]] == [DELETED_NAME]
    assert "Vanishing" not in repr(board.data)
    day = str(Day.of(clock.now))
    top = await hub.daily.storage.board_top(day, "ranked", 10)  # what the archive reads
    assert [row.entry.name for row in top] == [DELETED_NAME]
    history = await hub.daily.storage.player_history(player.id)
    assert [entry.name for entry in history.values()] == [DELETED_NAME]


async def test_a_deletion_stands_when_the_daily_rename_fails(
    hub: SettlingHub,
    accounts: MemoryAccounts,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn = await connect(hub, "Unlucky")
    assert conn.player is not None
    token = await make_account(hub, accounts, conn.player, "Unlucky")
    player, _ = await hub.hello(p.Hello(token=token))

    async def unavailable(*_args: object) -> int:
        raise InternalError("Redis does not answer")

    monkeypatch.setattr(hub.daily.storage, "rename_player", unavailable)
    assert (await hub.accounts.account_delete(player))["deleted"]
    assert await accounts.account_by_handle("Unlucky") is None
    assert "deleted account's name kept on the daily" in caplog.messages


async def test_a_host_signing_in_elsewhere_keeps_host_controls(
    hub: SettlingHub, accounts: MemoryAccounts
) -> None:
    host = await connect(hub, "Host")
    assert host.player is not None
    snapshot = await ask(hub, host, p.CreateRoom(seats=2))
    code = str(snapshot.room["code"])
    token = await make_account(hub, accounts, host.player, "Hostess")
    other = await connect(hub, "Racer")
    await ask(hub, other, p.Join(room=code))
    # Another device: a sign-in's token, the same player id.
    device = await connect(hub, "ignored", token=token)
    assert device.player is not None and device.player.id == host.player.id
    await ask(hub, device, p.Join(room=code))
    assert isinstance(await ask(hub, other, p.Ready(room=code)), p.Ok)
    with pytest.raises(RoomError):
        await ask(hub, other, p.Start(room=code))  # not_host: host rights are checked
    assert isinstance(await ask(hub, device, p.Start(room=code)), p.Ok)  # host only


async def test_a_tournament_host_gets_the_controls_back_on_another_device(
    hub: SettlingHub, accounts: MemoryAccounts
) -> None:
    host = await connect(hub, "Host")
    assert host.player is not None
    created = await ask(hub, host, p.TCreate(name="Cup", rounds=1, time_limit=60, max_players=8))
    code = str(created.tournament["code"])
    racer = await connect(hub, "Racer")
    assert racer.player is not None
    await ask(hub, racer, p.TJoin(tournament=code))
    token = await make_account(hub, accounts, host.player, "Hostess")
    # The host's browser storage is gone; a sign-in elsewhere gives the same player id.
    device = await connect(hub, "ignored", token=token)
    assert device.player is not None and device.player.id == host.player.id
    with pytest.raises(TournamentError) as refused:
        await ask(hub, racer, p.THost(tournament=code, op="pause"))
    assert refused.value.code == "not_host"
    reply = await ask(hub, device, p.THost(tournament=code, op="remove", player=racer.player.id))
    assert isinstance(reply, p.Ok)


class PurgeWatch(MemoryAccounts):
    """Memory accounts that signal each purge (what the purge job calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.purged = asyncio.Event()

    async def purge(self, *, now: int) -> int:
        gone = await super().purge(now=now)
        self.purged.set()
        return gone


async def test_the_purge_job_drops_expired_challenges(hub: SettlingHub, clock: ManualClock) -> None:
    store = PurgeWatch()
    job = AccountRequests(store, RP, hub.sessions.signer, hub.storage, hub.daily.storage, hub.clock)
    await job.sign_in_start("10.0.0.1")
    assert len(store.challenges) == 1
    clock.advance(DAY_MS)  # long past the challenge's expiry
    task = asyncio.get_running_loop().create_task(job.purge_forever(interval_s=0))
    await asyncio.wait_for(store.purged.wait(), 5)
    await cancel_and_wait(task)
    assert store.challenges == {}


async def test_an_accounts_only_tournament_refuses_guests(
    hub: SettlingHub, accounts: MemoryAccounts
) -> None:
    host = await connect(hub, "Host")
    created = await ask(hub, host, p.TCreate(name="Cup", rounds=1, time_limit=60, max_players=8))
    code = str(created.tournament["code"])
    early = await connect(hub, "Early")  # registered while it was open to guests: stays
    await ask(hub, early, p.TJoin(tournament=code))
    racer = await connect(hub, "Racer")
    with pytest.raises(TournamentError) as refused:
        await ask(hub, racer, p.THost(tournament=code, op="accounts_only"))
    assert refused.value.code == "not_host"
    assert isinstance(await ask(hub, host, p.THost(tournament=code, op="accounts_only")), p.Ok)
    with pytest.raises(TournamentError) as refused:
        await ask(hub, racer, p.TJoin(tournament=code))
    assert refused.value.code == "accounts_only"
    assert racer.player is not None
    token = await make_account(hub, accounts, racer.player, "Racer_1")
    signed_in = await connect(hub, "ignored", token=token)
    joined = await ask(hub, signed_in, p.TJoin(tournament=code))
    assert joined.tournament["accounts_only"] is True
    assert joined.tournament["players"] == 2  # Early and the signed-in racer
    spectator = await connect(hub, "Watcher")  # watching needs no account
    await ask(hub, spectator, p.TJoin(tournament=code, as_="spectator"))


async def test_a_sign_in_beyond_the_session_cap_closes_the_oldest(
    hub: SettlingHub, accounts: MemoryAccounts, clock: ManualClock
) -> None:
    guest = await connect(hub, "Many")
    assert guest.player is not None
    token = await make_account(hub, accounts, guest.player, "Many_Devices")
    first = hub.sessions.signer.verify(token).session
    for _ in range(MAX_SESSIONS - 1):
        clock.advance(1)
        await accounts.open_session(guest.player.id, "another", now=clock.now)
    signed_in = hub.sessions.signer.verify(token)
    code = await hub.accounts.link_code_create(signed_in)
    revoked: list[frozenset[str]] = []
    hub.accounts.on_revoked = revoked.append
    linked = await hub.accounts.link_code_redeem(code["code"], "10.0.0.9", "a new phone")
    assert linked["player"]["id"] == guest.player.id
    for _ in range(3):
        await asyncio.sleep(0)
    assert revoked == [frozenset({first})]  # the least recently seen, on every process
    assert await hello_code(hub, token) == "session_revoked"
