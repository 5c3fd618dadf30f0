"""A process tree watched while it runs: each process's peak resident memory, by role (driver,
Spark JVM, Python worker daemon, Python worker), and the CPU time the tree used, by role too.

Sampled every 50 ms with psutil. CPU time is each process's own (user + system) as last seen, so
a process's last 50 ms and processes that live less than that are missed: a floor, a few percent
under the truth for runs of seconds. Processes outside the tree (the emulators) are not counted.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

#: The roles of a tree's processes: the command, Spark's JVM, the Python worker daemon the JVM
#: starts, and the workers it forks (the tasks).
KINDS = ("driver", "jvm", "worker daemon", "python worker")


class ProcessTree:
    """Samples a process tree every 50 ms: each process's peak resident memory, by role, and its
    CPU time as last seen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, tuple[str, int]] = {}
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ProcessTree:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, role: str) -> int:
        """The largest peak of any one process of ``role`` (driver, jvm, python worker)."""
        return max((rss for r, rss in self.peaks.values() if r == role), default=0)

    @property
    def cpu_seconds(self) -> float:
        """User + system CPU time of every process of the tree."""
        return sum(self.cpu.values())

    def cpu_by_kind(self) -> dict[str, float]:
        """User + system CPU time of the tree's processes, summed by role (KINDS)."""
        summed = dict.fromkeys(KINDS, 0.0)
        for pid, seconds in self.cpu.items():
            summed[self.peaks[pid][0]] += seconds  # each sampled process has a peak, with its role
        return summed

    def _sample(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        while not self._stop.is_set():
            try:
                family = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for process in family:
                try:
                    rss = process.memory_info().rss
                    role = _role(process, root)
                    times = process.cpu_times()
                except psutil.Error:
                    continue
                self.cpu[process.pid] = times.user + times.system
                if rss > self.peaks.get(process.pid, ("", -1))[1]:  # its first sample always
                    self.peaks[process.pid] = (role, rss)
            time.sleep(0.05)


def watched(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, ProcessTree, str]:
    """Run ``command`` in a session of its own, watched: its wall seconds, its tree, its stdout.
    A failure ends the benchmark with the command's stderr."""
    started = time.monotonic()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    with ProcessTree(process.pid) as tree:
        out, err = process.communicate()
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} ... failed ({process.returncode}): {err[-2000:]}")
    return seconds, tree, out


def _role(process: Any, root: Any) -> str:
    if process.pid == root.pid:
        return "driver"
    command = " ".join(process.cmdline())
    if "java" in process.name() or "org.apache.spark" in command:
        return "jvm"
    parent = process.parent()
    if parent is not None and parent.pid != root.pid and "java" in parent.name():
        return "worker daemon"  # the JVM's own child: the tasks are its forks
    return "python worker"
