"""Generator processes for the benchmarks that drive clients from their own processes
(bench/tournament.py, bench/soak.py): a script run with ``worker`` as its first argument,
talked to by lines on its stdin and stdout."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Worker:
    proc: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    pump: threading.Thread | None = None

    @classmethod
    def start(cls, script: Path, *argv: str) -> Worker:
        """``python3 SCRIPT worker ARGV…`` with pipes on stdin and stdout."""
        proc = subprocess.Popen(
            [sys.executable, str(Path(script).resolve()), "worker", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        worker = cls(proc)
        worker.pump = threading.Thread(target=worker._pump, daemon=True)
        worker.pump.start()
        return worker

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")

    def wait_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"worker: no {prefix!r} in {timeout:.0f} s") from None
                continue
            if line == "":  # end of its output: it exited
                self.proc.wait(10)
                raise RuntimeError(f"worker exited ({self.proc.returncode}) before {prefix!r}")
            if line.startswith(prefix):
                return line

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """Kill it if it still runs, and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        if self.pump is not None:
            self.pump.join(5)  # it reads stdout up to the end
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a broken pipe: it is gone anyway
                    pipe.close()


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``values`` (nearest rank), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
