"""What a connection asks of the tournaments: create, join, withdraw, the host's
operations, watch and unwatch, a round's results, the standings."""

from __future__ import annotations

import logging

from crescent_wire import protocol as p
from crescent_wire.errors import ConflictError, InternalError, TournamentError
from server.core.ports import Clock, Connection, TournamentStorage
from server.core.rooms import MAX_CAS_ATTEMPTS
from server.core.session import player_of
from server.core.tournaments.base import (
    FINISHED_TTL_S,
    MAX_HOSTED,
    MAX_SPECTATORS,
    is_tournament_code,
    new_tournament_code,
    ttl_of,
)
from server.core.tournaments.committer import Committer
from server.core.tournaments.live import Live
from server.core.tournaments.rounds import Rounds
from server.game import DealCode, InvalidDealCode
from server.tournament import Tournament

log = logging.getLogger("server.tournaments")


class Requests:
    def __init__(
        self,
        storage: TournamentStorage,
        committer: Committer,
        live: Live,
        rounds: Rounds,
        clock: Clock,
    ) -> None:
        self.storage = storage
        self.committer = committer
        self.live = live
        self.rounds = rounds
        self.clock = clock

    async def handle(self, conn: Connection, msg: p.ClientMessage) -> p.ServerMessage | bytes:
        if isinstance(msg, p.TCreate):
            return await self.create(conn, msg)
        if isinstance(msg, p.TJoin):
            return await self.join(conn, msg)
        if isinstance(msg, p.TWithdraw):
            await self.withdraw(conn, msg.tournament)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.THost):
            await self.host(conn, msg)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.TGet):
            t = await self.committer.load(msg.tournament)
            t = await self.rounds.catch_up(t)
            return await self.live.snapshot(conn, t, msg.id)
        if isinstance(msg, p.TUnwatch):
            await self.unwatch(conn, msg.tournament)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.TGetResults):
            return await self.results(msg)
        if isinstance(msg, p.TGetStandings):
            t = await self.committer.load(msg.tournament)
            return p.TStandings(
                tournament=t.code,
                final=t.finished,
                rows=tuple(self.live.standings_of(t)),
                id=msg.id,
            )
        raise InternalError(f"no handler for {type(msg).__name__}")

    async def create(self, conn: Connection, msg: p.TCreate) -> bytes:
        player = player_of(conn)
        deals = parse_deals(msg.deals, msg.variant) if msg.deals is not None else None
        hosted = await self._hosted(player.id)
        self.live.check_subscription_room(conn, None)
        now = self.clock()
        for _ in range(MAX_CAS_ATTEMPTS):
            t = Tournament.create(
                new_tournament_code(),
                name=msg.name,
                host=(player.id, player.name),
                variant=msg.variant,
                rounds=msg.rounds,
                time_limit=msg.time_limit,
                max_players=msg.max_players,
                scoring=msg.scoring,
                deals=deals,
                now=now,
            )
            try:
                await self.storage.cas_tournament(t.code, -1, t, ttl_s=ttl_of(t))
            except ConflictError:
                continue
            break
        else:
            raise InternalError("Could not find a free tournament code")
        await self.storage.set_host_tournaments(player.id, [*hosted, t.code], FINISHED_TTL_S)
        log.info(
            "tournament created",
            extra={"tournament": t.code, "player": player.id, "rounds": t.rounds},
        )
        await self.live.subscribe(conn, t, spectator=False)
        self.rounds.prepare_soon(t)
        return await self.live.snapshot(conn, t, msg.id)

    async def _hosted(self, host: str) -> list[str]:
        """The host's unfinished tournaments; ``too_many_tournaments`` at the quota."""
        codes = await self.storage.host_tournaments(host)
        still = []
        for code in codes:
            t = await self.committer.load_or_none(code)
            if t is not None and not t.finished:
                still.append(code)
        if len(still) >= MAX_HOSTED:
            raise TournamentError(
                "too_many_tournaments",
                f"You host {len(still)} unfinished tournaments (at most {MAX_HOSTED}); "
                "end one first",
            )
        return still

    async def join(self, conn: Connection, msg: p.TJoin) -> bytes:
        player = player_of(conn)
        self.live.check_subscription_room(conn, msg.tournament)
        spectator = msg.as_ == "spectator"
        if spectator:
            t = await self.committer.load(msg.tournament)
            if player.id != t.host and t.player(player.id) is None:
                added = await self.storage.add_spectator(
                    t.code, player.id, MAX_SPECTATORS, ttl_of(t)
                )
                self.live.spectator_counts.pop(t.code, None)
                if not added:
                    raise TournamentError(
                        "tournament_full", "This tournament has as many spectators as it allows"
                    )
        else:  # no read first: a crowd's joins are batched by the committer
            if not is_tournament_code(msg.tournament):
                raise TournamentError("tournament_not_found")
            t = await self.committer.transition(
                msg.tournament,
                # a token naming a session is an account's (hello checked it is live)
                lambda t, now: t.join(
                    player.id, player.name, now=now, account=player.session is not None
                ),
            )
        await self.live.subscribe(conn, t, spectator=spectator)
        t = await self.rounds.catch_up(t)
        return await self.live.snapshot(conn, t, msg.id)

    async def withdraw(self, conn: Connection, code: str) -> None:
        player = player_of(conn)
        t = await self.committer.transition(code, lambda t, now: t.withdraw(player.id, now=now))
        await self.rounds.resign_in_round(t, player.id)

    async def host(self, conn: Connection, msg: p.THost) -> None:
        player = player_of(conn)
        code, op = msg.tournament, msg.op
        transition = self.committer.transition
        if op == "start_round":
            await self.rounds.start_round(code, player.id)
        elif op in ("open_registration", "close_registration"):
            open_ = op == "open_registration"
            await transition(code, lambda t, now: t.set_registration(player.id, open_, now=now))
        elif op in ("pause", "resume"):
            paused = op == "pause"
            await transition(code, lambda t, now: t.set_paused(player.id, paused, now=now))
        elif op == "remove":
            target = msg.player or ""
            t = await transition(code, lambda t, now: t.remove(player.id, target, now=now))
            await self.rounds.resign_in_round(t, target)
        elif op == "end":
            await self.rounds.end(code, player.id)
        elif op == "accounts_only":
            await transition(code, lambda t, now: t.set_accounts_only(player.id, now=now))
        else:  # the codec only lets T_HOST_OPS through
            raise InternalError(f"unknown host op {op}")

    async def unwatch(self, conn: Connection, code: str) -> None:
        player = player_of(conn)
        self.live.unsubscribe(conn, code)
        t = await self.committer.load_or_none(code)
        if t is None:
            raise TournamentError("tournament_not_found")
        if t.player(player.id) is None:
            await self.storage.remove_spectator(code, player.id)
            self.live.spectator_counts.pop(code, None)

    async def results(self, msg: p.TGetResults) -> p.TResults:
        t = await self.committer.load(msg.tournament)
        summary = next((s for s in t.finished_rounds if s.round == msg.round), None)
        rows = await self.storage.round_results(t.code, msg.round) if summary else None
        if summary is None or rows is None:
            raise TournamentError("round_not_finished")
        return p.TResults(
            tournament=t.code,
            round=msg.round,
            deal=summary.deal,
            rows=tuple([row.to_record() for row in rows]),
            id=msg.id,
        )


def parse_deals(texts: tuple[str, ...], variant: str) -> tuple[str, ...]:
    """The host's deal codes, each checked and of the tournament's variant."""
    parsed = []
    for text in texts:
        try:
            deal = DealCode.parse(text)
        except InvalidDealCode as err:
            raise TournamentError("bad_deal_code", err.message) from None
        if str(deal.variant) != variant:
            raise TournamentError("bad_deal_code", f"Deal {text} is not of variant {variant}")
        parsed.append(str(deal))
    return tuple(parsed)
