"""`frontdesk serve --workers 2`, for real: two granian worker processes answer; /metrics counts
every worker's requests; the per-IP limit holds once across workers, not twice; exactly one worker
holds the scheduler lock and, when it is killed with SIGKILL, granian respawns it and a live worker
holds the lock again; a second crawl of a tenant is refused (409 job_running) whichever worker
gets it (issue 15, item 2)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from app.leader import FileLock
from app.workers import _limiting_v1, auto_workers, available_mb, own_cgroup, usable_cpus
from tests.server import ROOT, _stop, _wait_until_healthy, free_port
from tests.sitesrv import Fault, serve_site

ADMIN = "workers-admin-token"
PER_IP_BURST = 10
#: A fetch of the fixture site's pages takes this long, so a crawl runs while the test asks again.
PAGE_DELAY_S = 6.0


class Served:
    def __init__(self, base: str, process: subprocess.Popen, data: Path) -> None:
        self.base = base
        self.process = process
        self.data = data
        self.widget_key = ""
        self.seen: set[int] = set()

    def workers(self) -> list[int]:
        """The granian worker processes: the children of the serve process."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True,
                             text=True).stdout
        pids = sorted(int(pid) for pid in out.split())
        self.seen.update(pids)
        return pids

    def kill_leftovers(self) -> None:
        """Workers still alive after the server stopped (a worker outlives a supervisor that had to be
        killed): this server's own, recognised by their command line, killed by pid."""
        port = self.base.rsplit(":", 1)[1]
        for pid in self.seen:
            with contextlib.suppress(OSError):
                if f"--port\0{port}\0".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)

    def metrics_dir(self) -> Path:
        """PROMETHEUS_MULTIPROC_DIR as `frontdesk serve` made it: where the workers' metric files
        are mapped from (/proc/PID/maps)."""
        for pid in self.workers():
            for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
                if "/frontdesk-metrics-" in line and line.endswith(".db"):
                    return Path(line.split()[-1]).parent
        raise AssertionError("no worker maps a metrics file")

    def served_by(self, pid: int, route: str) -> float:
        """Requests to a route ending in `route` worker `pid` counted, read from its own metrics file."""
        path = self.metrics_dir() / f"counter_{pid}.db"
        if not path.exists():
            return 0.0
        return sum(sample.value for metric in MultiProcessCollector.merge([str(path)])
                   for sample in metric.samples
                   if sample.name == "frontdesk_http_requests_total" and sample.labels.get("route", "").endswith(route))

    def progress_outcome(self, path: str) -> dict:
        """Follow `path`/progress (SSE) to its `done` event; returns the job it reports."""
        with httpx.Client(timeout=60) as client, client.stream(
                "GET", f"{self.base}{path}/progress", headers={"Authorization": f"Bearer {ADMIN}"}) as response:
            name = None
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:") and name == "done":
                    return json.loads(line[5:])
        raise AssertionError("the progress stream ended without a done event")

    def admin(self, method: str, path: str, **kwargs) -> httpx.Response:
        # A new connection per request, so the kernel hands requests to either worker.
        return httpx.request(method, f"{self.base}{path}", headers={"Authorization": f"Bearer {ADMIN}"},
                             timeout=30, **kwargs)


def flock_holders(path: Path) -> list[int]:
    """Pids holding a flock on `path`, as the kernel lists them (/proc/locks)."""
    inode = os.stat(path).st_ino
    holders = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and fields[-3].split(":")[-1] == str(inode):
            holders.append(int(fields[-4]))
    return holders


def metric_total(base: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


@contextlib.contextmanager
def serve_workers(data: Path, workers: int, **settings: object) -> Iterator[Served]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update({"FRONTDESK_LOG_LEVEL": "warning", "FRONTDESK_ADMIN_TOKEN": ADMIN})
    env.update({f"FRONTDESK_{name.upper()}": str(value) for name, value in settings.items()})
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="frontdesk-workers-") as logs:
        log = Path(logs) / "server.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "app", "serve", "--workers", str(workers), "--host", "127.0.0.1",
                 "--port", str(port), "--data-dir", str(data)],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
            served = Served(base, process, data)
            try:
                _wait_until_healthy(base, process, log)
                served.workers()
                yield served
            finally:
                served.workers()
                _stop(process)
                served.kill_leftovers()


