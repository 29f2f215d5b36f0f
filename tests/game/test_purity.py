"""The engine is pure: standard library only, no I/O or event loop imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import server.game

FORBIDDEN = {"asyncio", "aiohttp", "redis", "msgpack", "socket", "websockets"}


def test_engine_imports_only_the_standard_library() -> None:
    package = Path(server.game.__file__).parent
    files = sorted(package.glob("*.py"))
    assert len(files) >= 4
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: inside the package
                    continue
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", (path, name)
                assert top not in FORBIDDEN, (path, name)
