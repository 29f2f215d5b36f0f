"""A process's CPU time, precise enough for the benchmarks' short windows.

On Linux from its threads' ``schedstat`` (nanoseconds): the clock-tick counts behind
``psutil``'s ``cpu_times`` move in 10 ms steps, as much as an idle echo server or a
crowd of 20 joins spends in a smoke run's window, which then reads as 0. Threads that
already ended are not counted (the servers' and generators' threads live as long as
they do). Elsewhere, ``cpu_times``.
"""

from __future__ import annotations

from pathlib import Path

import psutil


def process_cpu_seconds(pid: int) -> float:
    try:
        total_ns = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            total_ns += int((task / "schedstat").read_text().split()[0])
        return total_ns / 1e9
    except (OSError, ValueError, IndexError):
        times = psutil.Process(pid).cpu_times()
        return float(times.user + times.system)
