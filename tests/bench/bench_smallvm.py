"""The small VM the product promises (README.md, "Speed"): `frontdesk serve` confined to 1 CPU and
1 GiB crawls the fastapi fixture (politeness off, over 127.0.0.1) while a visitor asks a golden
question every second. Reports the crawl (pages, failed, seconds), the answers asked during it
(ok, errors, TTFT p50/p95), the memory the server's group peaked at, and whether the kernel had
to OOM-kill anything: the claim is "no OOM and no lost page" on a box this small.

The limit is a cgroup made for the run: cgroup v2 (`memory.max`, `memory.swap.max`, `cpu.max`)
or v1 (`memory.limit_in_bytes`, `cpu.cfs_quota_us`), whichever this machine mounts and lets us
write (root, or a delegated subtree). `systemd-run --scope -p MemoryMax=1G -p CPUQuota=100%`
does the same under systemd; without either, the run is reported as not confined and stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.bench.bench_answer import _one
from tests.bench.common import percentiles, print_table
from tests.conftest import FASTAPI, FASTAPI_ORIGIN
from tests.sitesrv import serve_site

#: The limits (BENCH_SMALLVM_MEMORY_MB and BENCH_SMALLVM_CPUS change them, to find how much is needed).
MEMORY_BYTES = int(float(os.environ.get("BENCH_SMALLVM_MEMORY_MB", "1024")) * 1024**2)
CPUS = float(os.environ.get("BENCH_SMALLVM_CPUS", "1"))
#: Texts per embedding run (FRONTDESK_EMBED_BATCH); empty = the product's default (one text per run).
EMBED_BATCH = os.environ.get("BENCH_SMALLVM_BATCH", "")
ADMIN = "smallvm-bench-token"
CGROUP = Path("/sys/fs/cgroup")


class Confinement:
    """A cgroup with a memory and a CPU limit: processes started with `enter` as their pre-exec
    hook run inside it (and so do their children)."""

    def __init__(self, memory_bytes: int, cpus: float) -> None:
        name = f"frontdesk-bench-{os.getpid()}"
        controllers = CGROUP / "cgroup.controllers"
        self.dirs: list[Path] = []
        if controllers.exists() and {"memory", "cpu"} <= set(controllers.read_text().split()):
            group = CGROUP / name
            group.mkdir()
            self.dirs = [group]
            (group / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (group / "memory.swap.max").write_text("0")
            (group / "cpu.max").write_text(f"{int(cpus * 100_000)} 100000")
            self.kind = "cgroup v2"
        elif (CGROUP / "memory").is_dir() and (CGROUP / "cpu").is_dir():
            memory, cpu = CGROUP / "memory" / name, CGROUP / "cpu" / name
            memory.mkdir()
            self.dirs = [memory]
            cpu.mkdir()
            self.dirs.append(cpu)
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # absent without swap accounting
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (cpu / "cpu.cfs_period_us").write_text("100000")
            (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * 100_000)))
            self.kind = "cgroup v1"
        else:
            raise PermissionError("no writable cgroup v1 or v2 hierarchy with the memory and cpu controllers")

    def enter(self) -> None:
        """Runs in the child between fork and exec: moves it into the group."""
        for group in self.dirs:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    def _memory_dir(self) -> Path:
        return self.dirs[0]

    def peak_mb(self) -> float:
        """The group's peak memory as the kernel counts it: processes and their page cache."""
        group = self._memory_dir()
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            if (group / name).exists():
                return int((group / name).read_text()) / 1024**2
        return float("nan")

    def oom_kills(self) -> int:
        group = self._memory_dir()
        for name in ("memory.events", "memory.oom_control"):
            if (group / name).exists():
                for line in (group / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return -1

    def limit_hits(self) -> int:
        """How often the group's usage reached its limit (the kernel reclaimed or stalled it)."""
        group = self._memory_dir()
        if (group / "memory.failcnt").exists():
            return int((group / "memory.failcnt").read_text())
        if (group / "memory.events").exists():
            events = dict(line.split() for line in (group / "memory.events").read_text().splitlines())
            return int(events.get("max", 0))
        return -1

    def rss_mb(self) -> float:
        """Resident memory of the group's processes now (the cgroup's own figure counts the page
        cache as well, which the kernel drops under pressure)."""
        total = 0
        for pid in (self.dirs[0] / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return total / 1024**2

    def close(self) -> None:
        for group in self.dirs:
            with contextlib.suppress(OSError):
                for pid in (group / "cgroup.procs").read_text().split():  # leftovers back to the root
                    (group.parent / "cgroup.procs").write_text(pid)
                group.rmdir()


@contextlib.contextmanager
def confined(memory_bytes: int = MEMORY_BYTES, cpus: float = CPUS) -> Iterator[Confinement]:
    group = Confinement(memory_bytes, cpus)
    try:
        yield group
    finally:
        group.close()


def _serve(data: Path, group: Confinement) -> tuple[subprocess.Popen, str, Path]:
    from tests.server import ROOT, free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update({"FRONTDESK_LOG_LEVEL": "warning", "FRONTDESK_ADMIN_TOKEN": ADMIN, "FRONTDESK_SCHEDULER": "false",
                "FRONTDESK_RATE_PER_IP": "1000", "FRONTDESK_RATE_BURST_IP": "1000"})
    if EMBED_BATCH:
        env["FRONTDESK_EMBED_BATCH"] = EMBED_BATCH
    log = Path(tempfile.mkstemp(prefix="frontdesk-smallvm-", suffix=".log")[1])
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data)],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            preexec_fn=group.enter)  # noqa: PLW1509 - only writes a pid to a file before exec
    return process, f"http://127.0.0.1:{port}", log


