"""Retrieval evaluation benchmark (issue 6): the embedder bake-off and fusion tuning.

- Bake-off: every model of ingest.embed.MODELS on SciFact (BEIR test split, 300 queries; a fixed
  100-query slice with --quick) and on the fastapi (en/es/de) and pypug golden sets, each in
  bm25 / dense / hybrid mode, with embedding throughput and query latency.
- Fusion tuning: RRF k, per-side weights, FTS title weight (the cheap title-match signal) and
  candidate depth, on SciFact and the golden sets with the default model; before / after.

Indexes are cached under ~/.cache/frontdesk-bench/eval (SciFact per model in eval-cache/, the
fixture sites as tenants), so a second run only re-runs queries.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from app import eval as ev
from app.context import Context
from app.settings import Settings
from ingest.embed import DEFAULT_MODEL, MODELS
from store.search import DEFAULT_FUSION, FusionParams
from tests.bench.common import print_table
from tests.conftest import FASTAPI, FASTAPI_ORIGIN, FIXTURES, PYPUG, PYPUG_ORIGIN

EVAL = Path(__file__).resolve().parents[1] / "eval"
SCIFACT = FIXTURES / "beir" / "scifact"
DATA = Path.home() / ".cache" / "frontdesk-bench" / "eval"
SITES = {"pypug": (PYPUG, PYPUG_ORIGIN), "fastapi": (FASTAPI, FASTAPI_ORIGIN)}
MODES = ("bm25", "dense", "hybrid")
#: The fusion defaults before this tuning (store/search.py), kept for the before/after table.
PREVIOUS_FUSION = FusionParams(rrf_k=20.0, bm25_weight=0.6, dense_weight=0.4, candidates=50,
                               title_weight=3.0, heading_weight=1.5)


def site_tenant(ctx: Context, site: str, model: str):
    """The fixture site indexed with `model` (built once, then reused)."""
    from ingest.folder import index_folder

    tenant_id = f"{site}-{model}"
    root, origin = SITES[site]
    if ctx.registry.exists(tenant_id):
        tenant = ctx.tenant(tenant_id)
        if tenant.reader().execute("SELECT value FROM meta WHERE key = 'bench_complete'").fetchone():
            return tenant, None
        ctx.registry.delete(tenant_id)
    tenant, _ = ctx.create_tenant(tenant_id, origin + "/", model=model)
    summary = index_folder(tenant, ctx.tenant_embedder(tenant), root, origin + "/")
    with tenant.write() as conn:
        conn.execute("INSERT INTO meta(key, value) VALUES ('bench_complete', '1')")
    return tenant, summary


def scifact(quick: bool) -> ev.BeirData:
    data = ev.load_beir(SCIFACT)
    return ev.beir_subset(data, queries=100, distractors=1500) if quick else data


def throughput(ctx: Context, data: ev.BeirData, quick: bool) -> dict[str, float]:
    """Embedding throughput of each model on the same real chunk texts, measured in interleaved
    rounds (median): index build times depend on whatever else the machine is doing."""
    chunked = ev._chunk_corpus(ev.BeirData(name="sample", corpus=dict(list(data.corpus.items())[:120]),
                                           queries={}, qrels={}), ctx.embedder(DEFAULT_MODEL))
    texts = [c.embedding_text(doc.title) for _, doc, chunks in chunked for c in chunks][:192]
    rounds: dict[str, list[float]] = {m: [] for m in MODELS}
    for model in MODELS:
        ctx.embedder(model).warm_up()
    for _ in range(2 if quick else 3):
        for model in MODELS:
            started = time.perf_counter()
            ctx.embedder(model).embed(texts)
            rounds[model].append(len(texts) / (time.perf_counter() - started))
    return {m: round(sorted(r)[len(r) // 2], 1) for m, r in rounds.items()}


def bake_off(ctx: Context, data: ev.BeirData, quick: bool) -> tuple[list[dict], list[dict]]:
    beir_rows, golden_rows = [], []
    golden = {name: ev.load_golden(EVAL / f"{name}.jsonl") for name in SITES}
    speed = throughput(ctx, data, quick)
    for model in MODELS:
        embedder = ctx.embedder(model)
        started = time.perf_counter()
        tenant, info = ev.index_beir(ctx.data_dir, data, embedder,
                                     on_progress=lambda d, t, what, m=model: print(f"  {m}: {what} {d}/{t}", flush=True)
                                     if d == t or d % 2048 == 0 else None)
        vectors = ev.embed_queries(data, embedder)
        for mode in MODES:
            report = ev.run_beir(tenant, data, embedder, mode=mode, vectors=vectors, index=info)
            beir_rows.append({"dataset": data.name, "model": model, "mode": mode, "ndcg@10": report.ndcg_at_10,
                              "recall@10": report.recall_at_10, "recall@100": report.recall_at_100,
                              "mrr@10": report.mrr_at_10, "p50_ms": report.latency_ms["p50"],
                              "p95_ms": report.latency_ms["p95"], "chunks/s": speed[model],
                              "index_chunks/s": info.chunks_per_s, "index_s": info.build_seconds})
        print(f"  {model}: SciFact done in {time.perf_counter() - started:.0f} s", flush=True)
        for site, items in golden.items():
            started = time.perf_counter()
            site_t, summary = site_tenant(ctx, site, model)
            index_s = round(time.perf_counter() - started, 1) if summary else None
            for mode in MODES:
                metrics = ev.golden_retrieval(site_t, embedder, items, mode=mode)
                row = {"dataset": f"{site} golden", "model": model, "mode": mode, "index_s": index_s}
                for group, values in metrics.items():
                    prefix = "" if group == "all" else f"{group}:"
                    row.update({f"{prefix}{k}": v for k, v in values.items()})
                golden_rows.append(row)
            if not quick or site == "fastapi":
                report = ev.run_golden(ctx, site_t, items, golden_name=site, keep_rows=True)
                row = {"dataset": f"{site} golden", "model": model, "mode": "answers",
                       **{k: report.metrics[k] for k in ("answer_contains", "honest_refusal",
                                                         "false_refusal", "recall_at_5", "mrr")},
                       "retrieval_p95_ms": report.retrieval_ms["p95"], "ttft_p95_ms": report.ttft_ms["p95"],
                       # confidence per question: how well this model's similarity separates
                       # answerable from unanswerable questions (the refusal threshold's input)
                       "questions": [[r.lang, r.kind, r.answered, r.confidence, r.rank] for r in report.rows or []]}
                for lang, metrics in report.by_lang.items():
                    row.update({f"{lang}:{k}": metrics[k] for k in ("honest_refusal", "false_refusal")})
                golden_rows.append(row)
    return beir_rows, golden_rows


def fusion_grid(quick: bool) -> list[FusionParams]:
    grid = [DEFAULT_FUSION, PREVIOUS_FUSION]
    ks = (10, 20, 60) if quick else (5, 10, 20, 40, 60, 100)
    dense_weights = (0.3, 0.4, 0.5) if quick else (0.2, 0.3, 0.4, 0.5, 0.6)
    for k in ks:
        for dense in dense_weights:
            grid.append(msgspec.structs.replace(DEFAULT_FUSION, rrf_k=float(k), dense_weight=dense,
                                                bm25_weight=round(1 - dense, 2)))
    for title in (1.0, 2.0, 5.0):
        grid.append(msgspec.structs.replace(DEFAULT_FUSION, title_weight=title))
    for heading in (1.0, 3.0):
        grid.append(msgspec.structs.replace(DEFAULT_FUSION, heading_weight=heading))
    for candidates in (25, 100):
        grid.append(msgspec.structs.replace(DEFAULT_FUSION, candidates=candidates))
    return list({msgspec.json.encode(p): p for p in grid}.values())


def tune(ctx: Context, data: ev.BeirData, quick: bool) -> list[dict]:
    """Score each fusion setting on SciFact (hybrid nDCG@10) and both golden sets (hybrid MRR,
    recall@5); the objective weighs the three equally so no one dataset decides alone."""
    embedder = ctx.embedder(DEFAULT_MODEL)
    tenant, info = ev.index_beir(ctx.data_dir, data, embedder)
    vectors = ev.embed_queries(data, embedder)
    golden = {name: (site_tenant(ctx, name, DEFAULT_MODEL)[0], ev.load_golden(EVAL / f"{name}.jsonl"))
              for name in SITES}
    rows = []
    for params in fusion_grid(quick):
        beir = ev.run_beir(tenant, data, embedder, mode="hybrid", params=params, vectors=vectors, index=info,
                           measure_latency=False)
        row = {"rrf_k": params.rrf_k, "bm25_w": params.bm25_weight, "dense_w": params.dense_weight,
               "title_w": params.title_weight, "heading_w": params.heading_weight, "cand": params.candidates,
               "scifact_ndcg@10": beir.ndcg_at_10, "scifact_r@100": beir.recall_at_100}
        for name, (site_t, items) in golden.items():
            groups = ev.golden_retrieval(site_t, embedder, items, mode="hybrid", params=params)
            row[f"{name}_mrr"] = groups["all"]["mrr"]
            row[f"{name}_r@5"] = groups["all"]["recall_at_5"]
            if name == "fastapi":
                row.update({f"{lang}_mrr": groups[lang]["mrr"] for lang in ("en", "es", "de")})
        row["objective"] = round((row["scifact_ndcg@10"] + row["pypug_mrr"] + row["fastapi_mrr"]) / 3, 4)
        row["default"] = "now" if params == DEFAULT_FUSION else "before" if params == PREVIOUS_FUSION else ""
        rows.append(row)
        print(f"  fusion {row}", flush=True)
    rows.sort(key=lambda r: -r["objective"])
    return rows


def run(quick: bool) -> dict:
    DATA.mkdir(parents=True, exist_ok=True)
    ctx = Context(Settings(data_dir=str(DATA)))
    try:
        data = scifact(quick)
        beir_rows, golden_rows = bake_off(ctx, data, quick)
        print_table(f"Embedder bake-off: {data.name} ({len(data.queries)} queries, {len(data.corpus)} docs)",
                    beir_rows, ["model", "mode", "ndcg@10", "recall@10", "recall@100", "mrr@10", "p50_ms",
                                "p95_ms", "chunks/s", "index_chunks/s", "index_s"])
        retrieval = [r for r in golden_rows if r["mode"] != "answers"]
        print_table("Embedder bake-off: golden sets, page retrieval (answerable questions)", retrieval,
                    ["dataset", "model", "mode", "hit_at_1", "recall_at_5", "recall_at_10", "mrr",
                     "en:mrr", "es:mrr", "de:mrr", "es:recall_at_5", "de:recall_at_5", "index_s"])
        print_table("Embedder bake-off: golden sets, full answer pipeline (hybrid)",
                    [r for r in golden_rows if r["mode"] == "answers"],
                    ["dataset", "model", "recall_at_5", "mrr", "answer_contains", "honest_refusal",
                     "es:honest_refusal", "de:honest_refusal", "false_refusal", "retrieval_p95_ms", "ttft_p95_ms"])
        fusion = tune(ctx, data, quick)
        print_table("Fusion tuning (hybrid, default model; sorted by objective = mean of SciFact nDCG@10, "
                    "pypug MRR, fastapi MRR)", fusion,
                    ["rrf_k", "bm25_w", "dense_w", "title_w", "heading_w", "cand", "scifact_ndcg@10",
                     "scifact_r@100", "pypug_mrr", "pypug_r@5", "fastapi_mrr", "fastapi_r@5", "en_mrr", "es_mrr",
                     "de_mrr", "objective", "default"])
        return {"scifact": beir_rows, "golden": golden_rows, "fusion": fusion,
                "default_fusion": msgspec.to_builtins(DEFAULT_FUSION)}
    finally:
        ctx.close()
