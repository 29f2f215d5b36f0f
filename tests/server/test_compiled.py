"""The compiled hot path (server/compiled.py): the switch, the staleness check, and the
same results as the pure-Python modules."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server import compiled

# A short script: plays greedy games and prints a digest of every ack's VIEW bytes and
# progress, and which engine module it used.
PLAY = """
import hashlib, msgpack, sys
from crescent_client.strategy import GreedyStrategy
from server.core.view_codec import ViewEncoder
from server.lobby import RacerGame
import server.game.engine as engine

h = hashlib.sha256()
for deal in ("CR1-N-AAAAAAB", "CR1-N-AAAAAAC", "CR1-F-AAAAAAD", "CR1-O-AAAAAAE"):
    racer, strategy, encoder = RacerGame.new(deal), GreedyStrategy(), ViewEncoder()
    while (action := strategy.next_action(racer.view().to_wire())) is not None:
        refusal = racer.apply(action, elapsed_ms=7)
        h.update(msgpack.packb([action, refusal and refusal.code]))
        h.update(encoder.encode(racer) + msgpack.packb(racer.progress("p", 9).to_record()))
print(engine.__file__)
print(h.hexdigest())
"""


def play(env_compiled: str) -> tuple[str, str]:
    env = {**os.environ, "CRESCENT_COMPILED": env_compiled}
    out = subprocess.run(
        [sys.executable, "-c", PLAY],
        env=env,
        cwd=compiled.ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    return out[0], out[1]


def test_off_means_pure_python_and_on_means_the_build_if_current() -> None:
    pure_file, pure_digest = play("off")
    assert pure_file == str(compiled.source_path("server.game.engine"))
    built_file, built_digest = play("on")
    if compiled.current_build() is None:  # not built here (no compiler): pure Python
        assert built_file == pure_file
    else:
        assert Path(built_file).is_relative_to(compiled.BUILD_DIR)
        assert built_file.endswith(".so")
    # The same actions refused, the same VIEW bytes and progress, either way.
    assert built_digest == pure_digest


def test_this_process_uses_what_the_switch_says() -> None:
    import server.game.engine as engine

    if compiled.wanted() and compiled.current_build() is not None:
        assert compiled.active()
        assert Path(engine.__file__ or "").is_relative_to(compiled.BUILD_DIR)
    else:
        assert not compiled.active()
        assert engine.__file__ == str(compiled.source_path("server.game.engine"))


def test_a_stale_build_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    files = {m: f"{m}.so" for m in compiled.MODULES}
    for name in files.values():
        (tmp_path / name).write_bytes(b"")
    sources = {m: hashlib.sha256(compiled.source_path(m).read_bytes()).hexdigest() for m in files}
    manifest = {
        "abi": sys.implementation.cache_tag,
        "modules": list(compiled.MODULES),
        "sources": sources,
        "files": files,
    }
    monkeypatch.setattr(compiled, "BUILD_DIR", tmp_path)
    monkeypatch.setattr(compiled, "MANIFEST", tmp_path / "manifest.json")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert compiled.current_build() == {m: tmp_path / f for m, f in files.items()}

    manifest["sources"] = {**sources, "server.game.engine": "0" * 64}  # engine.py edited
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="server.compiled"):
        assert compiled.current_build() is None
    assert "server.game.engine changed" in caplog.text

    (tmp_path / "manifest.json").unlink()
    assert compiled.current_build() is None  # never built: quietly pure Python