def _wait_ready(base: str, process: subprocess.Popen, log: Path, timeout: float = 300) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()[-4000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return time.perf_counter() - started
        time.sleep(0.1)
    raise RuntimeError(f"the server was not ready in {timeout:.0f} s:\n{log.read_text()[-4000:]}")


def _questions() -> list[str]:
    from app.eval.golden import load_golden

    items = load_golden(Path(__file__).resolve().parents[1] / "eval" / "fastapi.jsonl")
    return [item.q for item in items if item.expect_url]


def _visitor(base: str, key: str, origin: str, questions: list[str], stop: threading.Event) -> list[dict]:
    """One question a second until `stop`, each over the widget API (the answer cache sees new text)."""
    results: list[dict] = []

    async def loop() -> None:
        async with httpx.AsyncClient(timeout=120) as client:
            n = 0
            while not stop.is_set():
                tick = time.perf_counter()
                results.append(await _one(client, base, key, f"{questions[n % len(questions)]} (#{n})", origin))
                n += 1
                await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - tick)))

    asyncio.run(loop())
    return results


def _crawl_outcome(base: str, process: subprocess.Popen) -> dict:
    """Poll the crawl job until it is no longer running; {} when the server died first."""
    while process.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            job = httpx.get(f"{base}/admin/tenants/fastapi/crawl", headers={"Authorization": f"Bearer {ADMIN}"},
                            timeout=30).json()
            job = job.get("job") or {}
            if job.get("status") not in (None, "running"):
                return job
        time.sleep(1.0)
    return {}


