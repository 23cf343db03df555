"""How the benchmarks measure memory, in one place so that docs/performance.md's figures
are read alike: a process's own peak resident memory, and the peaks of a process tree
sampled while it runs."""

from __future__ import annotations

import resource
import threading
from pathlib import Path

MIB = 2 ** 20


def own_peak_mib(reset: bool = False) -> float:
    """This process's own peak resident memory in MiB (Linux: VmHWM); with `reset`, the
    peak then starts again from the current size (`/proc/self/clear_refs`), so the next
    call gives the stretch's in between. Not `ru_maxrss` (the fallback without /proc),
    which keeps across exec the peak of the process that started this one: a benchmark's
    parent that generated the input files, whose peak grows with them."""
    try:
        status = Path("/proc/self/status").read_text()
        kib = int(status.split("VmHWM:")[1].split()[0])
    except (OSError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    return kib / 1024


class TreeSampler:
    """While the block runs, samples every `period` seconds the resident memory of
    process `pid` and, summed, of all its descendants (Spark's JVM); `own_mib` and
    `children_mib` hold the peaks. A child that exits between being listed and read
    counts nothing in that sample; the sampling ends when `pid` does."""

    def __init__(self, pid: int, period: float) -> None:
        self.pid, self.period = pid, period
        self.own_mib = self.children_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        import psutil

        try:
            me = psutil.Process(self.pid)
            while True:
                own, children = me.memory_info().rss, 0
                for child in me.children(recursive=True):
                    try:
                        children += child.memory_info().rss
                    except psutil.Error:
                        pass
                self.own_mib = max(self.own_mib, own / MIB)
                self.children_mib = max(self.children_mib, children / MIB)
                if self._stop.wait(self.period):
                    return
        except psutil.Error:  # the process ended
            return
