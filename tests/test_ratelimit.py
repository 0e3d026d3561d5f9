"""The widget's rate limits (app/ratelimit.py): per visitor address and tenant, then per tenant,
with the tenant's last fifth kept for visitors who have asked little lately. Over HTTP they are
exercised by tests/test_app.py (429 with Retry-After), tests/test_hostile_visitors.py (spoofed
X-Forwarded-For) and the soak (tests/test_chaos.py). Each test runs twice: buckets in process memory
(one worker) and in the SQLite file several workers share (store/ratelimits.py); tests/test_workers.py
checks the shared ones across two real workers."""

from __future__ import annotations

import time

import pytest

from app.ratelimit import RateLimits, TokenBuckets
from store.errors import RateLimited
from store.ratelimits import SharedBucketFile


@pytest.fixture(params=["memory", "shared"])
def where(request, tmp_path):
    """How to make buckets and limits: in memory, or in a shared file."""
    shared = tmp_path / "ratelimits.db" if request.param == "shared" else None
    made: list = []

    class Where:
        def buckets(self, rate: float, burst: float):
            if shared is None:
                return TokenBuckets(rate, burst)
            made.append(SharedBucketFile(shared))
            return made[-1].buckets("test", rate, burst)

        def limits(self, **kwargs) -> RateLimits:
            made.append(RateLimits(**kwargs, shared=shared))
            return made[-1]

    yield Where()
    for thing in made:
        thing.close()


def test_a_bucket_refuses_past_its_burst_and_says_how_long_to_wait(where):
    buckets = where.buckets(rate=1.0, burst=3)
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert 0.9 < buckets.take("a") <= 1.0
    assert buckets.take("b") == 0.0  # another key, its own bucket
    assert buckets.available("never-seen") == 3


def test_a_floor_keeps_tokens_back(where):
    buckets = where.buckets(rate=1.0, burst=5)
    assert [buckets.take("t", floor=2) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("t", floor=2) > 0  # 2 left: kept back
    assert buckets.take("t") == 0.0 and buckets.take("t") == 0.0  # without the floor they can go
    assert buckets.take("t") > 0


def test_addresses_flooding_at_their_limit_leave_the_reserve_to_ordinary_visitors(where):
    limits = where.limits(per_ip=0.001, burst_ip=10, per_tenant=2.0)  # tenant burst 10, reserve 2
    busy = 0
    for n in range(40):
        address = f"10.0.0.{n}"
        for _ in range(6):  # each has been asking at its limit: its own bucket is below half
            limits.ip.take(f"t|{address}")
        for _ in range(4):
            try:
                limits.check("t", address)
            except RateLimited as exc:
                assert "busy" in exc.message
                busy += 1
    assert busy == 40 * 4 - 8  # the flood got the tenant's burst down to its reserve, no further
    assert limits.tenant.available("t") >= 2 - 0.1
    for n in range(2):  # the reserve is there for visitors who have not asked lately
        limits.check("t", f"192.0.2.{n}")
    with pytest.raises(RateLimited, match="busy"):
        limits.check("t", "192.0.2.9")  # and then the tenant's budget is spent for everyone


def test_a_tenant_burst_of_one_keeps_no_reserve(where):
    limits = where.limits(per_ip=0.001, burst_ip=10, per_tenant=0.01)  # tenant burst 1
    for _ in range(6):
        limits.ip.take("t|10.0.0.1")  # this address has asked a lot lately …
    limits.check("t", "10.0.0.1")  # … yet the tenant's one token is not held back from it


def test_two_connections_to_the_shared_file_draw_on_one_bucket(tmp_path):
    first, second = SharedBucketFile(tmp_path / "r.db"), SharedBucketFile(tmp_path / "r.db")
    try:
        a, b = first.buckets("ip", 0.001, 4), second.buckets("ip", 0.001, 4)
        assert [a.take("k"), b.take("k"), a.take("k"), b.take("k")] == [0.0] * 4
        assert a.take("k") > 0 and b.take("k") > 0
        assert b.available("other") == 4
    finally:
        first.close()
        second.close()


def test_a_shared_take_costs_well_under_a_millisecond(tmp_path):
    """The price of sharing: one BEGIN IMMEDIATE transaction per take (README, "Workers")."""
    file = SharedBucketFile(tmp_path / "r.db")
    try:
        buckets = file.buckets("ip", 1000.0, 1e9)
        started = time.perf_counter()
        for n in range(2000):
            buckets.take(f"k{n % 50}")
        per_take = (time.perf_counter() - started) / 2000
    finally:
        file.close()
    assert per_take < 0.002  # measured ~30-60 µs; a loose bar for a busy shared machine


def test_workers_opening_a_new_shared_file_at_the_same_moment_all_open_it(tmp_path):
    """`frontdesk serve`'s workers open ratelimits.db as they start. When two turn a new file to WAL
    at once, SQLite answers one "database is locked" without waiting; that worker died at start
    (a traceback in the log, a respawn). Six at once, 150 new files: every one opens."""
    import threading

    from store.ratelimits import open_file

    failures: list[Exception] = []
    for n in range(150):
        path = tmp_path / f"{n}" / "ratelimits.db"
        barrier = threading.Barrier(6)

        def start_a_worker(path=path, barrier=barrier) -> None:
            barrier.wait()
            try:
                open_file(path).close()
            except Exception as exc:  # noqa: BLE001 - counted, then asserted on
                failures.append(exc)

        threads = [threading.Thread(target=start_a_worker) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
