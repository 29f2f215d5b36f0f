"""docs/accounts.md keeps up with the code: every error code, reserved name and bound."""

from __future__ import annotations

import re
from pathlib import Path

from server.core.accounts import (
    ERROR_CODES,
    MAX_PASSKEYS,
    MAX_SESSIONS,
    RESERVED_HANDLES,
    RESERVED_PREFIXES,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
)

DOC = (Path(__file__).parents[2] / "docs" / "accounts.md").read_text(encoding="utf-8")


def test_every_error_code_has_a_row() -> None:
    section = DOC.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    documented = {
        code
        for line in section.splitlines()
        if line.startswith("| `")
        for code in re.findall(r"`([a-z_]+)`", line.split("|")[1])
    }
    assert documented == ERROR_CODES


def test_reserved_names_and_bounds_are_the_code_s() -> None:
    section = DOC.split("**Reserved**", 1)[1].split("Known limits", 1)[0]
    listed = set(re.findall(r"`([^`]+)`", section)) - {"handle_reserved", "Guest-XXXX"}
    assert listed == set(RESERVED_HANDLES) | set(RESERVED_PREFIXES)
    assert f"At most {MAX_PASSKEYS} an account" in DOC
    assert f"At most {MAX_SESSIONS} live an account" in DOC
    assert SCRYPT_N == 2**14 and (SCRYPT_R, SCRYPT_P) == (8, 1)
    assert "**N = 2¹⁴, r = 8, p = 1**" in DOC
