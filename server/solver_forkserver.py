"""Imported by the solver's fork server as it starts (multiprocessing's forkserver
preload, set by server/cpu.py), and acting only there: from then on the fork server dies
with the server process that started it (server/lifeline.py). The workers it forks find
its pid here (a fork keeps the module) to check their own parent.

A fork server whose server died before this ran needs nothing: multiprocessing's fork
server exits by itself once nobody holds its "alive" pipe, and before its first fork
only the server did.
"""

from __future__ import annotations

import inspect
import os
from multiprocessing import forkserver

from server.lifeline import die_with_parent


def _imported_by_fork_server() -> bool:
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


def expected_parent() -> int | None:
    """The server process that started this fork server (server/cpu.py puts its pid in
    the environment), so a starter that died before :func:`die_with_parent` ran is
    noticed; None where it is not set (the current parent is taken then)."""
    value = os.environ.get("CRESCENT_SOLVER_PARENT", "")
    return int(value) if value.isdigit() else None


FORKSERVER_PID: int | None = None
if _imported_by_fork_server():
    FORKSERVER_PID = os.getpid()
    die_with_parent(expected_parent())
