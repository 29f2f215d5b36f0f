"""Child processes that die with their parent, ``kill -9`` included.

The solver's processes (server/cpu.py) are a fork server, started by the server, and its
workers, forked by the fork server. Nothing in multiprocessing stops them when the server
is killed without a word: a worker waits on its job queue for ever (it holds both ends of
the queue's pipe), and the fork server lives as long as any worker does. So each of them
asks to die with its parent:

- On Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the process the moment
  its parent dies, even in the middle of a solve (the solver's C core holds the GIL, so no
  Python thread could notice). The signal follows the death of the parent *thread* that
  forked the process: the workers are forked by the fork server's only thread, and the
  fork server by the server's event-loop thread (``ProcessCpu.run``, the only place that
  starts processes), which lives as long as the server serves.
- Elsewhere, a daemon thread that checks every :data:`WATCH_INTERVAL_S` whether the
  parent changed (a dead parent's children are adopted by another process) and then
  ends the process (at the latest when a running solve gives the GIL back).

``die_with_parent(expected_parent)`` closes the race of a parent that died before the
call: if ``os.getppid()`` is no longer the expected parent, the process exits at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from typing import Final

PR_SET_PDEATHSIG: Final = 1  # <linux/prctl.h>
WATCH_INTERVAL_S: Final = 0.5
ORPHAN_EXIT_CODE: Final = 70  # the parent was gone (EX_SOFTWARE)


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux: have the kernel send ``sig`` to this process when its parent dies.
    False where that is not available (another system, a libc without prctl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def watch_parent(expected_parent: int, interval_s: float = WATCH_INTERVAL_S) -> threading.Thread:
    """The portable fallback: a daemon thread that ends this process once its parent is
    no longer ``expected_parent``."""

    def watch() -> None:
        while os.getppid() == expected_parent:
            time.sleep(interval_s)
        os._exit(ORPHAN_EXIT_CODE)

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


def die_with_parent(
    expected_parent: int | None = None, *, use_prctl: bool = True, sig: int = signal.SIGKILL
) -> str:
    """Make this process end when its parent dies; returns how (``"prctl"`` or
    ``"watch"``). ``expected_parent`` (default: the current parent) is checked after the
    arrangement, so a parent that died just before is not missed. ``sig``: the signal
    the kernel sends (SIGTERM lets a server worker shut down gracefully; the watch
    thread of other systems always ends the process at once)."""
    parent = os.getppid() if expected_parent is None else expected_parent
    how = "prctl" if use_prctl and set_parent_death_signal(sig) else "watch"
    if how == "watch":
        watch_parent(parent)
    if os.getppid() != parent:
        os._exit(ORPHAN_EXIT_CODE)
    return how
