"""The declared schema: a message's map comes from its dataclass, the registry refuses
a type declared twice, and the wire package stands alone (clients install it without
the server)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from crescent_wire import protocol as p
from crescent_wire.message import WireMessage
from crescent_wire.registry import CLIENT_CLASSES, CLIENT_DECODERS, merge_unique
from tests.support import REPO_ROOT


@dataclass(frozen=True, slots=True)
class _Badly(WireMessage):
    TYPE = "badly"
    WIRE_ORDER = ("a",)  # leaves out b
    a: int
    b: int


def test_wire_order_must_name_every_field() -> None:
    with pytest.raises(TypeError, match="WIRE_ORDER"):
        _Badly(a=1, b=2).to_wire()


@dataclass(frozen=True, slots=True)
class _Grown(WireMessage):
    """A message that gained a field: one line, its key where the field is."""

    TYPE = "grown"
    room: str
    new: str | None = None
    id: int | None = None


def test_a_new_field_is_written_in_its_place_and_id_last() -> None:
    assert list(_Grown(room="K7PQ2X", new="x", id=1).to_wire()) == ["t", "room", "new", "id"]
    assert _Grown(room="K7PQ2X").to_wire() == {"t": "grown", "room": "K7PQ2X", "new": None}


def test_a_type_declared_twice_is_refused() -> None:
    with pytest.raises(TypeError, match="'join' is declared twice"):
        merge_unique([("join", 1), ("leave", 2), ("join", 3)], "request")


def test_every_request_class_has_its_decoder() -> None:
    assert sorted(CLIENT_DECODERS) == sorted(cls.TYPE for cls in CLIENT_CLASSES)
    assert p.Act in CLIENT_CLASSES and p.Ack not in CLIENT_CLASSES


def test_the_wire_package_imports_nothing_of_the_server() -> None:
    code = (
        "import sys, crescent_wire.protocol, crescent_wire.errors; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('server', 'aiohttp', "
        "'redis', 'crescent_client')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT / "wire",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"
    for name in ("encode_ack", "decode_act", "t_live_shared", "encode_tournament", "pack_value"):
        assert not hasattr(p, name), name  # the server's own encoders live in the server
