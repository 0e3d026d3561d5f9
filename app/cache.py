"""Answer cache: an in-process LRU with stale-while-revalidate.

Keyed by tenant, normalised question, page URL and language. Every entry remembers the tenant's
content generation when it was made; any ingestion change bumps the generation, so the entry is
a miss from then on (invalidation without scanning). An entry past its TTL is served once as
stale while the caller recomputes it in the background.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")

_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalize_question(text: str) -> str:
    """Case, accents' composition, punctuation and spacing do not make a different question."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


class AnswerCache(Generic[V]):
    def __init__(self, max_entries: int = 2048, ttl: float = 600.0) -> None:
        self.max_entries = max_entries
        self.ttl = ttl
        self._entries: OrderedDict[tuple, tuple[float, int, V]] = OrderedDict()
        self._refreshing: set[tuple] = set()
        self._lock = threading.Lock()
        self.hits = self.misses = self.stale_hits = 0

    @staticmethod
    def key(tenant_id: str, question: str, page_url: str, lang: str) -> tuple:
        return (tenant_id, normalize_question(question), page_url.split("#")[0], lang)

    def get(self, key: tuple, generation: int) -> tuple[V | None, bool]:
        """(value, needs_refresh). A stale value is returned once with needs_refresh=True."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[1] != generation:
                if entry is not None:
                    del self._entries[key]
                self.misses += 1
                return None, False
            stored_at, _, value = entry
            self._entries.move_to_end(key)
            if now - stored_at <= self.ttl:
                self.hits += 1
                return value, False
            if key in self._refreshing:
                self.stale_hits += 1
                return value, False
            self._refreshing.add(key)
            self.stale_hits += 1
            return value, True

    def put(self, key: tuple, generation: int, value: V) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic(), generation, value)
            self._entries.move_to_end(key)
            self._refreshing.discard(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def refresh_failed(self, key: tuple) -> None:
        with self._lock:
            self._refreshing.discard(key)

    def clear(self, tenant_id: str | None = None) -> int:
        with self._lock:
            doomed = [k for k in self._entries if tenant_id is None or k[0] == tenant_id]
            for k in doomed:
                del self._entries[k]
            return len(doomed)

    def __len__(self) -> int:
        return len(self._entries)
