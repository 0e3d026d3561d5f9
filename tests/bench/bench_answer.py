"""The hot path under load (README.md, "Speed"): time to first token and total time, server side and
as the client sees it, for the extractive answerer on a 10k-chunk tenant, with 1, 10 and 50
concurrent streams over loopback; RSS of the server process idle and under load; the first answer
after `frontdesk serve` starts (BENCH_BASELINE=<a checkout> adds an older revision's, interleaved).

`--workers N` instead serves the tenant with `frontdesk serve --workers N` and reports, at 10, 50 and 200
concurrent streams, TTFT p50/p95/p99, answers/s, errors and the RSS of every server process
(BENCH_ANSWER_THREADS=N, here and without `--workers`, serves with FRONTDESK_ANSWER_THREADS=N:
retrieval in N threads).
`--nodes N` serves it from PostgreSQL by one and by N `frontdesk serve` processes on one database
(and from its SQLite file beside them), at 1, 10 and 50 concurrent streams.

The load comes from tests/bench/loadgen.py (raw HTTP/1.1, one keep-alive connection a stream), on
the same cores as the server; each row gives its CPU per request (`client_cpu_ms`).

The tenant is the pypug fixture (real text, real questions) topped up to 10,000 chunks with
synthetic passages; the answer cache is off so every request runs the whole pipeline.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from app.context import Context
from app.settings import Settings
from ingest.folder import index_folder
from tests.bench import loadgen
from tests.bench.bench_store import real_texts
from tests.bench.common import percentiles, print_table
from tests.conftest import PYPUG, PYPUG_ORIGIN
from tests.server import run_server
from tests.test_search import PYPUG_QUESTIONS

TARGET_CHUNKS = 10_000


def _top_up(tenant, embedder, target: int) -> int:
    """Add synthetic pages until the tenant holds `target` chunks (vectors: noisy mixtures of
    real passage embeddings, text: shuffled real words), written straight to the store."""
    from ingest.chunk import chunk_uid, content_hash
    from store.pages import ChunkRow, PageWrite, write_page

    have = tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
    texts = real_texts(200)
    base = embedder.embed(texts)
    rng = np.random.default_rng(3)
    words = " ".join(texts).split()
    page = 0
    while have < target:
        with tenant.write() as conn:
            for _ in range(50):
                rows = []
                for position in range(10):
                    text = " ".join(rng.choice(words, size=160))
                    mix = base[rng.integers(len(base), size=2)]
                    vector = mix[0] * 0.7 + mix[1] * 0.3 + rng.normal(scale=0.02, size=base.shape[1])
                    vector = (vector / np.linalg.norm(vector)).astype(np.float32)
                    rows.append(ChunkRow(hash=content_hash("prose", text), kind="prose", lang="en", text=text,
                                         heading_path=("Synthetic",), position=position,
                                         uid=chunk_uid(f"s{page}", position, text), tokens=200, vector=vector.tobytes()))
                write_page(conn, PageWrite(url=f"{PYPUG_ORIGIN}/synthetic/{page}/", title=f"Synthetic {page}",
                                           content_hash=str(page), chunks=rows))
                page += 1
                have += 10
            tenant.bump_generation(conn)
    with tenant.write() as conn:  # as a crawl leaves its tenant
        tenant.store.search.compact_text_index(conn)
    return have


async def _one(client: httpx.AsyncClient, base: str, key: str, question: str,
               origin: str = PYPUG_ORIGIN) -> dict:
    """One question over the widget API, timed from outside (an error event or a dropped
    connection counts as an error)."""
    started = time.perf_counter()
    first = None
    server = {}
    try:
        async with client.stream("POST", f"{base}/v1/chat", json={"key": key, "question": question},
                                 headers={"Origin": origin}) as response:
            if response.status_code != 200:
                await response.aread()
                return {"status": response.status_code}
            name = None
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    if name == "token" and first is None:
                        first = time.perf_counter()
                    elif name == "done":
                        server = json.loads(line[5:])
                    elif name == "error":
                        return {"status": 200, "error": True}
    except httpx.HTTPError as exc:
        return {"status": 0, "error": type(exc).__name__}
    end = time.perf_counter()
    return {"status": 200, "client_ttft_ms": ((first or end) - started) * 1000, "client_total_ms": (end - started) * 1000,
            "server_ttft_ms": server.get("ttft_ms"), "server_total_ms": server.get("latency_ms")}


def _server_rss_mb(base_pid: int) -> float:
    """RSS of the granian worker(s) serving the app: the children of the serve process."""
    total = 0
    out = subprocess.run(["ps", "-o", "pid=,rss=", "--ppid", str(base_pid)], capture_output=True, text=True).stdout
    rows = [line.split() for line in out.strip().splitlines() if line.strip()]
    for _pid, rss in rows:
        total += int(rss)
    own = subprocess.run(["ps", "-o", "rss=", "-p", str(base_pid)], capture_output=True, text=True).stdout.strip()
    return (total or int(own or 0)) / 1024


async def _load(base: str | list[str], key: str, concurrency: int, requests: int,
                questions: list[str]) -> list[dict]:
    """`requests` questions from `concurrency` streams at once (tests/bench/loadgen.py); with
    several base URLs (nodes), the requests go round robin to them, as a load balancer would send
    them."""
    bases = [base] if isinstance(base, str) else base
    return await loadgen.load(bases, key, PYPUG_ORIGIN, concurrency, requests, questions)


def _answer_threads() -> dict[str, str]:
    """FRONTDESK_ANSWER_THREADS for the server, when BENCH_ANSWER_THREADS asks for it."""
    threads = os.environ.get("BENCH_ANSWER_THREADS", "")
    return {"answer_threads": threads} if threads else {}


def _timed_load(base: str | list[str], key: str, concurrency: int, requests: int,
                questions: list[str]) -> tuple[list[dict], float, float]:
    """`_load` run to its end: (results, wall seconds, the driver's own CPU ms per request)."""
    before, started = os.times(), time.perf_counter()
    results = asyncio.run(_load(base, key, concurrency, requests, questions))
    wall, after = time.perf_counter() - started, os.times()
    cpu_ms = (after.user + after.system - before.user - before.system) * 1000 / max(1, len(results))
    return results, wall, round(cpu_ms, 2)


def _start(data: Path, root: Path, workers: int | None = None,
           **settings: object) -> tuple[subprocess.Popen, str, Path]:
    """`frontdesk serve` from the checkout at `root` on a free port, not waited for (the caller
    times its start)."""
    from tests.server import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update({"FRONTDESK_SCHEDULER": "false", "FRONTDESK_LOG_LEVEL": "warning", "FRONTDESK_WORKERS": "1"})
    env.update({f"FRONTDESK_{name.upper()}": str(value) for name, value in settings.items()})
    log = Path(tempfile.mkstemp(prefix="frontdesk-bench-", suffix=".log")[1])
    with open(log, "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port),
                                    "--data-dir", str(data), *(["--workers", str(workers)] if workers else [])],
                                   cwd=root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=output, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}", log


