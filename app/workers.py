"""How many worker processes `frontdesk serve` runs: from FRONTDESK_WORKERS / `--workers`, else one
per core as far as the memory available allows at ~350 MB each (the model and tenants are loaded
once per worker). A cgroup's CPU quota and memory limit count, not the host's: a container's, a
systemd unit's and their parents', on cgroup v2 or v1.
And how their memory is kept in bounds: `limit_malloc_arenas`, `release_free_memory`; and their CPU:
`single_threaded_blas`."""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import platform
from pathlib import Path

#: What one worker takes with the model loaded and a 10k-chunk tenant open (~280–300 MB measured
#: idle, README "Workers"), rounded up.
WORKER_MB = 350
#: Left to the rest of the machine when sizing from memory.
HEADROOM_MB = 256

CGROUP = Path("/sys/fs/cgroup")

#: glibc's malloc arenas per process. By default glibc gives threads up to 8 per core, each a 64 MB
#: heap that keeps what its threads freed: a crawling server (fetchers, extraction and embedding
#: threads, the answer path's thread pool) held ~600 MB of such heaps with ~300 MB in use and was
#: OOM-killed in a 1 GiB cgroup (`python -m tests.bench smallvm`). Two arenas share the freed
#: memory; the threads that contend for them mostly run outside the GIL in C code anyway.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas for this process and the processes it forks or starts (the
    environment variable for those that exec). False where the C library is not glibc."""
    os.environ.setdefault("MALLOC_ARENA_MAX", str(arenas))
    if platform.libc_ver()[0] != "glibc":
        return False
    with contextlib.suppress(OSError, AttributeError):
        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, arenas))
    return False


def single_threaded_blas() -> bool:
    """Run numpy's BLAS (OpenBLAS) on the calling thread only, in this process: each server worker
    does at start (app/asgi.py). A search's matrix products are a few milliseconds; OpenBLAS's
    helper threads then spin-wait for more work and took ~16 of the ~37 ms of CPU a question cost
    on two cores (10k-chunk tenant), competing with the next question's search (issue 15). The
    MiniLM embedding has its own thread pool (onnxruntime's), untouched; the multilingual model,
    pure numpy, embeds ~15% slower in a worker. The CLI's own commands (`crawl`, `index`, `eval`)
    keep numpy's threads. True when a BLAS library was limited."""
    import numpy  # noqa: F401  (loads OpenBLAS: threadpoolctl limits only libraries already loaded)

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a broken install
        return False
    return bool(threadpool_limits(limits=1, user_api="blas").get_original_num_threads().get("blas"))


def release_free_memory() -> bool:
    """Give the pages glibc's malloc holds free back to the system (`malloc_trim(0)`: every arena,
    from the middle of a heap too, not only its top). Loading the model, the language profiles
    and a tenant's index frees what it parsed and copied on the way, and glibc keeps those pages:
    one call after warming took an answering worker's idle RSS (10k-chunk tenant, 30 questions
    later) from ~231 to ~215 MB. Costs milliseconds; call it where loading ends, not per request.
    True when memory went back; False when none did or the C library is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return False
    with contextlib.suppress(OSError, AttributeError):
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def own_cgroup(root: Path = CGROUP, self_cgroup: Path = Path("/proc/self/cgroup")) -> Path:
    """This process's cgroup (v2) directory. Inside a container it is the root (the container's
    own namespace); under systemd (a unit's `MemoryMax=`, `systemd-run -p CPUQuota=`) it is the
    unit's directory below the root, where those limits are."""
    for line in (_read(self_cgroup) or "").splitlines():
        if line.startswith("0::"):
            path = root / line[3:].strip().lstrip("/")
            if path.is_dir():
                return path
    return root


def _limiting(cgroup: Path | None, root: Path) -> list[Path]:
    """The cgroups whose limits apply: `cgroup` (default: this process's) and each parent up to
    `root` — a parent's limit holds for everything below it."""
    start = cgroup if cgroup is not None else own_cgroup(root)
    chain = [start]
    while chain[-1] != root and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return chain


def _limiting_v1(controller: str, root: Path = CGROUP,
                 self_cgroup: Path = Path("/proc/self/cgroup")) -> list[Path]:
    """The same for a cgroup v1 hierarchy (older hosts and container runtimes): this process's
    directory under the controller's mount and each parent up to the mount; a container sees its
    own cgroup at the mount itself."""
    mount = root / controller
    for line in (_read(self_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            path = mount / parts[2].strip().lstrip("/")
            return _limiting(path if path.is_dir() else mount, mount)
    return []


def available_mb(meminfo: Path = Path("/proc/meminfo"), cgroup: Path | None = None, root: Path = CGROUP) -> int | None:
    """MemAvailable in MB, or what a cgroup (v2 or v1) limit leaves if that is less; None where
    neither says."""
    found: list[int] = []
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            found.append(int(line.split()[1]) // 1024)
    for group in _limiting(cgroup, root):
        limit, current = _read(group / "memory.max"), _read(group / "memory.current")
        if limit and limit != "max" and limit.isdigit():
            used = int(current) if current and current.isdigit() else 0
            found.append((int(limit) - used) // (1024 * 1024))
    if cgroup is None:
        for group in _limiting_v1("memory", root):
            limit, current = _read(group / "memory.limit_in_bytes"), _read(group / "memory.usage_in_bytes")
            if limit and limit.isdigit() and int(limit) < 2 ** 62:  # "no limit" is a huge number
                used = int(current) if current and current.isdigit() else 0
                found.append((int(limit) - used) // (1024 * 1024))
    return min(found) if found else None


def usable_cpus(cgroup: Path | None = None, root: Path = CGROUP) -> int:
    """Cores this process may run on, capped by a cgroup's (v2 or v1) CPU quota."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    for group in _limiting(cgroup, root):
        quota = (_read(group / "cpu.max") or "max").split()
        if len(quota) == 2 and quota[0] != "max" and quota[0].isdigit() and quota[1].isdigit() and int(quota[1]):
            cpus = min(cpus, max(1, math.ceil(int(quota[0]) / int(quota[1]))))
    if cgroup is None:
        for group in _limiting_v1("cpu", root):
            quota_us, period_us = _read(group / "cpu.cfs_quota_us"), _read(group / "cpu.cfs_period_us")
            if quota_us and quota_us.isdigit() and period_us and period_us.isdigit() and int(period_us):
                cpus = min(cpus, max(1, math.ceil(int(quota_us) / int(period_us))))
    return max(1, cpus)


def auto_workers(cpus: int | None = None, memory_mb: int | None = None) -> int:
    """min(cores, what memory allows at WORKER_MB each after HEADROOM_MB), at least 1."""
    cpus = cpus if cpus is not None else usable_cpus()
    memory_mb = memory_mb if memory_mb is not None else available_mb()
    by_memory = cpus if memory_mb is None else (memory_mb - HEADROOM_MB) // WORKER_MB
    return max(1, min(cpus, by_memory))


def resolve_crawl_processes(requested: int) -> int:
    """`requested` if 0 or more, else one fewer than the usable cores, at most 2 (see
    Settings.crawl_processes: past two, the process that fetches and writes is the limit)."""
    return requested if requested >= 0 else max(0, min(2, usable_cpus() - 1))


def resolve_workers(requested: int | None) -> int:
    """`requested` if positive, else the automatic choice."""
    return requested if requested is not None and requested > 0 else auto_workers()
