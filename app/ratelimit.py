"""Token-bucket rate limits per visitor IP and per tenant: in process memory for one worker, in a
small SQLite file the workers share (store/ratelimits.py) when `frontdesk serve` runs several."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Protocol

from store.errors import RateLimited
from store.ratelimits import SharedBucketFile


class Buckets(Protocol):
    burst: float

    def take(self, key: str, cost: float = 1.0, floor: float = 0.0) -> float: ...

    def available(self, key: str) -> float: ...


class TokenBuckets:
    """`rate` tokens per second up to `burst`; idle buckets are forgotten so memory stays flat."""

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, cost: float = 1.0, floor: float = 0.0) -> float:
        """Take `cost` tokens, leaving at least `floor` in the bucket; returns 0 when allowed, else
        the seconds until it would be."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - updated) * self.rate)
            if tokens - cost >= floor:
                self._buckets[key] = (tokens - cost, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > self.max_keys:
                self._forget_idle(now)
            return (cost + floor - tokens) / self.rate

    def available(self, key: str) -> float:
        """Tokens `key` has now (a full bucket for a key not seen lately, or when there is no limit)."""
        if self.rate <= 0:
            return self.burst
        now = time.monotonic()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self.burst, now))
        return min(self.burst, tokens + (now - updated) * self.rate)

    def _forget_idle(self, now: float) -> None:
        full_after = self.burst / self.rate
        for key in [k for k, (_, t) in self._buckets.items() if now - t > full_after]:
            del self._buckets[key]


class RateLimits:
    """Per visitor address and tenant, then per tenant.

    The tenant's last `RESERVE` of its burst is kept for visitors who have asked little lately (their
    own bucket at least half full). Without it, many addresses each asking at the per-IP limit use
    up the tenant's budget and its ordinary visitors are refused as "busy" with them: the soak
    (tests/chaos/soak.py) saw 10 of 184 well-behaved questions refused that way."""

    RESERVE = 0.2

    def __init__(self, per_ip: float, burst_ip: int, per_tenant: float, *, shared: Path | None = None) -> None:
        """`shared`: the file the buckets live in when several processes serve (else in memory)."""
        burst_tenant = max(1.0, per_tenant * 5)
        self._file = SharedBucketFile(shared) if shared is not None else None
        self.ip: Buckets
        self.tenant: Buckets
        if self._file is not None:
            self.ip = self._file.buckets("ip", per_ip, burst_ip)
            self.tenant = self._file.buckets("tenant", per_tenant, burst_tenant)
        else:
            self.ip = TokenBuckets(per_ip, burst_ip)
            self.tenant = TokenBuckets(per_tenant, burst_tenant)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def check(self, tenant_id: str, ip: str) -> None:
        key = f"{tenant_id}|{ip}"
        wait = self.ip.take(key)
        if wait:
            raise RateLimited("too many questions from your address; please wait a moment", retry_after=wait)
        light = self.ip.available(key) >= self.ip.burst / 2
        reserve = min(self.tenant.burst * self.RESERVE, self.tenant.burst - 1)  # a burst of 1 keeps none
        wait = self.tenant.take(tenant_id, floor=0.0 if light else reserve)
        if wait:
            raise RateLimited("this site's assistant is busy; please try again shortly", retry_after=wait)
