"""Outgoing webhooks of a tenant in its PostgreSQL schema: store/webhooks.py's functions, with its
arguments, errors and `Endpoint` / `Delivery` / `DueDelivery` / `NewGap` results, on a connection
from PgTenants.read or .write. Its rules (which events exist, which endpoint gets an event, a
delivery's status after an attempt, what an update changes) are that module's own helpers.

Claiming is where the backends differ in how, not in what: SQLite serialises claimers by the
write transaction itself (BEGIN IMMEDIATE: one writer per file), while here several app processes
claim at once, so `claim_due` locks the due rows it takes `FOR UPDATE SKIP LOCKED`: a delivery
another claimer holds is passed over, and one it has just leased no longer matches once that
claimer commits. Same lease, same order (due time, then pending before expired leases, then id:
what SQLite's plan gives), same result.

Text goes in without U+0000 (store/pg/nul.py)."""

from __future__ import annotations

import json
import time

from store.errors import NotFound
from store.pg.connect import PgConnection
from store.pg.limits import sqlite_limit
from store.pg.nul import strip_nul, without_nul
from store.webhooks import (
    EVENTS,
    Attempt,
    Delivery,
    DueDelivery,
    Endpoint,
    NewGap,
    attempt_status,
    check_events,
    endpoint_changes,
    wants,
)

__all__ = ["EVENTS", "add_endpoint", "advance_gap_cursor", "check_events", "claim_due", "delete_endpoint",
           "deliveries", "endpoint", "endpoints", "enqueue", "gap_endpoints", "has_endpoints", "new_gaps",
           "next_due", "record_attempt", "set_secret", "update_endpoint"]

_ENDPOINT_COLUMNS = "id, url, events, active, description, created_at"


def _endpoint(row: tuple) -> Endpoint:
    return Endpoint(id=int(row[0]), url=row[1], events=json.loads(row[2]), active=bool(row[3]),
                    description=row[4], created_at=row[5])


def add_endpoint(conn: PgConnection, *, url: str, events: list[str], secret: str, description: str = "") -> int:
    """A new endpoint; gap.new starts after the gaps already recorded."""
    events = check_events(events)
    row = conn.execute(
        "INSERT INTO webhook_endpoints(url, secret, events, active, description, created_at, gap_cursor) "
        "VALUES (%s, %s, %s, 1, %s, %s, (SELECT coalesce(max(id), 0) FROM gaps)) RETURNING id",
        (*without_nul((url, secret, json.dumps(events), description[:200])), time.time()),
    ).fetchone()
    assert row is not None  # INSERT … RETURNING always returns the row
    return int(row[0])


def update_endpoint(conn: PgConnection, endpoint_id: int, *, url: str | None = None,
                    events: list[str] | None = None, active: bool | None = None,
                    description: str | None = None) -> None:
    changed = endpoint_changes(endpoint(conn, endpoint_id), url=url, events=events, active=active,
                               description=description)
    conn.execute("UPDATE webhook_endpoints SET url = %s, events = %s, active = %s, description = %s WHERE id = %s",
                 (*without_nul(changed), endpoint_id))


def set_secret(conn: PgConnection, endpoint_id: int, secret: str) -> None:
    cursor = conn.execute("UPDATE webhook_endpoints SET secret = %s WHERE id = %s", (strip_nul(secret), endpoint_id))
    if cursor.rowcount == 0:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")


def delete_endpoint(conn: PgConnection, endpoint_id: int) -> None:
    cursor = conn.execute("DELETE FROM webhook_endpoints WHERE id = %s", (endpoint_id,))
    if cursor.rowcount == 0:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")