async def _ask_in_turn(base: str, key: str, questions: list[str]) -> list[dict]:
    async with httpx.AsyncClient(timeout=120) as client:
        return [await _one(client, base, key, q) for q in questions]


def first_answers(data: Path, key: str, questions: list[str], starts: int, root: Path | None = None) -> list[dict]:
    """Start the server `starts` times; each time poll /readyz until it says ready, then ask one
    question at once (the first answer after start) and a few more (warm), one at a time, and
    time them from outside. `root`: the checkout to serve (default: this one)."""
    from tests.server import ROOT, _stop

    rows = []
    for n in range(starts):
        process, base, log = _start(data, root or ROOT, cache_entries=0, rate_per_ip=100000, rate_burst_ip=100000,
                                    rate_per_tenant=100000)
        started = time.perf_counter()
        try:
            with httpx.Client(timeout=2.0) as client:
                while True:
                    if process.poll() is not None:
                        raise RuntimeError(f"the server exited:\n{log.read_text()[-4000:]}")
                    try:
                        if client.get(f"{base}/readyz").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    time.sleep(0.02)
            ready_s = time.perf_counter() - started

            picked = [questions[(n * 7 + i) % len(questions)] for i in range(6)]
            results = asyncio.run(_ask_in_turn(base, key, picked))
        finally:
            _stop(process)
            log.unlink(missing_ok=True)
        first, warm = results[0], results[1:]
        rows.append({"start": n + 1, "ready_s": round(ready_s, 2), "status": first["status"],
                     "first_client_ttft_ms": round(first.get("client_ttft_ms", float("nan")), 1),
                     "first_server_ttft_ms": first.get("server_ttft_ms"),
                     "next_client_ttft_ms": round(float(np.median([r.get("client_ttft_ms", float("nan"))
                                                                   for r in warm])), 1)})
    return rows


