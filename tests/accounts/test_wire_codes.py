"""Every refusal of the accounts' core reaches the client as a documented wire code."""

from __future__ import annotations

from crescent_wire.errors import ERROR_MESSAGES, AccountsError
from server.core.accounts import ERROR_CODES


def test_every_account_error_code_is_a_wire_code() -> None:
    assert ERROR_CODES.issubset(AccountsError.codes)
    assert AccountsError.codes <= set(ERROR_MESSAGES)
    for code in ERROR_CODES:
        assert AccountsError(code).message == ERROR_MESSAGES[code]
