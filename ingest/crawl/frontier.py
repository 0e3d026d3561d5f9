"""The frontier: the crawl's breadth-first queue of URLs to visit, normalised, deduplicated,
checked against the URL policy and robots.txt, and bounded by page and depth limits.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ingest.crawl.urls import normalize_url

if TYPE_CHECKING:
    from ingest.crawl.fetch import Fetcher


class Frontier:
    """Breadth-first queue of (url, depth): normalised, deduplicated, bounded.

    ``checks`` are callables returning a reason to refuse a URL or None (``UrlPolicy.allows``,
    ``Fetcher.robots_reason``); refusals are counted in ``rejected`` by reason. Once
    ``max_pages`` URLs were accepted, discovery stops (``rejected["max_pages"]``).
    """

    def __init__(
        self,
        max_pages: int,
        max_depth: int,
        *,
        checks: Sequence[Callable[[str], str | None]] = (),
    ) -> None:
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.checks = list(checks)
        self.seen: set[str] = set()
        self.rejected: Counter[str] = Counter()
        self._heap: list[tuple[int, int, str]] = []
        self._order = 0

    @classmethod
    def for_fetcher(cls, fetcher: Fetcher) -> Frontier:
        """A frontier with the fetcher's limits, URL policy and robots rules."""
        config = fetcher.config
        return cls(
            config.max_pages,
            config.max_depth,
            checks=[fetcher.policy.allows, fetcher.robots_reason],
        )

    def add(self, url: str, depth: int = 0, base: str | None = None) -> bool:
        """Queue ``url`` (resolved against ``base``) unless seen, refused or over a limit."""
        normalized = normalize_url(url, base)
        if normalized is None:
            self.rejected["invalid_url"] += 1
            return False
        if normalized in self.seen:
            return False
        reason = self._refusal(normalized, depth)
        if reason is not None:
            self.rejected[reason] += 1
            return False
        self.seen.add(normalized)
        # Ordered by depth, then arrival, so links found late never jump ahead of sitemap pages.
        heapq.heappush(self._heap, (depth, self._order, normalized))
        self._order += 1
        return True

    def extend(self, urls: Iterable[str], depth: int = 0, base: str | None = None) -> int:
        """Queue many URLs at one depth; returns how many were accepted."""
        return sum(self.add(url, depth, base) for url in urls)

    def pop(self) -> tuple[str, int] | None:
        """The shallowest queued (url, depth), or None when the frontier is empty."""
        if not self._heap:
            return None
        depth, _, url = heapq.heappop(self._heap)
        return url, depth

    def __len__(self) -> int:
        return len(self._heap)

    def _refusal(self, url: str, depth: int) -> str | None:
        if depth > self.max_depth:
            return "max_depth"
        if len(self.seen) >= self.max_pages:
            return "max_pages"
        for check in self.checks:
            if (reason := check(url)) is not None:
                return reason
        return None
