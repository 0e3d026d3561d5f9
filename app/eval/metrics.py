"""Ranking metrics with the BEIR / pytrec_eval (trec_eval) definitions — nDCG@k with graded,
linear gains, recall@k, MRR@k — and latency percentiles. Pure functions over lists of ids.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# A ranking is a list of ids, best first; `relevance` maps judged ids to a grade (qrels). Only
# grades > 0 count as relevant (trec_eval's relevance level 1). Ranks start at 1. Ranking by
# position means there are no score ties to break.


def unique(ranking: Iterable[str]) -> list[str]:
    """A run holds each document once: later repeats of an id are dropped."""
    return list(dict.fromkeys(ranking))


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain with linear gains: sum of gain_i / log2(i + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k as pytrec_eval's `ndcg_cut_k`: DCG of the top k over the DCG of the ideal order of
    all judged-relevant documents (also cut at k). 0 when nothing is relevant."""
    gains = [max(0, relevance.get(doc, 0)) for doc in unique(ranking)[:k]]
    ideal = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    best = dcg(ideal)
    return dcg(gains) / best if best > 0 else 0.0


def recall_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Share of the judged-relevant documents found in the top k (pytrec_eval `recall_k`)."""
    relevant = {doc for doc, grade in relevance.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(unique(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k, else 0 (BEIR `MRR@k`)."""
    rank = first_relevant_rank(ranking, relevance)
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def first_relevant_rank(ranking: Sequence[str], relevance: Mapping[str, int]) -> int | None:
    for rank, doc in enumerate(unique(ranking), start=1):
        if relevance.get(doc, 0) > 0:
            return rank
    return None


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 (linear interpolation between closest ranks, as numpy) and the mean."""
    if not samples_ms:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}
    values = np.asarray(samples_ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 2), "p95": round(float(p95), 2),
            "p99": round(float(p99), 2), "mean": round(float(values.mean()), 2)}