@pytest.fixture(scope="module")
def site():
    with serve_site() as server:
        server.files["/"] = b"<html><head><title>Slow shop</title></head><body><main><h1>Slow shop</h1>" \
                            b"<p>Opening hours are nine to five.</p></main></body></html>"
        server.files["/robots.txt"] = b"User-agent: *\nAllow: /\n"
        for path in ("/", "/robots.txt", "/sitemap.xml"):
            server.faults[path] = Fault(delay=PAGE_DELAY_S)
        yield server


@pytest.fixture(scope="module")
def served(tmp_path_factory, site):
    data = tmp_path_factory.mktemp("workers") / "data"
    data.mkdir()
    models = Path.home() / ".cache" / "frontdesk-tests"
    models.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(models, target_is_directory=True)
    with serve_workers(data, 2, scheduler=True, rate_per_ip=0.001, rate_burst_ip=PER_IP_BURST) as server:
        created = server.admin("POST", "/admin/tenants", json={"id": "shop", "site": site.url + "/",
                                                                "allow_private_network": True})
        assert created.status_code == 201, created.text
        server.widget_key = created.json()["widget_key"]
        yield server


@pytest.mark.slow
def test_two_workers_answer_and_metrics_count_both(served):
    workers = served.workers()
    assert len(workers) == 2
    before = metric_total(served.base, "frontdesk_http_requests_total", route="/healthz")
    sent = 0
    # Rounds until both workers have answered some: on a fast machine one worker could accept
    # every connection of a round of 40 before the other woke.
    for _ in range(10):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: httpx.get(f"{served.base}/healthz").status_code, range(40)))
        sent += 40
        assert statuses == [200] * 40
        if all(served.served_by(pid, "/healthz") > 0 for pid in workers):
            break
    # Every scrape, whichever worker answers it, sums both workers' counts.
    assert metric_total(served.base, "frontdesk_http_requests_total", route="/healthz") == before + sent
    assert metric_total(served.base, "frontdesk_http_requests_total", route="/healthz") == before + sent
    # ...and both workers did answer some of them.
    assert all(served.served_by(pid, "/healthz") > 0 for pid in workers)


@pytest.mark.slow
def test_the_per_ip_limit_holds_once_across_workers(served, site):
    body = {"key": served.widget_key, "question": "when are you open"}
    origin = site.url

    def ask(_: int) -> int:
        return httpx.post(f"{served.base}/v1/chat", json=body, headers={"Origin": origin}, timeout=60).status_code

    sent = 3 * PER_IP_BURST
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(ask, range(sent)))
    assert statuses.count(200) == PER_IP_BURST, statuses  # in memory per worker it was up to twice that
    assert statuses.count(429) == sent - PER_IP_BURST
    # Both workers took part (on a fast machine one can accept a whole round first): more
    # requests until each has, every one of them still over the limit.
    for _ in range(20):
        if all(served.served_by(pid, "/v1/chat") > 0 for pid in served.workers()):
            break
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            assert set(pool.map(ask, range(6))) == {429}
    assert all(served.served_by(pid, "/v1/chat") > 0 for pid in served.workers())