def run(quick: bool = False) -> dict | None:
    rows: list[dict] = []
    try:
        group_context = confined()
        group = group_context.__enter__()
    except OSError as exc:
        print(f"\n(skipping smallvm: cannot confine a process here: {exc})")
        return None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            site = Path(tmp) / "fastapi"
            shutil.copytree(FASTAPI, site)
            data = Path(tmp) / "data"
            data.mkdir()
            models = Path(tempfile.gettempdir()) / "frontdesk-bench-models"
            models.mkdir(exist_ok=True)
            (data / "models").symlink_to(models, target_is_directory=True)
            with serve_site(site, FASTAPI_ORIGIN) as server:
                process, base, log = _serve(data, group)
                try:
                    ready_s = _wait_ready(base, process, log)
                    auth = {"Authorization": f"Bearer {ADMIN}"}
                    created = httpx.post(f"{base}/admin/tenants", headers=auth, timeout=60, json={
                        "id": "fastapi", "site": server.url + "/", "allow_private_network": True})
                    created.raise_for_status()
                    key = created.json()["widget_key"]
                    body = {"rate": 0, **({"max_pages": 60} if quick else {})}
                    started = time.perf_counter()
                    httpx.post(f"{base}/admin/tenants/fastapi/crawl", headers=auth, json=body,
                               timeout=60).raise_for_status()
                    stop = threading.Event()
                    answers: list[dict] = []
                    visitor = threading.Thread(target=lambda: answers.extend(
                        _visitor(base, key, server.url, _questions(), stop)), daemon=True)
                    visitor.start()
                    rss_peak = [0.0]

                    def sample() -> None:
                        while not stop.is_set():
                            rss_peak[0] = max(rss_peak[0], group.rss_mb())
                            time.sleep(0.25)

                    sampler = threading.Thread(target=sample, daemon=True)
                    sampler.start()
                    outcome = _crawl_outcome(base, process)
                    crawl_s = time.perf_counter() - started
                    stop.set()
                    sampler.join()
                    visitor.join(timeout=180)
                    alive = process.poll() is None
                    stats = httpx.get(f"{base}/admin/tenants/fastapi/stats", headers=auth,
                                      timeout=60).json() if alive else {}
                finally:
                    from tests.server import _stop

                    _stop(process)
                    server_log = log.read_text()[-2000:]
                    log.unlink(missing_ok=True)
        summary = outcome.get("summary") or outcome
        ok = [a for a in answers if a.get("status") == 200 and not a.get("error")]
        ttft = percentiles([a["client_ttft_ms"] for a in ok]) if ok else {"p50": None, "p95": None}
        rows.append({
            "limit": f"{CPUS:g} CPU, {MEMORY_BYTES // 1024**2} MiB ({group.kind}), batch {EMBED_BATCH or 'default'}",
            "ready_s": round(ready_s, 1), "crawl_status": outcome.get("status", "server died"),
            "pages_found": summary.get("pages_found"), "fetched": summary.get("fetched"),
            "failed": summary.get("failed"), "errors": summary.get("errors"),
            # Lost: failed for any reason but the site's own answer that the page is not there.
            "lost": sum(n for reason, n in (summary.get("errors") or {}).items()
                        if reason not in ("http_404", "http_410")) if summary else None,
            "pages_active": stats.get("pages"),
            "chunks_pending": stats.get("chunks_pending"),
            "crawl_s": round(crawl_s, 1), "asked": len(answers), "answered_ok": len(ok),
            "answer_errors": len(answers) - len(ok), "ttft_p50_ms": ttft["p50"], "ttft_p95_ms": ttft["p95"],
            "rss_peak_mb": round(rss_peak[0], 0), "group_peak_mb": round(group.peak_mb(), 0),
            "limit_hits": group.limit_hits(), "oom_kills": group.oom_kills(),
            "server_alive": alive,
        })
    finally:
        group_context.__exit__(None, None, None)
    columns = ["limit", "ready_s", "crawl_status", "pages_found", "fetched", "failed", "lost", "pages_active",
               "chunks_pending", "crawl_s", "asked", "answered_ok", "answer_errors", "ttft_p50_ms", "ttft_p95_ms",
               "rss_peak_mb", "group_peak_mb", "limit_hits", "oom_kills", "server_alive"]
    print_table("The small VM: `frontdesk serve` in 1 CPU / 1 GiB crawls the fastapi fixture while a visitor "
                "asks a question a second", rows, columns)
    if rows and (rows[0]["oom_kills"] or not rows[0]["server_alive"]):
        print(server_log, file=sys.stderr)
    return {"_name": "smallvm", "confined": True, "rows": rows}
