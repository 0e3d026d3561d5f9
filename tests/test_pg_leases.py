"""Crawl leases across nodes (store/pg/leases.py) on a real PostgreSQL 18 (tests/pg.py): one
winner of concurrent claims, a holder killed with SIGKILL in another OS process taken over only
after its lease expired, renew and release, and tenant roles kept out of the lease table."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from store.config import SiteConfig
from store.errors import InvalidInput, StoreError
from store.pg.connect import open_pool
from store.pg.leases import CrawlLeases, Lease
from store.pg.tenants import PgTenants

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
_ids = itertools.count()

# A node in its own OS process: claims the tenant, says so on stdout, then renews every 0.2 s
# until it is killed.
HOLDER = """
import json, sys, time
import msgspec
from store.pg.connect import open_pool
from store.pg.leases import CrawlLeases

url, tenant_id, ttl_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
leases = CrawlLeases(open_pool(url, max_size=1))
lease = leases.claim(tenant_id, "node-a", ttl_s)
sys.stdout.write(json.dumps(msgspec.to_builtins(lease)) + "\\n")
sys.stdout.flush()
while lease is not None:
    time.sleep(0.2)
    lease = leases.renew(lease)
"""


@pytest.fixture(scope="module")
def pool(pg_url):
    pool = open_pool(pg_url, max_size=8)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def leases(pool):
    return CrawlLeases(pool)


def _tenant() -> str:
    return f"lease-{next(_ids)}"


def _race(leases: CrawlLeases, tenant_id: str, nodes: list[str], ttl_s: float) -> list[Lease | None]:
    """Every node claims the tenant at the same moment, each on its own connection."""
    start = threading.Barrier(len(nodes))
    results: list[Lease | None] = [None] * len(nodes)

    def claim(index: int) -> None:
        start.wait()
        results[index] = leases.claim(tenant_id, nodes[index], ttl_s)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(nodes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_of_two_concurrent_claimers_exactly_one_wins(leases):
    for _ in range(20):
        tenant_id = _tenant()
        results = _race(leases, tenant_id, ["node-a", "node-b"], 30)
        won = [lease for lease in results if lease is not None]
        assert len(won) == 1, results
        holder = leases.holder(tenant_id)
        assert holder is not None and holder.node == won[0].node
    # Taking over an expired lease is a race too, with one winner.
    tenant_id = _tenant()
    first = leases.claim(tenant_id, "node-a", 0.2)
    assert first is not None
    time.sleep(0.3)
    results = _race(leases, tenant_id, ["node-b", "node-c", "node-d"], 30)
    assert len([lease for lease in results if lease is not None]) == 1, results
    assert leases.renew(first) is None  # the old claim lost it


def test_a_killed_holder_is_taken_over_only_after_its_lease_expires(leases, pg_url):
    tenant_id, ttl_s = _tenant(), 2.0
    process = subprocess.Popen([sys.executable, "-c", HOLDER, pg_url, tenant_id, str(ttl_s)],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout is not None
        claimed = json.loads(process.stdout.readline())
        assert claimed["node"] == "node-a"
        # Alive, it renews: node B is refused for longer than one ttl.
        alive_until = time.monotonic() + ttl_s * 1.5
        while time.monotonic() < alive_until:
            assert leases.claim(tenant_id, "node-b", ttl_s) is None
            time.sleep(0.1)
        holder = leases.holder(tenant_id)
        assert holder is not None and holder.node == "node-a" and holder.expires_at > claimed["expires_at"]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()
    # Dead, it holds the lease until it expires: B is refused until then, and gets it after.
    last = leases.holder(tenant_id)
    assert last is not None and last.node == "node-a"
    refused = 0
    deadline = time.monotonic() + ttl_s + 10
    while (taken := leases.claim(tenant_id, "node-b", ttl_s)) is None:
        refused += 1
        assert time.monotonic() < deadline, "the dead node's lease was never taken over"
        time.sleep(0.05)
    assert refused > 0  # B tried while the lease was still the dead node's
    assert taken.claimed_at > last.expires_at  # on the database's clock: never before it expired
    holder = leases.holder(tenant_id)
    assert holder is not None and holder.node == "node-b"


def test_renew_extends_and_release_frees(leases):
    tenant_id = _tenant()
    lease = leases.claim(tenant_id, "node-a", 2.0)
    assert lease is not None and lease.expires_at - lease.claimed_at == pytest.approx(2.0, abs=0.01)
    assert leases.claim(tenant_id, "node-a", 2.0) is None  # held, even for its own node
    time.sleep(1.0)
    renewed = leases.renew(lease)
    assert renewed is not None and renewed.token == lease.token and renewed.expires_at >= lease.expires_at + 1.0
    # Past the first expiry, well inside the renewed one (the server's clock is this machine's).
    time.sleep(max(0.0, lease.expires_at - time.time()) + 0.2)
    assert time.time() < renewed.expires_at
    assert leases.claim(tenant_id, "node-b", 2.0) is None
    assert leases.release(renewed)
    assert leases.holder(tenant_id) is None
    assert not leases.release(renewed)  # released already
    taken = leases.claim(tenant_id, "node-b", 5.0)  # free at once, no waiting for the expiry
    assert taken is not None and leases.holder(tenant_id) is not None
    # The old claim can neither extend nor free the new one.
    assert leases.renew(renewed) is None and not leases.release(renewed)
    holder = leases.holder(tenant_id)
    assert holder is not None and holder.node == "node-b"
    assert leases.release(taken)


def test_an_expired_lease_has_no_holder(leases):
    tenant_id = _tenant()
    assert leases.holder(tenant_id) is None
    assert leases.claim(tenant_id, "node-a", 0.2) is not None
    time.sleep(0.3)
    assert leases.holder(tenant_id) is None


def test_tenant_roles_cannot_see_the_leases(leases, pool):
    tenants = PgTenants(pool)
    tenant_id = _tenant()
    tenants.create(SiteConfig(site="https://bakery.test/"), tenant_id, embedder_id="m", dim=4)
    try:
        assert leases.claim(tenant_id, "node-a", 30) is not None
        for statement in ("SELECT * FROM frontdesk.crawl_leases",
                          "UPDATE frontdesk.crawl_leases SET expires_at = now()"):
            with pytest.raises(StoreError, match="permission denied for schema frontdesk"), \
                    tenants.read(tenant_id) as conn:
                conn.execute(statement)
    finally:
        tenants.delete(tenant_id)


def test_nonsense_is_refused(leases):
    for ttl in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InvalidInput):
            leases.claim(_tenant(), "node-a", ttl)
    with pytest.raises(InvalidInput):
        leases.claim(_tenant(), "", 10)
    with pytest.raises(InvalidInput):
        leases.claim("../etc", "node-a", 10)


def test_nodes_starting_together_make_the_table_once(pool):
    with pool.connection() as conn:  # as on a database no node has used yet
        conn.execute("DROP SCHEMA IF EXISTS frontdesk CASCADE")
        conn.commit()
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_leases() -> None:
        start.wait()
        try:
            CrawlLeases(pool)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_leases) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    leases = CrawlLeases(pool)
    assert leases.claim(_tenant(), "node-a", 1) is not None


def test_a_deleted_tenant_takes_its_lease_with_it(leases, pool):
    tenants = PgTenants(pool)
    tenant_id = _tenant()
    tenants.create(SiteConfig(site="https://bakery.test/"), tenant_id, embedder_id="m", dim=4)
    other = leases.claim("lease-bystander", "node-b", 30)  # another tenant's lease stays
    held = leases.claim(tenant_id, "node-a", 30)
    assert held is not None and other is not None
    tenants.delete(tenant_id)
    with pool.connection() as conn:
        rows = conn.execute("SELECT tenant_id FROM frontdesk.crawl_leases WHERE tenant_id = ANY(%s)",
                            ([tenant_id, "lease-bystander"],)).fetchall()
    assert rows == [("lease-bystander",)]
    assert leases.holder(tenant_id) is None
    assert leases.renew(held) is None  # the node still crawling it is told to stop
    # Made again under that id, the tenant starts unclaimed.
    tenants.create(SiteConfig(site="https://bakery.test/"), tenant_id, embedder_id="m", dim=4)
    try:
        assert leases.claim(tenant_id, "node-c", 30) is not None
    finally:
        tenants.delete(tenant_id)
        assert leases.release(other)


def test_a_tenant_is_deleted_on_a_database_without_the_lease_table(pool):
    with pool.connection() as conn:  # as on a database no node has opened CrawlLeases on
        conn.execute("DROP SCHEMA IF EXISTS frontdesk CASCADE")
        conn.commit()
    tenants = PgTenants(pool)
    tenant_id = _tenant()
    tenants.create(SiteConfig(site="https://bakery.test/"), tenant_id, embedder_id="m", dim=4)
    tenants.delete(tenant_id)
    assert not tenants.exists(tenant_id)
    CrawlLeases(pool)  # the later tests' table back
