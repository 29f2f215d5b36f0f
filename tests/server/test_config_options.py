"""The settings' command line (server/config.py): each option declared once in
``OPTIONS``, its environment variable and its default the ``Settings`` field's."""

from __future__ import annotations

import dataclasses
import os

import pytest

from server.config import OPTIONS, ArchiveWriter, Settings, parse_args


def test_every_option_but_the_cluster_switch_is_a_settings_field() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert {o.name for o in OPTIONS} - fields == {"redis_cluster"}


def test_the_defaults_are_the_settings_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    for option in OPTIONS:
        monkeypatch.delenv(option.env_var, raising=False)
    parsed = dataclasses.asdict(parse_args([]))
    # --workers unset (or 0) means one per core, and --archive-writer auto then the
    # writer process with more than one: the defaults parse_args works out
    cores = os.cpu_count() or 1
    writer: ArchiveWriter = "process" if cores > 1 else "inline"
    expected = dataclasses.replace(Settings(), workers=cores, archive_writer=writer)
    assert parsed == dataclasses.asdict(expected)


def test_the_archive_writer_is_a_process_of_its_own_with_workers() -> None:
    def writer(*args: str) -> str:
        return parse_args(["--redis-url", "redis://127.0.0.1:6379/0", *args]).archive_writer

    assert writer("--workers", "2") == "process"
    assert writer("--workers", "1") == "inline"
    assert writer("--workers", "1", "--archive-writer", "process") == "process"
    assert writer("--workers", "2", "--archive-writer", "inline") == "inline"
    assert writer("--workers", "2", "--archive", "off") == "inline"  # nothing to write
    with pytest.raises(SystemExit):
        parse_args(["--storage", "memory", "--archive-writer", "process"])


def test_the_environment_then_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRESCENT_PORT", "9000")
    monkeypatch.setenv("CRESCENT_GC_INTERVAL_S", "2.5")
    monkeypatch.setenv("CRESCENT_TRUST_FORWARDED_FOR", "yes")
    monkeypatch.setenv("CRESCENT_SECRET", "")  # blank: unset
    settings = parse_args(["--gc-interval-s", "4"])
    assert (settings.port, settings.gc_interval_s) == (9000, 4.0)
    assert settings.trust_forwarded_for and settings.secret is None


def test_a_bad_number_in_the_environment_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CRESCENT_PORT", "eighty")
    with pytest.raises(SystemExit) as exit_:
        parse_args([])
    assert exit_.value.code == 2
    assert "--port: invalid int value: 'eighty'" in capsys.readouterr().err
