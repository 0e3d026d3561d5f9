"""The frontier: the crawl's breadth-first queue of URLs to visit, normalised, deduplicated,
checked against the URL policy, robots.txt and the junk-family verdicts, bounded by page and
depth limits, with a queue of pages to try again later after a transient failure.
"""

from __future__ import annotations

import heapq
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ingest.crawl.urls import normalize_url

if TYPE_CHECKING:
    from ingest.crawl.fetch import Fetcher

#: A later retry never waits longer than this; a Retry-After beyond it gives the page up.
MAX_LATER_DELAY = 300.0


class Frontier:
    """Breadth-first queue of (url, depth): normalised, deduplicated, bounded.

    ``checks`` are callables returning a reason to refuse a URL or None (``UrlPolicy.allows``,
    ``Fetcher.robots_reason``, ``JunkDetector.refusal``); each refused URL is counted once in
    ``rejected`` by reason. The checks run again when a URL is taken from the queue, so a
    verdict reached after a URL was queued (a junk family) still keeps it from being fetched.
    Once ``max_pages`` URLs were accepted, discovery stops (``rejected["max_pages"]``).

    ``defer`` puts a page that failed transiently back for a later attempt, at most
    ``later_retries`` times, after ``later_delay`` seconds, then three times as long each time.
    """

    def __init__(
        self,
        max_pages: int,
        max_depth: int,
        *,
        checks: Sequence[Callable[[str], str | None]] = (),
        later_retries: int = 0,
        later_delay: float = 10.0,
    ) -> None:
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.checks = list(checks)
        self.later_retries = later_retries
        self.later_delay = later_delay
        self.seen: set[str] = set()
        self.rejected: Counter[str] = Counter()
        self.rounds: Counter[str] = Counter()
        """Later attempts each deferred URL has been given so far."""
        self._refused: dict[str, str] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._later: list[tuple[float, int, str, int]] = []
        self._order = 0

    @classmethod
    def for_fetcher(cls, fetcher: Fetcher) -> Frontier:
        """A frontier with the fetcher's limits, URL policy, robots rules and later retries."""
        config = fetcher.config
        return cls(
            config.max_pages,
            config.max_depth,
            checks=[fetcher.policy.allows, fetcher.robots_reason],
            later_retries=config.later_retries,
            later_delay=config.later_retry_delay,
        )

    def add(self, url: str, depth: int = 0, base: str | None = None) -> bool:
        """Queue ``url`` (resolved against ``base``) unless seen, refused or over a limit."""
        normalized = normalize_url(url, base)
        if normalized is None:
            self.rejected["invalid_url"] += 1
            return False
        if normalized in self.seen:
            return False
        earlier = self._refused.get(normalized)
        if earlier is not None and earlier != "max_depth":
            return False  # refused for good; only a depth limit may be met later at a shallower depth
        reason = self._refusal(normalized, depth)
        if reason is not None:
            self._reject(normalized, reason)
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
        """The next (url, depth) to fetch: a deferred page whose time has come, else the
        shallowest queued one; None when nothing is ready (see ``waiting``)."""
        while True:
            if self._later and self._later[0][0] <= time.monotonic():
                _, _, url, depth = heapq.heappop(self._later)
                return url, depth  # checked when first queued; a retry is not a new URL
            if not self._heap:
                return None
            depth, _, url = heapq.heappop(self._heap)
            reason = self._late_refusal(url)
            if reason is None:
                return url, depth
            self._reject(url, reason)

    def defer(self, url: str, depth: int, retry_after: float | None = None) -> bool:
        """Queue a page that failed transiently for a later attempt; False when its later
        attempts are used up (or the server asks for a wait beyond ``MAX_LATER_DELAY``)."""
        done = self.rounds[url]
        if done >= self.later_retries:
            return False
        delay = self.later_delay * 3**done * random.uniform(0.8, 1.2)
        if retry_after is not None:
            if retry_after > MAX_LATER_DELAY:
                return False
            delay = max(delay, retry_after)
        self.rounds[url] = done + 1
        heapq.heappush(self._later, (time.monotonic() + min(delay, MAX_LATER_DELAY), self._order, url, depth))
        self._order += 1
        return True

    @property
    def waiting(self) -> int:
        """Deferred pages not due yet."""
        return len(self._later)

    def next_due_in(self) -> float:
        """Seconds until the next deferred page is due (0 when one is, inf when none waits)."""
        if not self._later:
            return float("inf")
        return max(0.0, self._later[0][0] - time.monotonic())

    def __len__(self) -> int:
        return len(self._heap) + len(self._later)

    def _refusal(self, url: str, depth: int) -> str | None:
        if depth > self.max_depth:
            return "max_depth"
        if len(self.seen) >= self.max_pages:
            return "max_pages"
        return self._late_refusal(url)

    def _late_refusal(self, url: str) -> str | None:
        for check in self.checks:
            if (reason := check(url)) is not None:
                return reason
        return None

    def _reject(self, url: str, reason: str) -> None:
        # Counted once per URL: a link on every page of a site is one URL not crawled.
        if url not in self._refused:
            self.rejected[reason] += 1
        self._refused[url] = reason
