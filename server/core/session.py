"""What one connection asks: hello, and the room requests (create, join, leave, sync,
snapshot). Room transitions go through :class:`server.core.rooms.Rooms`, games through
:class:`server.core.games.Games`."""

from __future__ import annotations

import logging
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.errors import AuthError, ConflictError, InternalError, RoomError
from server.auth import Player, TokenSigner, clean_name
from server.core.accounts import Accounts
from server.core.games import Games
from server.core.ports import Clock, Connection, Storage
from server.core.room_codes import new_room_code
from server.core.rooms import MAX_CAS_ATTEMPTS, Rooms
from server.game import DealCode, InvalidDealCode
from server.lobby import Member, Room, initial_progress, wire_progress

log = logging.getLogger("server.session")


def player_of(conn: Connection) -> Player:
    if conn.player is None:
        raise AuthError("not_authenticated")
    return conn.player


class Sessions:
    def __init__(
        self,
        storage: Storage,
        rooms: Rooms,
        games: Games,
        signer: TokenSigner,
        clock: Clock,
        *,
        countdown_ms: int,
        limits: dict[str, int],
        max_open_rooms: int = 10,
        accounts: Accounts | None = None,
    ) -> None:
        self.storage = storage
        self.rooms = rooms
        self.games = games
        self.signer = signer
        self.clock = clock
        self.countdown_ms = countdown_ms
        self.limits = limits  # the welcome's limits: max_frame, rate_per_s, burst
        self.max_open_rooms = max_open_rooms  # rooms a player created and is still in
        self.accounts = accounts  # None: no accounts (every token is a guest's)

    async def hello(self, msg: p.Hello, current: Player | None = None) -> tuple[Player, p.Welcome]:
        """Welcome the player ``msg`` names (``current``: the connection's player, if it
        has one). Every refusal is raised before the player record is written."""
        common = set(msg.versions) & set(p.PROTOCOL_VERSIONS)
        if not common:
            raise AuthError(
                "unsupported_version",
                f"This server speaks protocol versions {list(p.PROTOCOL_VERSIONS)}",
            )
        if msg.token is not None:
            player = self.signer.verify(msg.token)
            await self._check_session(player)
            if msg.name is not None:
                player = Player(player.id, clean_name(msg.name), player.session)
        else:
            player = Player.new(msg.name)
        if current is not None and current.id != player.id:
            # A socket is one player: a different identity needs a new connection.
            raise AuthError(
                "bad_token",
                "This connection already belongs to another player; open a new connection",
            )
        now = self.clock()
        await self.storage.save_player(player.id, player.name, now)
        welcome = p.Welcome(
            version=max(common),
            player={"id": player.id, "name": player.name},
            token=self.signer.sign(player),
            server_time=now,
            limits=dict(self.limits),
            id=msg.id,
        )
        return player, welcome

    async def _check_session(self, player: Player) -> None:
        """An account's player id is used only through a live session of it
        (docs/accounts.md, "Sessions and revocation"): a token naming a revoked or unknown
        session is ``session_revoked``; a guest token of a player who has made an account
        since is ``sign_in_required``. Marks the session seen."""
        if self.accounts is None:
            return
        if player.session is None:
            account = await self.accounts.account(player.id)
            if account is not None and account.deleted_at is not None:
                raise AuthError(
                    "sign_in_required",
                    "This player's account was deleted; send 'hello' without a token to "
                    "play as a new guest",
                )
            if account is not None:
                raise AuthError("sign_in_required")
            return
        session = await self.accounts.session(player.session)
        if session is None or session.revoked_at is not None or session.player_id != player.id:
            raise AuthError("session_revoked")
        await self.accounts.touch_session(player.session, now=self.clock())

    async def create_room(self, conn: Connection, msg: p.CreateRoom) -> p.RoomSnapshot:
        player = player_of(conn)
        if msg.deal is not None:
            try:
                deal = DealCode.parse(msg.deal)
            except InvalidDealCode as err:
                raise RoomError("bad_deal_code", err.message) from None
            deal_public = True
        else:
            deal = DealCode.random(msg.variant)
            deal_public = False
        open_rooms = await self._open_rooms(player.id)
        now = self.clock()
        for _ in range(MAX_CAS_ATTEMPTS):
            room = Room.create(
                new_room_code(),
                host=Member(player.id, player.name),
                variant=str(deal.variant),
                deal=str(deal),
                deal_public=deal_public,
                seats=msg.seats,
                time_limit=msg.time_limit,
                now=now,
                countdown_ms=self.countdown_ms,
            )
            try:
                await self.rooms.create(room)
            except ConflictError:
                continue  # that code is taken: draw another
            break
        else:
            raise InternalError("Could not find a free room code")
        await self.storage.set_player_rooms(player.id, [*open_rooms, room.code])
        log.info(
            "room created",
            extra={
                "room": room.code,
                "player": player.id,
                "variant": room.variant,
                "seats": room.seats,
            },
        )
        await self.rooms.attach(conn, player.id, room)
        return await self.snapshot(conn, room, msg.id)

    async def _open_rooms(self, player_id: str) -> list[str]:
        """The rooms the player created and is still a member of; ``too_many_rooms`` if
        they may not create another. (Rooms left or expired are dropped from the list
        only when it is full: one read per create below the quota.)"""
        codes = await self.storage.player_rooms(player_id)
        if len(codes) < self.max_open_rooms:
            return codes
        still_open = []
        for code in codes:
            room = await self.rooms.load_or_none(code)
            if room is not None and room.member(player_id) is not None:
                still_open.append(code)
        if len(still_open) >= self.max_open_rooms:
            raise RoomError(
                "too_many_rooms",
                f"You have {len(still_open)} open rooms (at "
                f"most {self.max_open_rooms}); leave one before creating another",
            )
        return still_open

    async def join(self, conn: Connection, msg: p.Join) -> p.RoomSnapshot:
        player = player_of(conn)
        local = self.rooms.local.get(msg.room)
        if msg.room in conn.rooms and local is not None:
            # Joining again (e.g. for a fresh snapshot): the cached room is kept current
            # by the bus, and the transition below compare-and-sets against storage anyway.
            room = local.room
        else:
            room = await self.rooms.load(msg.room)
        # Subscribe first, so this process sees every event from this version on.
        await self.rooms.attach(conn, player.id, room)
        try:
            room = await self.rooms.transition(
                msg.room,
                lambda room, now: room.join(
                    Member(player.id, player.name), as_spectator=msg.as_ == "spectator", now=now
                ),
            )
        except BaseException:
            await self.rooms.detach(conn, player.id, msg.room, update_presence=True)
            raise
        log.info("joined", extra={"room": room.code, "player": player.id, "as": msg.as_})
        return await self.snapshot(conn, room, msg.id)

    async def leave(self, conn: Connection, code: str) -> None:
        player = player_of(conn)
        room = self.rooms.joined(conn, code)
        if room.tournament is not None:  # a tournament round: stop watching, still seated
            await self.rooms.detach(conn, player.id, code, update_presence=False)
            return
        if room.is_entrant(player.id) and room.underway:
            await self.games.resign(room, player.id)
        await self.rooms.transition(code, lambda room, now: room.leave(player.id, now=now))
        await self.rooms.detach(conn, player.id, code, update_presence=False)

    async def disconnect(self, conn: Connection) -> None:
        """The socket closed: detach it from every room (presence, subscriptions)."""
        if conn.player is None:
            return
        for code in list(conn.rooms):
            try:
                await self.rooms.detach(conn, conn.player.id, code, update_presence=True)
            except InternalError:  # storage unavailable: logged once by the adapter
                log.debug("detach failed", extra={"room": code})
            except Exception:
                log.exception("detach failed", extra={"room": code})

    async def sync(self, conn: Connection, msg: p.Sync) -> p.Events | p.RoomSnapshot:
        if msg.room not in conn.rooms:
            raise RoomError("not_in_room")
        events = [p.decode_server(f) for f in await self.storage.read_events(msg.room)]
        oldest = events[0].ver if events else None  # type: ignore[union-attr]
        if oldest is None or oldest > msg.since + 1:
            room = await self.rooms.load(msg.room)
            return await self.snapshot(conn, room, msg.id)
        newer = tuple(e for e in events if isinstance(e, p.Event) and e.ver > msg.since)
        return p.Events(room=msg.room, events=newer, id=msg.id)

    async def snapshot(self, conn: Connection, room: Room, msg_id: int | None) -> p.RoomSnapshot:
        player = player_of(conn)
        now = self.clock()
        data = room.public_dict(player.id, now)
        if room.phase != "waiting":
            progress = (await self.storage.read_progress([(room.code, room.round)]))[0]
            entrants = {pid for pid, _ in room.entrants}
            for entry in data["players"]:
                if entry["id"] in entrants:
                    stored = progress.get(entry["id"]) or initial_progress(entry["id"])
                    entry["progress"] = wire_progress(
                        stored, entry["connected"], over=room.race_ended(now)
                    )
                else:
                    entry["progress"] = None
        else:
            for entry in data["players"]:
                entry["progress"] = None
        member = room.member(player.id)
        you: dict[str, Any] = {"role": member.role if member else None, "game": None, "last_seq": 0}
        if room.is_entrant(player.id) and room.start_at is not None and now >= room.start_at:
            view, you["last_seq"] = await self.games.view(room, player.id)
            you["game"] = view.to_wire()
        return p.RoomSnapshot(room=data, you=you, id=msg_id)