def _serve_pid(port_url: str) -> int | None:
    port = port_url.rsplit(":", 1)[1]
    out = subprocess.run(["pgrep", "-f", f"serve --host 127.0.0.1 --port {port}"], capture_output=True, text=True).stdout
    pids = [int(p) for p in out.split()]
    return min(pids) if pids else None


def _tenant(data: Path) -> tuple[int, str]:
    """The pypug tenant topped up to TARGET_CHUNKS in `data`: (chunks, widget key)."""
    context = Context(Settings(data_dir=str(data)))
    tenant, _ = context.create_tenant("pypug", PYPUG_ORIGIN + "/")
    embedder = context.tenant_embedder(tenant)
    index_folder(tenant, embedder, PYPUG, PYPUG_ORIGIN + "/")
    chunks = _top_up(tenant, embedder, TARGET_CHUNKS)
    key = tenant.widget_key
    context.close()
    return chunks, key


def _process_rss_mb(serve_pid: int) -> dict[str, float]:
    """RSS of the serve process (granian's supervisor) and of each worker, in MB."""
    out = subprocess.run(["ps", "-o", "pid=,rss=", "--ppid", str(serve_pid)], capture_output=True, text=True).stdout
    rows = {f"worker {pid}": int(rss) / 1024 for pid, rss in (line.split() for line in out.strip().splitlines())}
    own = subprocess.run(["ps", "-o", "rss=", "-p", str(serve_pid)], capture_output=True, text=True).stdout.strip()
    return {"supervisor": int(own or 0) / 1024, **rows}


def run_workers(workers: int, quick: bool = False) -> dict:
    """The answer load at 10, 50 and 200 concurrent streams against `frontdesk serve --workers N`."""
    from tests.server import ROOT, _stop

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        chunks, key = _tenant(data)
        questions = [q for q, _ in PYPUG_QUESTIONS]
        process, base, log = _start(data, ROOT, workers=workers, cache_entries=0, rate_per_ip=100000,
                                    rate_burst_ip=100000, rate_per_tenant=100000, **_answer_threads())
        try:
            ready_in_a_row = 0
            deadline = time.monotonic() + 180
            while ready_in_a_row < 4 * workers:  # each worker answers /readyz ready (new connections)
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not get ready:\n{log.read_text()[-4000:]}")
                try:
                    ok = httpx.get(f"{base}/readyz", timeout=5.0).status_code == 200
                except httpx.TransportError:
                    ok = False
                ready_in_a_row = ready_in_a_row + 1 if ok else 0
                time.sleep(0.05)
            asyncio.run(_load(base, key, 2 * workers, 10 * workers, questions))  # warm every worker
            idle = _process_rss_mb(process.pid)
            peak = dict(idle)
            for concurrency in (10, 50, 200):
                requests = {10: 100, 50: 200, 200: 400}[concurrency] // (3 if quick else 1)
                results, wall, client_cpu = _timed_load(base, key, concurrency, requests, questions)
                now = _process_rss_mb(process.pid)
                peak = {name: max(peak.get(name, 0.0), mb) for name, mb in now.items()}
                ok = [r for r in results if r["status"] == 200 and not r.get("error")]
                row = {"workers": workers, "concurrency": concurrency, "requests": len(results), "ok": len(ok),
                       "errors": len(results) - len(ok), "answers_per_s": round(len(ok) / wall, 1),
                       "client_cpu_ms": client_cpu}
                for key_name in ("client_ttft_ms", "server_ttft_ms", "client_total_ms"):
                    stats = percentiles([r[key_name] for r in ok if r.get(key_name) is not None])
                    row.update({f"{key_name}_p50": stats["p50"], f"{key_name}_p95": stats["p95"],
                                f"{key_name}_p99": stats["p99"]})
                rows.append(row)
        finally:
            _stop(process)
            log.unlink(missing_ok=True)
    print_table(f"Answer latency with `frontdesk serve --workers {workers}`, extractive answerer, {chunks}-chunk "
                "tenant, cache off, loopback", rows,
                ["workers", "concurrency", "requests", "ok", "errors", "answers_per_s", "client_ttft_ms_p50",
                 "client_ttft_ms_p95", "client_ttft_ms_p99", "server_ttft_ms_p50", "server_ttft_ms_p95",
                 "client_total_ms_p95", "client_cpu_ms"])
    rss_rows = [{"process": name, "idle_mb": round(mb, 0), "peak_mb": round(peak.get(name, mb), 0)}
                for name, mb in idle.items()]
    print_table("RSS per process (idle after warm-up; peak under load)", rss_rows, ["process", "idle_mb", "peak_mb"])
    return {"_name": f"answer-workers-{workers}", "workers": workers, "chunks": chunks, "rows": rows,
            "rss": rss_rows, "cpus": os.cpu_count()}


