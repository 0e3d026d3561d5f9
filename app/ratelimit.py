"""Token-bucket rate limits per visitor IP and per tenant, in process memory."""

from __future__ import annotations

import threading
import time

from store.errors import RateLimited


class TokenBuckets:
    """`rate` tokens per second up to `burst`; idle buckets are forgotten so memory stays flat."""

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, cost: float = 1.0) -> float:
        """Take `cost` tokens; returns 0 when allowed, else the seconds until it would be."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - updated) * self.rate)
            if tokens >= cost:
                self._buckets[key] = (tokens - cost, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > self.max_keys:
                self._forget_idle(now)
            return (cost - tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        full_after = self.burst / self.rate
        for key in [k for k, (_, t) in self._buckets.items() if now - t > full_after]:
            del self._buckets[key]


class RateLimits:
    def __init__(self, per_ip: float, burst_ip: int, per_tenant: float) -> None:
        self.ip = TokenBuckets(per_ip, burst_ip)
        self.tenant = TokenBuckets(per_tenant, max(1.0, per_tenant * 5))

    def check(self, tenant_id: str, ip: str) -> None:
        wait = self.ip.take(f"{tenant_id}|{ip}")
        if wait:
            raise RateLimited("too many questions from your address; please wait a moment", retry_after=wait)
        wait = self.tenant.take(tenant_id)
        if wait:
            raise RateLimited("this site's assistant is busy; please try again shortly", retry_after=wait)
