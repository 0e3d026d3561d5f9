"""A deterministic stand-in for the embedding model, for tests of logic that does not depend on
what the model understands (store writes, backup and restore, reindex bookkeeping, filters,
escaping, tenant isolation). Feature tests — search quality, answers, crawl → ask, evaluation,
the widget — keep the real model (DESIGN.md, house style 11).

Importing this module registers the fake under `FAKE_MODEL`, so `ctx.create_tenant(...,
model=FAKE_MODEL)` makes a tenant whose vectors come from it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.embed import Embedder, register_embedder

FAKE_MODEL = "fake-hash-words"

_WORDS = re.compile(r"\w+")


class HashWordsEmbedder(Embedder):
    """Bag of words hashed into a fixed number of slots, L2-normalised: texts that share words
    are similar, texts that share none are orthogonal (up to slot collisions). The same text
    always gets the same vector, whatever else is in its batch; no weights, microseconds a text."""

    id = FAKE_MODEL
    dim = 128
    max_tokens = 256
    native_languages = frozenset({"en"})

    @property
    def fingerprint(self) -> str:
        return f"{self.id}:{self.dim}:v1"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(_WORDS.findall(text)) for text in texts]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORDS.findall(text.casefold())
            if not words:
                vectors[row, 0] = 1.0  # a unit vector even for a text with no words
            for word in words:
                slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                vectors[row, slot % self.dim] += 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _hash_words(*, cache_dir: Path | None, threads: int | None) -> Embedder:
    return HashWordsEmbedder()


register_embedder(FAKE_MODEL, _hash_words)
