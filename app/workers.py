"""How many worker processes `frontdesk serve` runs: from FRONTDESK_WORKERS / `--workers`, else one
per core as far as the memory available allows at ~350 MB each (the model and tenants loaded once
per worker)."""

from __future__ import annotations

import os
from pathlib import Path

#: What one worker takes with the model loaded, a 10k-chunk tenant open and answering (measured,
#: README "Workers"), rounded up.
WORKER_MB = 350
#: Left to the rest of the machine when sizing from memory.
HEADROOM_MB = 256


def available_mb(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in MB, or None where /proc/meminfo does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def auto_workers(cpus: int | None = None, memory_mb: int | None = None) -> int:
    """min(cores, what memory allows at WORKER_MB each after HEADROOM_MB), at least 1."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    memory_mb = memory_mb if memory_mb is not None else available_mb()
    by_memory = cpus if memory_mb is None else (memory_mb - HEADROOM_MB) // WORKER_MB
    return max(1, min(cpus, by_memory))


def resolve_workers(requested: int | None) -> int:
    """`requested` if positive, else the automatic choice."""
    return requested if requested is not None and requested > 0 else auto_workers()
