"""The browser client's own unit tests (rules hints, languages), run with node's test runner."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .conftest import WEB


def test_web_client_unit_tests_pass() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is missing: install Node.js 20")
    result = subprocess.run(
        [node, "--test", "test/"], cwd=WEB, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout
