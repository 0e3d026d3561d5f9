"""Crawl leases across app nodes (issue 17): which node crawls a tenant now. A node claims a
tenant's lease for a while, renews it as the crawl goes on and releases it at the end; a node that
dies stops renewing, and once the lease has expired another node may claim it — never before.

One shared table, `frontdesk.crawl_leases`, touched only by the login role in its own short
transactions (store/pg/connect.py `admin`), never inside a tenant's unit of work:

- a lease is about the fleet, not a tenant's content: who crawls what is asked before any tenant
  work starts (and for a tenant that is being created or migrated), and a scheduler or an
  operator sees every tenant's holder in one table;
- isolation stays the database's: the `frontdesk` schema grants nothing to PUBLIC, so a tenant's
  role (every tenant query runs as one) gets "permission denied" for any lease row, its own
  included, and cannot read which node crawls another tenant nor forge a lease;
- exactly one holder is the primary key's: a claim is one `INSERT … ON CONFLICT DO UPDATE … WHERE
  expires_at < now`, so of two concurrent claimers the second waits for the first's row and then
  finds it held.

Times are the database's clock (`clock_timestamp()`), not the nodes': nodes whose clocks disagree
still agree on when a lease expires. Each claim has its own token; renew and release act only on
the claim that made them, so a node whose lease was taken over cannot extend or free the new one.
A lease does not fence writes: a holder should renew well inside its ttl (a third of it, say) and
stop crawling when `renew` returns None.
"""

from __future__ import annotations

import math
import secrets

import msgspec
from psycopg_pool import ConnectionPool

from store.errors import InvalidInput
from store.pg.connect import PgConnection, admin
from store.tenants import validate_tenant_id


def forget(conn: PgConnection, tenant_id: str) -> None:
    """Drop a tenant's lease row in the caller's login-role transaction: deleting a tenant
    (store/pg/tenants.py) takes its lease with it, so a node still crawling it finds `renew`
    returning None and stops, and a tenant made again later under that id starts unclaimed. A
    database on which no node has opened CrawlLeases has no table, and nothing to forget."""
    exists = conn.execute("SELECT to_regclass('frontdesk.crawl_leases') IS NOT NULL").fetchone()
    if exists is not None and exists[0]:
        conn.execute("DELETE FROM frontdesk.crawl_leases WHERE tenant_id = %s", (tenant_id,))
        conn.execute("DELETE FROM frontdesk.crawl_jobs WHERE tenant_id = %s", (tenant_id,))


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """A node's hold on a tenant's crawl, as `claim` or `renew` returned it."""

    tenant_id: str
    node: str
    token: str
    """This claim's own id: renew and release act on it alone."""
    ttl_s: float
    """How long each claim or renewal holds, in seconds."""
    claimed_at: float
    """Unix seconds, on the database's clock."""
    expires_at: float
    """Unix seconds, on the database's clock: another node may claim the tenant after this."""


class Holder(msgspec.Struct, frozen=True, kw_only=True):
    """Who crawls a tenant now (a lease as anyone may see it: without its token)."""

    tenant_id: str
    node: str
    claimed_at: float
    expires_at: float


_SCHEMA = """
    CREATE SCHEMA IF NOT EXISTS frontdesk;
    REVOKE ALL ON SCHEMA frontdesk FROM PUBLIC;
    CREATE TABLE IF NOT EXISTS frontdesk.crawl_leases (
        tenant_id text PRIMARY KEY,
        node text NOT NULL,
        token text NOT NULL,
        claimed_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
    );
    REVOKE ALL ON frontdesk.crawl_leases FROM PUBLIC;
    CREATE TABLE IF NOT EXISTS frontdesk.crawl_jobs (
        tenant_id text PRIMARY KEY,
        state text NOT NULL,
        cancel boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL
    );
    REVOKE ALL ON frontdesk.crawl_jobs FROM PUBLIC;
"""

_TIMES = "extract(epoch FROM claimed_at)::float8, extract(epoch FROM expires_at)::float8"


def _check_ttl(ttl_s: float) -> float:
    if not (math.isfinite(ttl_s) and ttl_s > 0):
        raise InvalidInput(f"a lease needs a positive time to live, not {ttl_s!r} s", field="ttl_s")
    return float(ttl_s)


