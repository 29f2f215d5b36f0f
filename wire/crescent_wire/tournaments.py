"""Tournaments (docs/protocol.md, "Tournaments"; issue #13): creating one, registering
or watching, the host's operations, the snapshot and its pushes, a round's live summary,
a finished round's results and the standings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crescent_wire.fields import (
    bad,
    choice_field,
    code_field,
    exact_field,
    int_field,
    opt_str_field,
    tournament_name_field,
)
from crescent_wire.limits import (
    MAX_DEAL_FIELD,
    MAX_PLAYER_ID_FIELD,
    MAX_ROUNDS,
    MAX_T_PLAYERS,
    MAX_TIME_LIMIT_S,
    MAX_TOURNAMENT_CODE_FIELD,
    MIN_T_PLAYERS,
    MIN_TIME_LIMIT_S,
    SCORINGS,
    T_HOST_OPS,
    T_JOIN_AS,
    VARIANTS,
)
from crescent_wire.message import FLAG, WireMessage, absent

# ----------------------------------------------------------------------------------------
# client -> server


@dataclass(frozen=True, slots=True)
class TCreate(WireMessage):
    """``t_create``: a new tournament; the reply is its ``tournament`` snapshot."""

    TYPE = "t_create"
    # The wire's order predates the class's (which puts the defaulted fields last).
    WIRE_ORDER = (
        "name",
        "rounds",
        "deals",
        "variant",
        "time_limit",
        "max_players",
        "scoring",
    )
    name: str
    rounds: int
    time_limit: int  # seconds per round
    max_players: int
    deals: tuple[str, ...] | None = None  # None: random deals; else exactly ``rounds`` codes
    variant: str = "N"
    scoring: str = "placement"
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TJoin(WireMessage):
    """``t_join``: register (``player``) or watch (``spectator``); subscribes to pushes."""

    TYPE = "t_join"
    tournament: str
    as_: str = "player"  # on the wire the key is "as"
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TWithdraw(WireMessage):
    TYPE = "t_withdraw"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class THost(WireMessage):
    """``t_host``: a host operation (``T_HOST_OPS``); ``remove`` needs ``player``."""

    TYPE = "t_host"
    tournament: str
    op: str
    player: str | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TGet(WireMessage):
    """``t_get``: the ``tournament`` snapshot without subscribing."""

    TYPE = "t_get"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TUnwatch(WireMessage):
    TYPE = "t_unwatch"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TGetResults(WireMessage):
    """``t_results`` (request): a finished round's full results."""

    TYPE = "t_results"
    tournament: str
    round: int
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TGetStandings(WireMessage):
    """``t_standings`` (request): every row of the standings."""

    TYPE = "t_standings"
    tournament: str
    id: int | None = None


TournamentRequest = (
    TCreate | TJoin | TWithdraw | THost | TGet | TUnwatch | TGetResults | TGetStandings
)


# ----------------------------------------------------------------------------------------
# server -> client


@dataclass(frozen=True, slots=True)
class TournamentSnapshot(WireMessage):
    """``{"t": "tournament"}``: the tournament T and ``you`` Y (docs/protocol.md); a reply
    (with ``id``) or a push (without)."""

    TYPE = "tournament"
    tournament: dict[str, Any]
    you: dict[str, Any] = field(metadata=absent(dict))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TLive(WireMessage):
    """``t_live``: a round's live summary (top 10, you, counts); pushed at most 1/s."""

    TYPE = "t_live"
    # ``you`` last on the wire: the server packs the rest once per tick for every
    # recipient and appends each one's ``you`` (server/core/wire_server.py).
    WIRE_ORDER = ("tournament", "round", "top", "racing", "finished", "you")
    tournament: str
    round: int
    top: tuple[dict[str, Any], ...] = field(metadata=absent(tuple))
    you: dict[str, Any] | None = field(metadata=absent(None))
    racing: int = field(metadata=absent(0))
    finished: int = field(metadata=absent(0))


@dataclass(frozen=True, slots=True)
class TResults(WireMessage):
    """``t_results`` (reply): every row of a finished round."""

    TYPE = "t_results"
    tournament: str
    round: int
    deal: str | None = field(metadata=absent(None))
    rows: tuple[dict[str, Any], ...] = field(metadata=absent(tuple))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TStandings(WireMessage):
    """``t_standings`` (reply): every standings row; ``final`` once the tournament ended."""

    TYPE = "t_standings"
    tournament: str
    final: bool = field(metadata=FLAG)
    rows: tuple[dict[str, Any], ...] = field(metadata=absent(tuple))
    id: int | None = None


TournamentReply = TournamentSnapshot | TLive | TResults | TStandings


# ----------------------------------------------------------------------------------------
# request decoders (strict: bad_field); replies are read by their from_wire (lenient)


def _tournament(obj: dict[str, Any]) -> str:
    return code_field(obj, "tournament", MAX_TOURNAMENT_CODE_FIELD)


def _decode_t_create(obj: dict[str, Any], msg_id: int | None) -> TCreate:
    rounds = int_field(obj, "rounds", 1, MAX_ROUNDS)
    raw = obj.get("deals")
    deals: tuple[str, ...] | None = None
    if raw is not None:
        if (
            type(raw) is not list
            or len(raw) != rounds
            or any(type(d) is not str or not 0 < len(d) <= MAX_DEAL_FIELD for d in raw)
        ):
            raise bad("deals", "must be nil or a list of exactly 'rounds' deal codes")
        deals = tuple(raw)
    return TCreate(
        name=tournament_name_field(obj),
        rounds=rounds,
        time_limit=int_field(obj, "time_limit", MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S),
        max_players=int_field(obj, "max_players", MIN_T_PLAYERS, MAX_T_PLAYERS),
        deals=deals,
        variant=choice_field(obj, "variant", VARIANTS, "N"),
        scoring=exact_field(obj, "scoring", SCORINGS, "placement"),
        id=msg_id,
    )


def _decode_t_host(obj: dict[str, Any], msg_id: int | None) -> THost:
    op = obj.get("op")
    if type(op) is not str or op not in T_HOST_OPS:
        raise bad("op", f"must be one of {', '.join(T_HOST_OPS)}")
    player = opt_str_field(obj, "player", MAX_PLAYER_ID_FIELD)
    if op == "remove" and player is None:
        raise bad("player", "is required for 'remove'")
    return THost(tournament=_tournament(obj), op=op, player=player, id=msg_id)


REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], TournamentRequest]] = {
    TCreate: _decode_t_create,
    TJoin: lambda obj, msg_id: TJoin(
        tournament=_tournament(obj), as_=exact_field(obj, "as", T_JOIN_AS, "player"), id=msg_id
    ),
    TWithdraw: lambda obj, msg_id: TWithdraw(tournament=_tournament(obj), id=msg_id),
    THost: _decode_t_host,
    TGet: lambda obj, msg_id: TGet(tournament=_tournament(obj), id=msg_id),
    TUnwatch: lambda obj, msg_id: TUnwatch(tournament=_tournament(obj), id=msg_id),
    TGetResults: lambda obj, msg_id: TGetResults(
        tournament=_tournament(obj), round=int_field(obj, "round", 1, MAX_ROUNDS), id=msg_id
    ),
    TGetStandings: lambda obj, msg_id: TGetStandings(tournament=_tournament(obj), id=msg_id),
}

REPLIES: dict[str, Callable[[dict[str, Any]], TournamentReply]] = {
    "tournament": TournamentSnapshot.from_wire,
    "t_live": TLive.from_wire,
    "t_results": TResults.from_wire,
    "t_standings": TStandings.from_wire,
}