def endpoint(conn: PgConnection, endpoint_id: int) -> Endpoint:
    row = conn.execute(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = %s", (endpoint_id,)).fetchone()
    if row is None:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")
    return _endpoint(row)


def endpoints(conn: PgConnection) -> list[Endpoint]:
    return [_endpoint(r) for r in conn.execute(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY id")]


def has_endpoints(conn: PgConnection) -> bool:
    return conn.execute("SELECT 1 FROM webhook_endpoints WHERE active = 1 LIMIT 1").fetchone() is not None


def enqueue(conn: PgConnection, event: str, event_id: str, body: str, *,
            endpoint_id: int | None = None, now: float | None = None) -> list[int]:
    """Queue one event for every active endpoint subscribed to it (or for one endpoint), in
    endpoint id order."""
    now = time.time() if now is None else now
    rows = conn.execute(
        "SELECT id, events FROM webhook_endpoints WHERE active = 1 AND (%(id)s::bigint IS NULL OR id = %(id)s) "
        "ORDER BY id", {"id": endpoint_id}).fetchall()
    ids = []
    for target, events in rows:
        if not wants(events, event, endpoint_id):
            continue
        row = conn.execute(
            "INSERT INTO webhook_deliveries(endpoint_id, event_id, event, body, next_at, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            (target, *without_nul((event_id, event, body)), now, now)).fetchone()
        assert row is not None
        ids.append(int(row[0]))
    return ids


_CLAIM = """
WITH due AS (
    SELECT d.id, d.status AS was FROM webhook_deliveries d
    WHERE (d.status = 'pending' AND d.next_at <= %(now)s) OR (d.status = 'sending' AND d.lease_until < %(now)s)
    ORDER BY d.next_at, d.status COLLATE "C", d.id LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED)
UPDATE webhook_deliveries d SET status = 'sending', lease_until = %(until)s
FROM due, webhook_endpoints e WHERE d.id = due.id AND e.id = d.endpoint_id
RETURNING d.id, d.endpoint_id, e.url, e.secret, d.event_id, d.event, d.body, d.attempts, d.next_at, due.was"""


def claim_due(conn: PgConnection, *, now: float, lease_seconds: float, limit: int = 20) -> list[DueDelivery]:
    """Deliveries whose time has come (or whose sender's lease ran out), leased to the caller.
    Call inside a write transaction (PgTenants.write): claimers running at once skip each other's
    rows, so two never claim the same delivery; the lease holds once the transaction commits."""
    rows = conn.execute(_CLAIM, {"now": now, "until": now + lease_seconds, "limit": sqlite_limit(limit)}).fetchall()
    # RETURNING gives rows in no set order: put them back in the claim's (due time, then pending
    # before expired leases, then id), from the values the rows had before it.
    rows.sort(key=lambda r: (r[8], r[9], r[0]))
    return [DueDelivery(id=int(r[0]), endpoint_id=int(r[1]), url=r[2], secret=r[3], event_id=r[4], event=r[5],
                        body=r[6], attempts=r[7]) for r in rows]


def record_attempt(conn: PgConnection, delivery_id: int, *, response_status: int | None, error: str,
                   ms: float | None, delivered: bool, retry_at: float | None, now: float | None = None) -> None:
    """One attempt's outcome: delivered, retried at `retry_at`, or (no retry_at) failed for good."""
    now = time.time() if now is None else now
    # Locked: a second outcome recorded at once for one delivery waits, then counts after this one.
    row = conn.execute("SELECT attempts FROM webhook_deliveries WHERE id = %s FOR UPDATE", (delivery_id,)).fetchone()
    if row is None:
        return  # the endpoint was deleted meanwhile
    attempt = row[0] + 1
    error = strip_nul(error[:500])
    conn.execute(
        "INSERT INTO webhook_attempts(delivery_id, attempt, at, response_status, error, ms) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (delivery_id, attempt) DO UPDATE SET at = excluded.at, "
        "response_status = excluded.response_status, error = excluded.error, ms = excluded.ms",
        (delivery_id, attempt, now, response_status, error, ms))
    conn.execute(
        "UPDATE webhook_deliveries SET status = %s, attempts = %s, next_at = %s, lease_until = NULL, "
        "response_status = %s, error = %s, delivered_at = %s WHERE id = %s",
        (attempt_status(delivered, retry_at), attempt, retry_at if retry_at is not None else now, response_status,
         error, now if delivered else None, delivery_id))


def next_due(conn: PgConnection) -> float | None:
    """When the next pending delivery (or expired lease) is due; None when nothing waits."""
    row = conn.execute(
        "SELECT min(CASE status WHEN 'pending' THEN next_at ELSE lease_until END) FROM webhook_deliveries "
        "WHERE status IN ('pending', 'sending')").fetchone()
    return row[0] if row else None


_DELIVERY_COLUMNS = ("id, endpoint_id, event_id, event, status, attempts, next_at, response_status, error, "
                     "created_at, delivered_at, body")


def deliveries(conn: PgConnection, endpoint_id: int | None = None, *, limit: int = 50,
               with_attempts: bool = True) -> list[Delivery]:
    """The delivery log, newest first, each with its attempts (read in one statement for all)."""
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE %(id)s::bigint IS NULL OR endpoint_id = %(id)s "
        "ORDER BY id DESC LIMIT %(limit)s", {"id": endpoint_id, "limit": sqlite_limit(limit)}).fetchall()
    result = [Delivery(id=int(r[0]), endpoint_id=int(r[1]), event_id=r[2], event=r[3], status=r[4], attempts=r[5],
                       next_at=r[6], response_status=r[7], error=r[8], created_at=r[9], delivered_at=r[10],
                       body=r[11]) for r in rows]
    if with_attempts and result:
        by_id = {item.id: item for item in result}
        for delivery_id, *attempt in conn.execute(
                "SELECT delivery_id, attempt, at, response_status, error, ms FROM webhook_attempts "
                "WHERE delivery_id = ANY(%s) ORDER BY delivery_id, attempt", (list(by_id),)):
            by_id[delivery_id].log.append(Attempt(attempt=attempt[0], at=attempt[1], response_status=attempt[2],
                                                  error=attempt[3], ms=attempt[4]))
    return result


def new_gaps(conn: PgConnection, endpoint_id: int, limit: int = 100) -> list[NewGap]:
    """Gaps recorded after the endpoint's cursor and not resolved: the next gap.new batch."""
    rows = conn.execute(
        "SELECT g.id, g.question, g.lang, g.count, g.page_url, g.first_at FROM gaps g, webhook_endpoints e "
        "WHERE e.id = %s AND g.id > e.gap_cursor AND g.resolved_at IS NULL ORDER BY g.id LIMIT %s",
        (endpoint_id, sqlite_limit(limit))).fetchall()
    return [NewGap(id=int(r[0]), question=r[1], lang=r[2], count=int(r[3]), page_url=r[4], first_at=r[5])
            for r in rows]


def advance_gap_cursor(conn: PgConnection, endpoint_id: int, last_gap_id: int) -> None:
    conn.execute("UPDATE webhook_endpoints SET gap_cursor = greatest(gap_cursor, %s) WHERE id = %s",
                 (last_gap_id, endpoint_id))


def gap_endpoints(conn: PgConnection) -> list[int]:
    """Active endpoints subscribed to gap.new."""
    return [e.id for e in endpoints(conn) if e.active and "gap.new" in e.events]
