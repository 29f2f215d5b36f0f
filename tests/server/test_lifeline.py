"""server/lifeline.py with real processes: a child that asked to die with its parent is
gone within 2 s of its parent's kill -9, by prctl (Linux) and by the portable watch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests.support import REPO_ROOT

CHILD = """
import sys, time
from server.lifeline import die_with_parent
print(die_with_parent(use_prctl=sys.argv[1] == "prctl"), flush=True)
time.sleep(60)
"""

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]],
                             stdout=subprocess.PIPE, text=True)
    how = child.stdout.readline().strip()  # the child is set up
    print(child.pid, how, flush=True)
    time.sleep(60)
    """
)


def running(proc: psutil.Process) -> bool:
    """Alive (a zombie that its new parent has not reaped yet counts as gone)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("how", ["prctl", "watch"])
def test_a_child_dies_with_its_killed_parent(how: str) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, how],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    child: psutil.Process | None = None
    try:
        assert parent.stdout is not None
        pid, used = parent.stdout.readline().split()
        expected = "prctl" if how == "prctl" and sys.platform.startswith("linux") else "watch"
        assert used == expected
        child = psutil.Process(int(pid))
        assert child.ppid() == parent.pid
        parent.kill()
        parent.wait(5)
        deadline = time.monotonic() + 2
        while running(child):
            assert time.monotonic() < deadline, f"the child ({how}) outlived its parent by 2 s"
            time.sleep(0.05)  # another process's death: nothing to await
    finally:
        parent.kill()
        parent.wait(5)
        if parent.stdout is not None:
            parent.stdout.close()
        if child is not None and running(child):
            child.kill()
