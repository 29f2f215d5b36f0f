"""The relying party's settings (docs/server.md): --rp-id and --origins."""

from __future__ import annotations

import pytest

from server.compose import relying_party
from server.config import parse_args


def test_development_default_is_localhost_at_the_port() -> None:
    settings = parse_args(["--port", "9123"])
    rp = relying_party(settings)
    assert (rp.id, rp.origins) == ("localhost", ("http://localhost:9123",))


def test_behind_a_tls_proxy_the_public_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRESCENT_RP_ID", "Crescent.Example")
    monkeypatch.setenv(
        "CRESCENT_ORIGINS", "https://crescent.example, https://www.crescent.example/"
    )
    rp = relying_party(parse_args([]))
    assert rp.id == "crescent.example"
    assert rp.origins == ("https://crescent.example", "https://www.crescent.example")


@pytest.mark.parametrize(
    "argv",
    [
        ["--rp-id", "127.0.0.1"],
        ["--rp-id", "::1"],
        ["--rp-id", "https://crescent.example"],
        ["--rp-id", "crescent.example", "--origins", "https://evil.example"],
        ["--rp-id", "crescent.example", "--origins", "crescent.example"],
        ["--origins", "http://127.0.0.1:8080"],
    ],
)
def test_refused_at_start(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--rp-id" in err or "--origins" in err