@pytest.mark.slow
def test_a_second_crawl_is_refused_whichever_worker_gets_it(served):
    started = served.admin("POST", "/admin/tenants/shop/crawl", json={})
    assert started.status_code == 202, started.text
    job = started.json()["id"]
    path = "/admin/tenants/shop/crawl"
    try:
        assert len(flock_holders(served.data / "tenants" / "shop.crawl.lock")) == 1
        refusals = [served.admin("POST", path, json={}) for _ in range(12)]
        while len(refusals) < 60 and not all(served.served_by(pid, "/crawl") > 0 for pid in served.workers()):
            refusals.append(served.admin("POST", path, json={}))  # until both workers have been asked
        assert {r.status_code for r in refusals} == {409}
        assert {r.json()["code"] for r in refusals} == {"job_running"}
        assert {r.json().get("job") for r in refusals} == {job}
        assert all(served.served_by(pid, "/crawl") > 0 for pid in served.workers())
        # Whichever worker is asked knows the job; one cancel, wherever it lands, stops it, and
        # every progress stream, on either worker, ends with the job's outcome.
        assert {(r["id"], r["status"]) for r in (served.admin("GET", path).json()["job"] for _ in range(8))} \
            == {(job, "running")}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            streams = [pool.submit(served.progress_outcome, path) for _ in range(4)]
            time.sleep(1.0)
            assert served.admin("DELETE", path).json() == {"cancelled": True}
            outcomes = [stream.result(timeout=PAGE_DELAY_S + 20) for stream in streams]
        assert {(o["id"], o["status"]) for o in outcomes} == {(job, "cancelled")}
    finally:
        served.admin("DELETE", path)
    deadline = time.monotonic() + PAGE_DELAY_S + 10
    while served.admin("GET", path).json()["job"]["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.3)
    assert {(r["id"], r["status"]) for r in (served.admin("GET", path).json()["job"] for _ in range(8))} \
        == {(job, "cancelled")}


@pytest.mark.slow
def test_a_crawl_in_a_worker_extracts_its_pages_in_a_page_process(tmp_path):
    """A granian worker's crawl spawns its page process (ingest/page_procs.py) and uses it to the end."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(Path.home() / ".cache" / "frontdesk-tests", target_is_directory=True)
    hostile = Path(__file__).parent / "sites" / "hostile"
    with serve_site(hostile, "http://127.0.0.1:8799") as pages, \
            serve_workers(data, 2, crawl_processes=1) as server:
        created = server.admin("POST", "/admin/tenants", json={"id": "bakery", "site": pages.url + "/",
                                                                "allow_private_network": True})
        assert created.status_code == 201, created.text
        assert server.admin("POST", "/admin/tenants/bakery/crawl", json={}).status_code == 202
        job = server.progress_outcome("/admin/tenants/bakery/crawl")
    summary = job["summary"]
    assert job["status"] == "done" and summary["failed"] == 0 and summary["fetched"] >= 3, job
    assert summary["page_processes"] == 1 and summary["page_process_fallbacks"] == 0, summary


@pytest.mark.slow
def test_one_worker_holds_the_scheduler_and_a_live_one_takes_over_after_kill_9(served):
    lock = served.data / "scheduler.lock"
    workers = served.workers()
    holders = flock_holders(lock)
    assert len(holders) == 1 and holders[0] in workers
    killed = holders[0]
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        holders = flock_holders(lock)
        if holders and holders[0] != killed and holders[0] in served.workers():
            break
        time.sleep(0.2)
    assert len(holders) == 1 and holders[0] != killed and holders[0] in served.workers()
    # granian (respawn_failed_workers) starts a new worker in place of the killed one.
    deadline = time.monotonic() + 30
    while len(served.workers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(served.workers()) == 2 and killed not in served.workers()
    # ...which answers once it has loaded the model (then the server also stops quickly: a worker
    # still starting finishes its start before it stops).
    respawned = (set(served.workers()) - set(workers)).pop()
    deadline = time.monotonic() + 40
    while served.served_by(respawned, "/healthz") == 0 and time.monotonic() < deadline:
        assert httpx.get(f"{served.base}/healthz").status_code == 200
        time.sleep(0.1)
    assert served.served_by(respawned, "/healthz") > 0


def test_a_systemd_units_limits_count_where_they_are_set(tmp_path):
    """Under systemd (`MemoryMax=` in a unit, `systemd-run -p CPUQuota=`) the limits are in the
    process's own cgroup below the root, or in a parent of it: both count."""
    root = tmp_path / "cgroup"
    scope = root / "system.slice" / "frontdesk.service"
    scope.mkdir(parents=True)
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("0::/system.slice/frontdesk.service\n")
    assert own_cgroup(root, self_cgroup) == scope
    self_cgroup.write_text("0::/\n")
    assert own_cgroup(root, self_cgroup) == root
    self_cgroup.write_text("4:memory:/elsewhere\n")  # no v2 line: the root
    assert own_cgroup(root, self_cgroup) == root
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemAvailable:  8192000 kB\n")
    (scope / "memory.max").write_text(f"{1024 ** 3}\n")
    (scope / "memory.current").write_text(f"{100 * 1024 ** 2}\n")
    assert available_mb(meminfo, scope, root) == 924
    assert auto_workers(cpus=2, memory_mb=available_mb(meminfo, scope, root)) == 1
    # A quota on the slice above holds for the unit inside it.
    (root / "system.slice" / "cpu.max").write_text("100000 100000\n")
    assert usable_cpus(scope, root) == 1
    (root / "system.slice" / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(scope, root) == usable_cpus(tmp_path / "none", root)


def test_cgroup_v1_limits_are_found_under_each_controllers_mount(tmp_path):
    """Older hosts and runtimes mount one hierarchy per controller: the process's directory under
    the mount and its parents count; a container sees its own cgroup at the mount itself."""
    root = tmp_path / "cgroup"
    scope = root / "memory" / "bench" / "run1"
    scope.mkdir(parents=True)
    (root / "cpu").mkdir()
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("4:memory:/bench/run1\n1:cpu,cpuacct:/docker/abc\n0::/\n")
    assert _limiting_v1("memory", root, self_cgroup) == [scope, scope.parent, root / "memory"]
    assert _limiting_v1("cpu", root, self_cgroup) == [root / "cpu"]  # not under the mount: the mount's
    assert _limiting_v1("pids", root, self_cgroup) == []


def test_the_default_worker_count_follows_cores_and_memory(tmp_path):
    assert auto_workers(cpus=2, memory_mb=16_000) == 2
    assert auto_workers(cpus=8, memory_mb=1_000) == 2  # (1000 - 256) // 350
    assert auto_workers(cpus=4, memory_mb=300) == 1  # never fewer than one
    meminfo, cgroup = tmp_path / "meminfo", tmp_path / "cgroup"
    cgroup.mkdir()
    meminfo.write_text("MemTotal:  2048000 kB\nMemFree:  100 kB\nMemAvailable:  1024000 kB\n")
    assert available_mb(meminfo, cgroup) == 1000
    assert available_mb(tmp_path / "missing", cgroup) is None
    # In a container limited to 1 GiB with 200 MB in use, the limit counts, not the host's memory.
    (cgroup / "memory.max").write_text(f"{1024 ** 3}\n")
    (cgroup / "memory.current").write_text(f"{200 * 1024 ** 2}\n")
    assert available_mb(meminfo, cgroup) == 824
    assert auto_workers(cpus=4, memory_mb=available_mb(meminfo, cgroup)) == 1
    (cgroup / "memory.max").write_text("max\n")
    assert available_mb(meminfo, cgroup) == 1000
    # --cpus 1 on a bigger host: one core's quota.
    (cgroup / "cpu.max").write_text("100000 100000\n")
    assert usable_cpus(cgroup) == 1
    (cgroup / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(cgroup) == len(os.sched_getaffinity(0))


def test_malloc_arenas_are_capped_in_a_fresh_process():
    """glibc accepts the cap (mallopt returns 1), and processes started later get it by environment."""
    code = ("import os; from app.workers import limit_malloc_arenas; "
            "print(limit_malloc_arenas(), os.environ['MALLOC_ARENA_MAX'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}).stdout.split()
    assert out == ["True", "2"]


def test_a_worker_that_only_answers_does_not_load_extruct():
    """extruct and what it brings (rdflib, html5lib, bs4, requests: ~17 MB a process) are imported
    when a page is read, not with the app (ingest/facts/read.py)."""
    code = ("import sys, app.asgi, app.answer; "
            "print(sorted(m for m in ('extruct', 'rdflib', 'html5lib', 'bs4', 'requests') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_file_lock_has_one_holder_until_released(tmp_path):
    first, second = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
    assert first.acquire() and not second.acquire()
    assert second.held_elsewhere() and not first.held_elsewhere()
    assert (tmp_path / "x.lock").read_text() == str(os.getpid())
    first.release()
    assert not second.held_elsewhere() and second.acquire()
    second.release()
