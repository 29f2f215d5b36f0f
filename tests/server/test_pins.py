"""Each module that touches a library's internals names the exact version it was written
for; a different installed version fails here, naming the pin, before anything subtle
breaks (update the module, check it, then its WRITTEN_FOR and the pin in pyproject.toml)."""

from __future__ import annotations

import importlib
from importlib.metadata import version

import pytest

ADAPTERS = ["server.storage.redis_fast", "server.web.aiohttp_fast"]


@pytest.mark.parametrize("module_name", ADAPTERS)
def test_installed_version_is_the_one_the_adapter_was_written_for(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        pytest.fail(
            f"{module_name} no longer imports ({err}): the library's internals "
            "changed; see its WRITTEN_FOR and the pin in pyproject.toml"
        )
    distribution, written_for = module.WRITTEN_FOR
    installed = version(distribution)
    assert installed == written_for, (
        f"{module_name} touches {distribution} internals and was written for "
        f"{distribution}=={written_for}, but {distribution}=={installed} is installed: "
        f"check the adapter against {installed}, then update its WRITTEN_FOR and the "
        f"exact pin in pyproject.toml (or run with CRESCENT_FAST_PATHS=off)"
    )
