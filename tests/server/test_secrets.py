"""The token secret: refused when short or printed in the repository (a real process
exits with a message naming the fix), rotation with a grace period, and a grep of the
repository that keeps the list of public secrets whole."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from bench.devclient import open_client
from crescent_wire import protocol as p
from crescent_wire.errors import AuthError
from server.auth import PUBLIC_SECRETS, Player, TokenSigner, check_secret
from server.config import check_secrets, parse_args
from tests.support import REPO_ROOT, launch_server_process

GOOD = "k" * 32
OTHER = "o" * 40


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("change-me-to-a-long-random-string", "printed in the repository"),
        ("short", "5 bytes long, shorter than 32"),
    ],
)
def test_the_server_refuses_to_start_with_a_weak_secret(secret: str, says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server", "--secret", secret, "--port", "1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert says in done.stderr
    assert "openssl rand -hex 32" in done.stderr  # the fix, named
    assert "listening" not in done.stdout + done.stderr


def test_the_secret_checks() -> None:
    for public in PUBLIC_SECRETS:
        with pytest.raises(ValueError, match="printed in the repository"):
            check_secret(public)
    with pytest.raises(ValueError, match="31 bytes long"):
        check_secret("x" * 31)
    check_secret("é" * 16)  # bytes, not characters: 32 bytes
    assert check_secrets(None, None, None) is None
    assert check_secrets(GOOD, None, None) is None
    now = time.time()
    end = check_secrets(
        GOOD, OTHER, "2030-01-10T12:00Z", now=time.mktime((2030, 1, 1, 0, 0, 0, 0, 0, 0))
    )
    assert end is not None and time.gmtime(end)[:5] == (2030, 1, 10, 12, 0)
    for previous, until, says in [
        (OTHER, None, "needs --previous-secret-until"),
        (GOOD, "2030-01-10", "the same as --secret"),
        ("short-previous", "2030-01-10", "--previous-secret .* shorter than 32"),
        (OTHER, "next week", "not an ISO 8601"),
        (OTHER, "2099-01-01", "more than 30 days ahead"),
    ]:
        with pytest.raises(ValueError, match=says):
            check_secrets(GOOD, previous, until, now=now)
    with pytest.raises(ValueError, match="needs --secret"):
        check_secrets(None, OTHER, "2030-01-10", now=now)
    with pytest.raises(SystemExit):
        parse_args(["--secret", "too-short"])


def test_rotation_accepts_the_previous_secret_during_its_grace_period() -> None:
    player = Player.new("Ada")
    old_token = TokenSigner(OTHER).sign(player)
    clock = [1_000.0]
    rotated = TokenSigner(GOOD, previous=OTHER, previous_until=2_000.0, clock=lambda: clock[0])
    assert rotated.verify(old_token) == player  # within the grace period
    fresh = rotated.sign(player)  # always signed with the current secret
    assert TokenSigner(GOOD).verify(fresh) == player
    with pytest.raises(AuthError) as refused:
        TokenSigner(OTHER).verify(fresh)
    assert refused.value.code == "bad_token"
    clock[0] = 2_000.0  # the grace period is over
    with pytest.raises(AuthError) as late:
        rotated.verify(old_token)
    assert late.value.code == "bad_token"
    assert rotated.verify(fresh) == player
    with pytest.raises(AuthError):
        rotated.verify(TokenSigner("z" * 32).sign(player))  # neither secret


async def test_rotation_across_restarts(prefix: str) -> None:
    """A token of the old secret still works on a server rotated to a new one (and its
    welcome carries a token of the new secret); once the previous secret is gone, the
    old token is refused and the new one still works."""
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    steps = [
        (OTHER, []),
        (GOOD, ["--previous-secret", OTHER, "--previous-secret-until", until]),
        (GOOD, []),
    ]
    tokens: list[str] = []
    async with aiohttp.ClientSession() as session:
        for step, (secret, args) in enumerate(steps):
            server = await asyncio.to_thread(
                launch_server_process, prefix, None, None, secret=secret, extra_args=args
            )
            try:
                if step == 0:
                    ada = await open_client(session, server.ws_url, name="Ada")
                    tokens.append(ada.token)
                    player = ada.player
                elif step == 1:
                    again = await open_client(session, server.ws_url, token=tokens[0])
                    assert again.player == player and again.token != tokens[0]
                    tokens.append(again.token)
                else:
                    refused = await open_client(session, server.ws_url, hello=False)
                    reply = await refused.call(p.Hello(token=tokens[0]))
                    assert getattr(reply, "code", None) == "bad_token"
                    kept = await open_client(session, server.ws_url, token=tokens[1])
                    assert kept.player == player
            finally:
                await asyncio.to_thread(server.terminate)


# --- every secret printed in the repository is in PUBLIC_SECRETS

# A literal given to something named like a secret: quoted (`secret="x"`,
# `SECRET = "x"`, `TokenSigner("x")`, `URLSafeTimedSerializer(\n "x"`), or bare in an
# environment file, a command line or compose (`CRESCENT_SECRET=x`, `--secret x`,
# `${CRESCENT_SECRET:-x}`). Placeholders (`<...>`, `$(...)`, `${...}`) are not secrets.
QUOTED = re.compile(
    r"""(?i)(?:secret\w*\s*[=:]|(?:Serializer|TokenSigner)\()\s*["']([^"'$<{}\s]{4,})["']"""
)
BARE = re.compile(
    r"(?:CRESCENT_(?:PREVIOUS_)?SECRET[=:][ \t]*|--(?:previous-)?secret[ =]|SECRET:-)"
    r"([A-Za-z0-9][^\s\"'$<{}]{3,})"
)


def secrets_in(text: str, *, python: bool = False) -> set[str]:
    """The secret literals in ``text`` (in Python, quoted ones only: a bare
    ``--secret`` there is prose in a message)."""
    patterns = (QUOTED,) if python else (QUOTED, BARE)
    return {m.group(1) for pattern in patterns for m in pattern.finditer(text)}


def test_the_scan_finds_the_old_compose_default() -> None:
    old = "      CRESCENT_SECRET: ${CRESCENT_SECRET:-change-me-to-a-long-random-string}"
    assert secrets_in(old) == {"change-me-to-a-long-random-string"}
    assert secrets_in('SECRET = "power-cut-secret"') == {"power-cut-secret"}
    assert secrets_in("--secret bench-secret CRESCENT_SECRET=<a long random string>") == {
        "bench-secret"
    }
    assert secrets_in('CRESCENT_SECRET="$(openssl rand -hex 32)"') == set()


def test_every_secret_printed_in_the_repository_is_refused() -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    printed: dict[str, str] = {}
    for name in files:
        path = Path(REPO_ROOT, name)
        if path.suffix in (".png", ".lock") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for value in secrets_in(text, python=path.suffix in (".py", ".pyi")):
            printed.setdefault(value, name)
    assert "s3cret" in printed  # the scan reads the repository (server/auth.py's doctest)
    missing = {value: name for value, name in printed.items() if value not in PUBLIC_SECRETS}
    assert missing == {}, f"add these to server.auth.PUBLIC_SECRETS: {missing}"
