"""The server's errors: one tree, one code per row of docs/protocol.md's errors table.

Every error a client can see is a :class:`ServerError` carrying a ``code`` (the wire
code) and a ``message`` (English, says what to do). The subclasses group them by
where they arise, so callers can catch a family; the code alone decides what the
client is told. Pure Python: no I/O.

>>> err = RoomError("room_full", "Every seat is taken")
>>> (err.code, err.message)
('room_full', 'Every seat is taken')
>>> ProtocolError("bad_field").message
'A field is missing or has the wrong type or range'
"""

from __future__ import annotations

# code -> default English message (used when the raiser gives none).
ERROR_MESSAGES: dict[str, str] = {
    "bad_message": "Every message must be one binary frame holding a msgpack map with a 't' key",
    "unknown_type": "That message type does not exist in this protocol version",
    "bad_field": "A field is missing or has the wrong type or range",
    "not_authenticated": "Send 'hello' first",
    "unsupported_version": "No protocol version in common with this server",
    "bad_token": "The token is forged or damaged; send 'hello' without a token",
    "token_expired": "The token has expired; send 'hello' without a token",
    "bad_name": "A display name has 1-24 characters and no control characters",
    "bad_deal_code": "Malformed deal code",
    "rate_limited": "Too many messages; this one was dropped: slow down",
    "room_not_found": "No room has that code; check the code or create a room",
    "room_full": "Every seat in this room is taken; join as a spectator",
    "already_started": "The race has started; join as a spectator",
    "not_in_room": "You are not in that room; join it first",
    "not_racer": "Only a racer of this room may do that",
    "not_host": "Only the host of the room may do that",
    "not_started": "The race has not started yet",
    "race_over": "The race is over",
    "wrong_phase": "The room is not in a phase that allows this",
    "internal_error": "A server fault; nothing was applied; retry",
    # Practice games and the solver
    "not_practice": "Hints are only for a practice game (a room of one seat) while racing",
    "busy": "The solver is busy; retry in a few seconds",
    # --- trust under faults and abuse (issue #10: rooms, games, storage)
    "seq_conflict": "That seq was already used by a different action; use the next seq",
    "too_many_rooms": "You have too many open rooms; leave one before creating another",
    # --- connection-level quotas (issue #10; the settings are in server/config.py)
    "too_many_connections": "Too many open connections from your address; close some and retry",
    "too_many_new_players": "Too many new guest players from your address in the last "
    "minute; reuse your token or retry in a minute",
    # the daily challenge
    "already_played": "You have started today's ranked attempt already; later plays are practice",
    "day_over": "That day's challenge is over; its board stays readable",
    "day_not_found": "No daily challenge for that day",
    "day_not_ready": "Today's challenge is still being prepared; retry in a few seconds",
    # tournaments (issue #13)
    "tournament_not_found": "No tournament has that code; check the code or the link",
    "registration_closed": "Registration for this tournament is closed; watch as a spectator",
    "tournament_full": "This tournament has as many players (or spectators) as it allows",
    "removed_from_tournament": "The host removed you from this tournament; you cannot rejoin",
    "tournament_over": "This tournament has finished; its results stay viewable",
    "not_registered": "That player is not registered in this tournament",
    "cannot_remove_host": "The host cannot remove themself; withdraw (t_withdraw) to stop playing",
    "round_running": "A round is under way; wait until it ends",
    "tournament_paused": "The tournament is paused; the host resumes it first",
    "no_more_rounds": "Every round of this tournament has been played; end it",
    "no_players": "No active player is registered; a round needs at least one",
    "round_not_finished": "That round has not finished (or not started) yet",
    "too_many_tournaments": "You host the most unfinished tournaments allowed; end one first",
    "too_many_subscriptions": "This connection watches the most tournaments allowed; "
    "send t_unwatch for one first",
    # the archive (issue #22; docs/archive.md, "Reading")
    "game_not_found": "No archived game has that id, or its deal is not revealed yet",
    "bad_cursor": "That page cursor is malformed; use the 'next' of the page before",
    "bad_page_size": "A page holds 1 to 100 rows",
    "bad_player_id": "A player id has 1 to 64 characters",
    "archive_off": "This server keeps no archive",
    "archive_unavailable": "The archive is not answering; retry in a moment",
}