def _wait_ready(process: subprocess.Popen, base: str, log: Path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not get ready:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)


def _sweep(bases: list[str], key: str, questions: list[str], quick: bool, label: dict) -> list[dict]:
    rows = []
    for concurrency in (1, 10, 50):
        requests = {1: 30, 10: 100, 50: 200}[concurrency] // (3 if quick else 1)
        results, wall, client_cpu = _timed_load(bases, key, concurrency, requests, questions)
        ok = [r for r in results if r["status"] == 200 and not r.get("error")]
        row = {**label, "concurrency": concurrency, "requests": len(results), "ok": len(ok),
               "errors": len(results) - len(ok), "answers_per_s": round(len(ok) / wall, 1),
               "client_cpu_ms": client_cpu}
        for key_name in ("client_ttft_ms", "server_ttft_ms"):
            stats = percentiles([r[key_name] for r in ok if r.get(key_name) is not None])
            row.update({f"{key_name}_p50": stats["p50"], f"{key_name}_p95": stats["p95"]})
        rows.append(row)
    return rows


def run_nodes(nodes: int, quick: bool = False) -> dict:
    """The answer load at 1/10/50 concurrent streams on the PostgreSQL backend, served by one and
    by `nodes` `frontdesk serve` processes (one worker each, their own data dirs) on one database,
    requests spread round robin; the same tenant on its SQLite file, one process, beside them."""
    import contextlib

    from store.pg.tenants import connected
    from store.pg.transfer import import_postgres
    from tests.pg import postgres_server
    from tests.server import ROOT, _stop

    rows: list[dict] = []
    url = os.environ.get("FRONTDESK_DATABASE_URL", "").strip()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        data = tmp / "data"
        chunks, key = _tenant(data)  # closed: its WAL folded into the file, which is imported below
        if not url:
            url = stack.enter_context(postgres_server())
        tenants = stack.enter_context(connected(url))
        if tenants.exists("pypug"):
            tenants.delete("pypug")
        import_postgres(tenants, "pypug", data / "tenants" / "pypug.db")
        questions = [q for q, _ in PYPUG_QUESTIONS]
        common = {"cache_entries": 0, "rate_per_ip": 100000, "rate_burst_ip": 100000, "rate_per_tenant": 100000}
        for backend, count in (("sqlite", 1), ("postgres", 1), ("postgres", nodes)):
            started = []
            try:
                for n in range(count):
                    node_data = tmp / f"{backend}-{count}-{n}"
                    if backend == "sqlite":
                        node_data = data
                    else:
                        node_data.mkdir(exist_ok=True)
                        models = data / "models"
                        if models.exists() and not (node_data / "models").exists():
                            (node_data / "models").symlink_to(models.resolve(), target_is_directory=True)
                    extra = {"database_url": url, "database_pool_size": 8} if backend == "postgres" else {}
                    started.append(_start(node_data, ROOT, **common, **extra))
                for process, base, log in started:
                    _wait_ready(process, base, log)
                bases = [base for _, base, _ in started]
                asyncio.run(_load(bases, key, 2 * count, 10 * count, questions))  # warm every node
                rows += _sweep(bases, key, questions, quick, {"backend": backend, "nodes": count})
            finally:
                for process, _, log in started:
                    _stop(process)
                    log.unlink(missing_ok=True)
    print_table(f"Answer latency on one database: nodes = `frontdesk serve` processes (one worker each), "
                f"extractive answerer, {chunks}-chunk tenant, cache off, loopback, {os.cpu_count()} cores", rows,
                ["backend", "nodes", "concurrency", "requests", "ok", "errors", "answers_per_s", "client_ttft_ms_p50",
                 "client_ttft_ms_p95", "server_ttft_ms_p50", "server_ttft_ms_p95"])
    return {"_name": f"answer-nodes-{nodes}", "nodes": nodes, "chunks": chunks, "rows": rows, "cpus": os.cpu_count()}


