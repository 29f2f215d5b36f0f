"""The engine and the lobby are pure: no I/O, no event loop, no wire encoding, and no
private attributes of another module (python-chess style: public accessors)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import server.game
import server.lobby

FORBIDDEN = {"asyncio", "aiohttp", "redis", "msgpack", "socket", "websockets"}
# The lobby may use the engine and the wire's error tree (pure: standard library only).
LOBBY_MAY_IMPORT = {
    "server.game",
    "server.game.cards",
    "server.game.errors",
    "crescent_wire.errors",
    "server.lobby",
    "server.lobby.events",
    "server.lobby.race",
    "server.lobby.room",
    "server.lobby.room_state",
    "server.lobby.values",
}


def _python_files(package: object) -> list[Path]:
    files = sorted(Path(package.__file__).parent.glob("*.py"))  # type: ignore[attr-defined]
    assert len(files) >= 3
    return files


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:  # relative: same package
            names.append(node.module or "")
    return names


@pytest.mark.parametrize("package", [server.game, server.lobby], ids=["game", "lobby"])
def test_imports_only_pure_modules(package: object) -> None:
    for path in _python_files(package):
        for name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            top = name.split(".")[0]
            assert top not in FORBIDDEN, f"{path} imports {name}"
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            assert package is server.lobby and name in LOBBY_MAY_IMPORT, (
                f"{path} imports {name}: the engine takes the standard library only, the "
                f"lobby also {sorted(LOBBY_MAY_IMPORT)}"
            )


@pytest.mark.parametrize("package", [server.game, server.lobby], ids=["game", "lobby"])
def test_reads_no_private_attribute_of_another_object(package: object) -> None:
    """``x._name`` only on ``self``/``cls`` (or a twin being built by ``copy``)."""
    for path in _python_files(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                owner = node.value.id if isinstance(node.value, ast.Name) else None
                assert owner in {"self", "cls", "twin"}, (
                    f"{path}:{node.lineno} reads {ast.unparse(node)}"
                )
