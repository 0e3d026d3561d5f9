"""Evaluation: retrieval on BEIR datasets and answers on golden question sets (docs/eval.md).

- `metrics`: nDCG@k, recall@k, MRR@k and percentiles with the BEIR / pytrec_eval definitions.
- `beir`: a BEIR dataset indexed into a cached evaluation tenant, queried in every mode.
- `golden`: a tenant asked a golden set through the full answer pipeline.
Reports are msgspec structs (JSON) with Markdown renderings.
"""

from app.eval.beir import (
    BeirData,
    BeirReport,
    IndexInfo,
    QueryVectors,
    beir_markdown,
    beir_subset,
    embed_queries,
    fused_chunk_ranking,
    index_beir,
    load_beir,
    run_beir,
)
from app.eval.golden import (
    GoldenItem,
    GoldenReport,
    GoldenRow,
    answer_precision,
    golden_markdown,
    golden_metrics,
    golden_retrieval,
    load_golden,
    normalise_url,
    rank_pages,
    run_golden,
    tenant_languages,
)
from app.eval.metrics import mrr_at_k, ndcg_at_k, percentiles, recall_at_k

__all__ = [
    "BeirData", "BeirReport", "GoldenItem", "GoldenReport", "GoldenRow", "IndexInfo", "QueryVectors",
    "answer_precision", "beir_markdown", "beir_subset", "embed_queries", "fused_chunk_ranking",
    "golden_markdown", "golden_metrics", "golden_retrieval", "index_beir", "load_beir", "load_golden", "mrr_at_k",
    "ndcg_at_k", "normalise_url", "percentiles", "rank_pages", "recall_at_k", "run_beir", "run_golden",
    "tenant_languages",
]
