"""The protocol's constants: versions, bounds a client must respect, the known choices.

Every request field's bound lives here, next to the others, so a client can check a
request before sending it and docs/protocol.md's tables have one place to agree with.
"""

from __future__ import annotations

PROTOCOL_VERSIONS: tuple[int, ...] = (1,)
MAX_FRAME = 4096
RATE_PER_S = 30
RATE_BURST = 60
MAX_ID = 2**31

# --- rooms
VARIANTS = ("N", "F", "O", "R")
ROOM_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
ROOM_CODE_LENGTH = 6
MAX_ROOM_FIELD = 32  # a longer string cannot be a code; shorter unknown ones are room_not_found
MAX_DEAL_FIELD = 32
MIN_SEATS, MAX_SEATS, DEFAULT_SEATS = 1, 8, 4  # one seat: a solo practice game
MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S = 30, 7200
MAX_TOKEN_LENGTH = 512
MAX_NAME_FIELD = 200  # raw length accepted on the wire; the 1-24 rule is checked later (bad_name)
MAX_ACTION_LENGTH = 32
MAX_VERSIONS = 16
MAX_SINCE = 2**53

# --- the daily challenge
DAY_LENGTH = 10  # YYYY-MM-DD
MAX_BOARD_TOP, DEFAULT_BOARD_TOP = 100, 10
MAX_BOARD_AROUND, DEFAULT_BOARD_AROUND = 25, 5
MAX_DAYS_LISTED, DEFAULT_DAYS_LISTED = 30, 7

# --- tournaments
MAX_ROUNDS = 20
MIN_T_PLAYERS, MAX_T_PLAYERS = 2, 200
MAX_T_NAME = 40
MAX_TOURNAMENT_CODE_FIELD = 32  # a longer string cannot be a code; shorter unknown ones
MAX_PLAYER_ID_FIELD = 64  # are tournament_not_found / not_registered (checked later)
TOURNAMENT_CODE_PREFIX = "T"
SCORINGS = ("placement", "time")
T_JOIN_AS = ("player", "spectator")
T_HOST_OPS = (
    "open_registration",
    "close_registration",
    "start_round",
    "pause",
    "resume",
    "remove",
    "end",
    "accounts_only",  # registration for accounts only (docs/accounts.md), one way
)
T_LIVE_TOP = 10
