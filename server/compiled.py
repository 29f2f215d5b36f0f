"""The hot path's compiled modules (mypyc), and the switch back to pure Python.

``scripts/setup`` compiles the modules in :data:`MODULES` with mypyc
(``python -m server.compiled build``) into ``build/mypyc/`` (never committed, like every
build output), with a manifest of their sources' SHA-256. When ``server`` is imported,
:func:`install` puts an import hook in front of the others that loads those modules
from there, unless

- ``CRESCENT_COMPILED=off`` (the pure-Python modules: the reference, and what CI tests
  a second time),
- nothing was built (no compiler: the server runs as pure Python), or
- any source changed since the build (stale: all of them stay pure Python, with a
  warning on stderr, until ``scripts/setup`` runs again). All or none: mypyc's modules
  call each other's native code directly, so a compiled module next to a pure-Python
  version of its neighbour would see two different ``Game`` classes.

The same source runs either way: mypyc compiles the type-annotated Python as written
(and checks the annotations at run time). :func:`active` says which is in use.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

log = logging.getLogger("server.compiled")

ROOT = Path(__file__).resolve().parent.parent  # the checkout (editable install)
BUILD_DIR = ROOT / "build" / "mypyc"
MANIFEST = BUILD_DIR / "manifest.json"

# The modules compiled together (one mypyc group). Pure functions and plain classes,
# every one on the path of an ``act``: the rules engine (its cards, board, game and VIEW
# value; not the JSON position's parser, server.game.position), the racer's game, the
# act decision and the VIEW encoder.
MODULES = (
    "server.game.cards",
    "server.game.view",
    "server.game.board",
    "server.game.engine",
    "server.lobby.race",
    "server.core.act",
    "server.core.view_codec",
)

_active = False


def source_path(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".py")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def active() -> bool:
    """True if :data:`MODULES` are (to be) loaded compiled in this process."""
    return _active


class _Finder(importlib.abc.MetaPathFinder):
    """Finds :data:`MODULES` (and mypyc's shared library) among the built files."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def current_build() -> dict[str, Path] | None:
    """The built files by module name, if a build exists for this Python, this module
    list and the current sources; else None (with a warning if a build is stale)."""
    try:
        manifest = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None  # never built
    if manifest.get("abi") != sys.implementation.cache_tag or manifest.get("modules") != list(
        MODULES
    ):
        log.warning("build/mypyc is for another Python or module list: run scripts/setup")
        return None
    stale = [m for m in MODULES if manifest["sources"].get(m) != digest(source_path(m))]
    if stale:
        log.warning(
            "compiled modules are out of date (%s changed): using pure Python; "
            "scripts/setup rebuilds them",
            ", ".join(stale),
        )
        return None
    files = {name: BUILD_DIR / file for name, file in manifest["files"].items()}
    return files if all(f.is_file() for f in files.values()) else None


def wanted() -> bool:
    return os.environ.get("CRESCENT_COMPILED", "on").strip().lower() not in ("off", "0")


def install() -> bool:
    """Put the import hook in place if the compiled modules are wanted, built and
    current (see the module docstring); True if it did."""
    global _active
    if _active or not wanted():
        return _active
    files = current_build()
    if files is None:
        return False
    sys.meta_path.insert(0, _Finder(files))
    _active = True
    return True


def build(args: Sequence[str] = ()) -> int:
    """Compile :data:`MODULES` with mypyc into ``build/mypyc`` (``scripts/setup``), unless
    the build there is current (``--force``: anyway)."""
    import shutil

    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]

    if "--force" not in args and current_build() is not None:
        print("build/mypyc is up to date")
        return 0
    sources = {m: digest(source_path(m)) for m in MODULES}
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    os.chdir(ROOT)  # mypyc names the modules by their paths from the checkout
    extensions = mypycify(
        [str(source_path(m).relative_to(ROOT)) for m in MODULES],
        opt_level="3",
        target_dir=str(ROOT / "build" / "mypyc-c"),
    )
    dist = Distribution({"ext_modules": extensions, "script_name": "server.compiled"})
    dist.script_args = [
        "build_ext",
        "--build-lib",
        str(BUILD_DIR),
        "--build-temp",
        str(ROOT / "build" / "mypyc-temp"),
    ]
    dist.parse_command_line()
    dist.run_commands()
    files = {}
    for ext in extensions:
        built = BUILD_DIR / (ext.name.replace(".", "/") + _suffix())
        if not built.is_file():
            print(f"mypyc did not produce {built}", file=sys.stderr)
            return 1
        files[ext.name] = str(built.relative_to(BUILD_DIR))
    MANIFEST.write_text(
        json.dumps(
            {
                "abi": sys.implementation.cache_tag,
                "modules": list(MODULES),
                "sources": sources,
                "files": files,
            },
            indent=1,
        )
    )
    return 0


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


if __name__ == "__main__":
    if sys.argv[1:2] != ["build"] or not set(sys.argv[2:]) <= {"--force"}:
        print("usage: python -m server.compiled build [--force]", file=sys.stderr)
        sys.exit(2)
    sys.exit(build(sys.argv[2:]))