class CrawlLeases:
    """The crawl leases of one database, reached through the login role's pool."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        with admin(pool) as conn:
            # Nodes starting together would race on CREATE … IF NOT EXISTS (a unique violation
            # in the catalog); the lock makes them take turns.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('frontdesk:leases'))")
            conn.execute(_SCHEMA)

    def claim(self, tenant_id: str, node: str, ttl_s: float) -> Lease | None:
        """The tenant's crawl lease for `node` for `ttl_s` seconds, if no other claim holds it
        (none was made, or the last one expired or was released); None while another holds it,
        including an earlier claim of this same node."""
        validate_tenant_id(tenant_id)
        if not node:
            raise InvalidInput("a lease needs the name of the node that holds it", field="node")
        ttl_s = _check_ttl(ttl_s)
        token = secrets.token_hex(16)
        with admin(self.pool) as conn:
            row = conn.execute(
                "INSERT INTO frontdesk.crawl_leases AS held (tenant_id, node, token, claimed_at, expires_at) "
                "VALUES (%(tenant)s, %(node)s, %(token)s, clock_timestamp(), "
                "        clock_timestamp() + make_interval(secs => %(ttl)s)) "
                # The takeover's times are read after its WHERE, not taken from the VALUES row: a
                # claim that waited on a concurrent one's row lock starts its lease when it wins.
                "ON CONFLICT (tenant_id) DO UPDATE SET node = excluded.node, token = excluded.token, "
                "    claimed_at = clock_timestamp(), expires_at = clock_timestamp() + make_interval(secs => %(ttl)s) "
                "    WHERE held.expires_at < clock_timestamp() "
                f"RETURNING {_TIMES}",
                {"tenant": tenant_id, "node": node, "token": token, "ttl": ttl_s},
            ).fetchone()
        if row is None:
            return None
        return Lease(tenant_id=tenant_id, node=node, token=token, ttl_s=ttl_s, claimed_at=row[0],
                     expires_at=row[1])

    def renew(self, lease: Lease) -> Lease | None:
        """The lease held for another `ttl_s` from now; None when it is no longer this claim's
        (another node took it over after it expired, or it was released): stop crawling."""
        with admin(self.pool) as conn:
            # A lease that expired but that no node has taken over is still this claim's alone:
            # renewing it is safe, since a takeover would have changed the token.
            row = conn.execute(
                "UPDATE frontdesk.crawl_leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
                f"WHERE tenant_id = %s AND token = %s RETURNING {_TIMES}",
                (_check_ttl(lease.ttl_s), lease.tenant_id, lease.token),
            ).fetchone()
        if row is None:
            return None
        return msgspec.structs.replace(lease, claimed_at=row[0], expires_at=row[1])

    def release(self, lease: Lease) -> bool:
        """Free the tenant's crawl for any node now. False when the lease was no longer this
        claim's (taken over, or released already)."""
        with admin(self.pool) as conn:
            cursor = conn.execute("DELETE FROM frontdesk.crawl_leases WHERE tenant_id = %s AND token = %s",
                                  (lease.tenant_id, lease.token))
            return cursor.rowcount == 1

    def holder(self, tenant_id: str) -> Holder | None:
        """Who holds the tenant's crawl lease now; None when nobody does (never claimed,
        released, or expired)."""
        validate_tenant_id(tenant_id)
        with admin(self.pool) as conn:
            row = conn.execute(
                f"SELECT node, {_TIMES} FROM frontdesk.crawl_leases "
                "WHERE tenant_id = %s AND expires_at >= clock_timestamp()", (tenant_id,)).fetchone()
        if row is None:
            return None
        return Holder(tenant_id=tenant_id, node=row[0], claimed_at=row[1], expires_at=row[2])

    # A tenant's last crawl job as every node sees it (app/jobs.py): its state (JobInfo as JSON,
    # written by the node running it as the crawl goes on) and a cancel request from any node.

    def write_state(self, tenant_id: str, state: str) -> None:
        with admin(self.pool) as conn:
            conn.execute(
                "INSERT INTO frontdesk.crawl_jobs (tenant_id, state, updated_at) VALUES (%s, %s, clock_timestamp()) "
                "ON CONFLICT (tenant_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                (validate_tenant_id(tenant_id), state))

    def read_state(self, tenant_id: str) -> str | None:
        with admin(self.pool) as conn:
            row = conn.execute("SELECT state FROM frontdesk.crawl_jobs WHERE tenant_id = %s",
                               (validate_tenant_id(tenant_id),)).fetchone()
        return None if row is None else str(row[0])

    def request_cancel(self, tenant_id: str) -> None:
        with admin(self.pool) as conn:
            conn.execute("UPDATE frontdesk.crawl_jobs SET cancel = true WHERE tenant_id = %s",
                         (validate_tenant_id(tenant_id),))

    def take_cancel(self, tenant_id: str) -> bool:
        """Whether a cancel was requested since the last look (and clear it)."""
        with admin(self.pool) as conn:
            row = conn.execute("UPDATE frontdesk.crawl_jobs SET cancel = false WHERE tenant_id = %s AND cancel "
                               "RETURNING 1", (validate_tenant_id(tenant_id),)).fetchone()
        return row is not None
