"""The embedding model on this machine: `python -m tests.bench embed [--quick]`.

- spinning: query embedding + hybrid search (10k-chunk tenant) per question, with onnxruntime's
  worker threads allowed to spin-wait after each run or not, each variant in its own process,
  the variants interleaved round by round, on the machine as it is and with one more core kept
  busy by a spinning process (a busy machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests.bench.common import percentiles, print_table

ROOT = str(Path(__file__).resolve().parents[2])
CACHE = str(Path(tempfile.gettempdir()) / "frontdesk-bench-models")

SPIN_SCRIPT = """
import sys, json, time
sys.path.insert(0, {root!r})
from pathlib import Path
from ingest.embed import OnnxMiniLM
from store.search import search
from store.tenants import TenantRegistry
from tests.bench.bench_store import QUERIES
embedder = OnnxMiniLM(int8=True, cache_dir=Path({cache!r}), allow_spinning={spin!r})
embedder.warm_up()
registry = TenantRegistry(Path({tenants!r}))
conn = registry.get("bench").reader()
for q in QUERIES[:5]:
    search(conn, q, embedder.embed_query(q), k=10, mode="hybrid")
embed_ms, total_ms = [], []
for _ in range({repeat}):
    for q in QUERIES:
        started = time.perf_counter()
        vector = embedder.embed_query(q)
        embedded = time.perf_counter()
        search(conn, q, vector, k=10, mode="hybrid")
        done = time.perf_counter()
        embed_ms.append((embedded - started) * 1000)
        total_ms.append((done - started) * 1000)
registry.close_all()
print(json.dumps({{"embed": embed_ms, "total": total_ms}}))
"""

HOG_SCRIPT = "while True:\n    pass\n"


def _spin_round(tenants: Path, spin: bool, repeat: int) -> dict[str, list[float]]:
    script = SPIN_SCRIPT.format(root=ROOT, cache=CACHE, spin=spin, tenants=str(tenants), repeat=repeat)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_spinning(quick: bool) -> list[dict]:
    from ingest.embed import OnnxMiniLM
    from tests.bench.bench_store import _synthetic_tenant, real_texts

    embedder = OnnxMiniLM(int8=True, cache_dir=Path(CACHE))
    texts = real_texts(300)
    base = embedder.embed(texts)
    vocabulary = sorted({w.lower().strip(".,:;()[]\"'") for t in texts for w in t.split() if w.isascii()} - {""})
    rounds, repeat = (3, 2) if quick else (5, 3)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        _synthetic_tenant(Path(tmp), 10_000, base, vocabulary)
        for load in ("as is", "+1 busy core"):
            hog = subprocess.Popen([sys.executable, "-c", HOG_SCRIPT]) if load != "as is" else None
            try:
                per_variant: dict[bool, dict[str, list]] = {True: {"embed": [], "total": [], "p95": []},
                                                            False: {"embed": [], "total": [], "p95": []}}
                for round_no in range(rounds):
                    # Alternate which variant goes first so drift in the machine's load cancels.
                    order = (True, False) if round_no % 2 == 0 else (False, True)
                    for spin in order:
                        samples = _spin_round(Path(tmp), spin, repeat)
                        per_variant[spin]["embed"] += samples["embed"]
                        per_variant[spin]["total"] += samples["total"]
                        per_variant[spin]["p95"].append(percentiles(samples["total"])["p95"])
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            for spin in (True, False):
                data = per_variant[spin]
                total, embed = percentiles(data["total"]), percentiles(data["embed"])
                rows.append({"load": load, "spinning": "on" if spin else "off", "rounds": rounds,
                             "n": total["n"], "embed_p50_ms": embed["p50"], "embed_p95_ms": embed["p95"],
                             "embed_search_p50_ms": total["p50"], "embed_search_p95_ms": total["p95"],
                             "median_round_p95_ms": round(float(np.median(data["p95"])), 2)})
    return rows


def run(quick: bool = False) -> dict:
    spinning = bench_spinning(quick)
    print_table("Query embedding + hybrid search (10k chunks), onnxruntime spin-waiting on vs off, "
                "interleaved processes", spinning,
                ["load", "spinning", "rounds", "n", "embed_p50_ms", "embed_p95_ms", "embed_search_p50_ms",
                 "embed_search_p95_ms", "median_round_p95_ms"])
    return {"spinning": spinning, "cpus": os.cpu_count()}