# Swedish messages of the tournament codes (the browser shows its own translations;
# these are for clients that show the server's text, as ``refused`` carries both).
ERROR_MESSAGES_SV: dict[str, str] = {
    "tournament_not_found": "Ingen turnering har den koden; kontrollera koden eller länken",
    "registration_closed": "Anmälan till turneringen är stängd; titta på som åskådare",
    "tournament_full": "Turneringen har så många spelare (eller åskådare) som den tillåter",
    "removed_from_tournament": "Värden har tagit bort dig ur turneringen; du kan inte gå med igen",
    "tournament_over": "Turneringen är slut; resultaten går fortfarande att se",
    "not_registered": "Den spelaren är inte anmäld till turneringen",
    "cannot_remove_host": "Värden kan inte ta bort sig själv; dra dig ur (t_withdraw) för att "
    "sluta spela",
    "round_running": "En omgång pågår; vänta tills den är slut",
    "tournament_paused": "Turneringen är pausad; värden måste återuppta den först",
    "no_more_rounds": "Alla omgångar är spelade; avsluta turneringen",
    "no_players": "Ingen aktiv spelare är anmäld; en omgång kräver minst en",
    "round_not_finished": "Den omgången är inte slut (eller har inte börjat) än",
    "too_many_tournaments": "Du är värd för så många oavslutade turneringar som tillåts; "
    "avsluta en först",
    "too_many_subscriptions": "Anslutningen följer så många turneringar som tillåts; "
    "skicka t_unwatch för en först",
}

# WebSocket close codes (docs/protocol.md, "Close codes").
CLOSE_GOING_AWAY = 1001
# 1009 (frame too big) is sent by aiohttp itself (max_msg_size = MAX_FRAME).
CLOSE_UNSUPPORTED_VERSION = 4002
CLOSE_FLOODING = 4008
CLOSE_NO_HELLO = 4010
# --- connection-level limits (issue #10)
CLOSE_SLOW_CONSUMER = 4009  # more than the send buffer waiting: the client does not read
CLOSE_TOO_MANY_CONNECTIONS = 4029  # the address has too many connections open


class ServerError(Exception):
    """An error the client is told about: ``code`` from the errors table, ``message``."""

    codes: frozenset[str] = frozenset(ERROR_MESSAGES)

    def __init__(self, code: str, message: str | None = None) -> None:
        if code not in self.codes:
            raise ValueError(f"{type(self).__name__} cannot carry code {code!r}")
        self.code = code
        self.message = message if message is not None else ERROR_MESSAGES[code]
        self.msg_id: int | None = None  # the request's id, when known
        super().__init__(f"{code}: {self.message}")


class ProtocolError(ServerError):
    """The frame or message itself is wrong (raised by the codec)."""

    codes = frozenset({"bad_message", "unknown_type", "bad_field"})


class AuthError(ServerError):
    """Session problems: hello, versions, tokens, names."""

    codes = frozenset(
        {"not_authenticated", "unsupported_version", "bad_token", "token_expired", "bad_name"}
    )


class RoomError(ServerError):
    """A room or race request refused because of the room's state or the sender's role."""

    codes = frozenset(
        {
            "bad_deal_code",
            "room_not_found",
            "room_full",
            "already_started",
            "not_in_room",
            "not_racer",
            "not_host",
            "not_started",
            "race_over",
            "wrong_phase",
            "not_practice",
            "seq_conflict",
            "too_many_rooms",
        }
    )


class BusyError(ServerError):
    """The server's solver has as many jobs queued as it accepts: retry later."""

    codes = frozenset({"busy"})

    def __init__(self, message: str | None = None) -> None:
        super().__init__("busy", message)


class LimitError(ServerError):
    """A per-address quota is used up (connections, new guest players)."""

    codes = frozenset({"too_many_connections", "too_many_new_players"})


class DailyError(ServerError):
    """A daily-challenge request refused (docs/protocol.md, "Daily challenge")."""

    codes = frozenset(
        {"already_played", "day_over", "day_not_found", "day_not_ready", "wrong_phase"}
    )


class TournamentError(ServerError):
    """A tournament request refused (docs/protocol.md, "Tournaments")."""

    codes = frozenset(
        {
            "tournament_not_found",
            "registration_closed",
            "tournament_full",
            "removed_from_tournament",
            "tournament_over",
            "not_registered",
            "cannot_remove_host",
            "round_running",
            "tournament_paused",
            "no_more_rounds",
            "no_players",
            "round_not_finished",
            "too_many_tournaments",
            "too_many_subscriptions",
            "not_host",
            "bad_deal_code",
        }
    )


class ArchiveReadError(ServerError):
    """A read of the archive refused (docs/archive.md, "Reading")."""

    codes = frozenset(
        {
            "game_not_found",
            "bad_cursor",
            "bad_page_size",
            "bad_player_id",
            "bad_deal_code",
            "archive_off",
            "archive_unavailable",
        }
    )


class InternalError(ServerError):
    codes = frozenset({"internal_error"})

    def __init__(self, message: str | None = None) -> None:
        super().__init__("internal_error", message)


class ConflictError(Exception):
    """A Redis compare-and-set lost a race with another writer: reload and retry.

    Never shown to clients (the caller retries; after too many retries it becomes
    ``internal_error``).
    """