def run(quick: bool = False, workers: int | None = None, nodes: int | None = None) -> dict:
    if nodes is not None:
        return run_nodes(nodes, quick)
    if workers is not None:
        return run_workers(workers, quick)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        chunks, key = _tenant(data)
        questions = [q for q, _ in PYPUG_QUESTIONS]
        # The first answer after `frontdesk serve` starts, against the checkout named by
        # BENCH_BASELINE (e.g. a `git worktree` of an older revision), interleaved, when given.
        baseline = os.environ.get("BENCH_BASELINE")
        starts = 3 if quick else 5
        first_rows = []
        for n in range(starts):
            variants = [("this checkout", None)] + ([("baseline", Path(baseline))] if baseline else [])
            for name, root in (variants if n % 2 == 0 else variants[::-1]):
                row = first_answers(data, key, questions, 1, root=root)[0]
                first_rows.append({**row, "start": n + 1, "code": name})
        first_summary = []
        for name in dict.fromkeys(r["code"] for r in first_rows):
            mine = [r for r in first_rows if r["code"] == name]
            first_summary.append({"code": name, "starts": len(mine),
                                  **{f"median_{k}": round(float(np.median([r[k] for r in mine])), 1)
                                     for k in ("ready_s", "first_client_ttft_ms", "next_client_ttft_ms")}})
        with run_server(data, cache_entries=0, rate_per_ip=100000, rate_burst_ip=100000,
                        rate_per_tenant=100000, **_answer_threads()) as base:
            pid = _serve_pid(base)
            asyncio.run(_load(base, key, 1, 5, questions))  # warm up
            idle_rss = _server_rss_mb(pid) if pid else float("nan")
            peak_rss = idle_rss
            for concurrency in (1, 10, 50):
                requests = {1: 30, 10: 100, 50: 200}[concurrency] // (3 if quick else 1)
                results, wall, client_cpu = _timed_load(base, key, concurrency, requests, questions)
                if pid:
                    peak_rss = max(peak_rss, _server_rss_mb(pid))
                ok = [r for r in results if r["status"] == 200]
                row = {"concurrency": concurrency, "requests": len(results), "ok": len(ok),
                       "answers_per_s": round(len(ok) / wall, 1), "client_cpu_ms": client_cpu}
                for key_name in ("server_ttft_ms", "client_ttft_ms", "server_total_ms"):
                    stats = percentiles([r[key_name] for r in ok if r.get(key_name) is not None])
                    row.update({f"{key_name}_p50": stats["p50"], f"{key_name}_p95": stats["p95"],
                                f"{key_name}_p99": stats["p99"]})
                rows.append(row)
            after_rss = _server_rss_mb(pid) if pid else float("nan")
    print_table(f"Answer latency, extractive answerer, {chunks}-chunk tenant, cache off, loopback",
                rows, ["concurrency", "requests", "ok", "answers_per_s", "server_ttft_ms_p50", "server_ttft_ms_p95",
                       "server_ttft_ms_p99", "client_ttft_ms_p50", "client_ttft_ms_p95", "server_total_ms_p95"])
    print_table("First answer after start: `frontdesk serve` started, /readyz polled until ready, then one "
                "question at once, then five more (next = their median); client TTFT", first_rows,
                ["code", "start", "ready_s", "status", "first_client_ttft_ms", "first_server_ttft_ms",
                 "next_client_ttft_ms"])
    print_table("First answer after start, medians", first_summary,
                ["code", "starts", "median_ready_s", "median_first_client_ttft_ms", "median_next_client_ttft_ms"])
    print(f"\nserver RSS: idle {idle_rss:.0f} MB, peak under load {peak_rss:.0f} MB, after {after_rss:.0f} MB "
          f"(bar: TTFT p95 < 50 ms server side; idle RSS < 300 MB)")
    return {"chunks": chunks, "rows": rows, "first_answer": first_rows, "first_answer_medians": first_summary, "rss_idle_mb": idle_rss, "rss_peak_mb": peak_rss,
            "rss_after_mb": after_rss, "cpus": os.cpu_count()}
