"""Outgoing webhooks of a tenant: its endpoints, the outbox of deliveries (claimed with a lease,
so one process sends each), every attempt for the delivery log, and the gap.new cursor."""

from __future__ import annotations

import json
import time

import apsw
import msgspec

from store.connect import Row, all_rows, one_row
from store.errors import InvalidInput, NotFound

EVENTS = ("crawl.finished", "crawl.failed", "gap.new", "feedback.negative")
"""Event types an endpoint can subscribe to (`webhook.test` is sent on demand only)."""


class Endpoint(msgspec.Struct, kw_only=True):
    id: int
    url: str
    events: list[str]
    active: bool
    description: str = ""
    created_at: float = 0.0


class Attempt(msgspec.Struct, kw_only=True):
    attempt: int
    at: float
    response_status: int | None
    error: str
    ms: float | None


class Delivery(msgspec.Struct, kw_only=True):
    id: int
    endpoint_id: int
    event_id: str
    event: str
    status: str  # pending | sending | delivered | failed
    attempts: int
    next_at: float
    response_status: int | None
    error: str
    created_at: float
    delivered_at: float | None
    body: str = ""
    log: list[Attempt] = msgspec.field(default_factory=list)


class DueDelivery(msgspec.Struct, kw_only=True):
    """A delivery claimed for sending, with what the sender needs."""

    id: int
    endpoint_id: int
    url: str
    secret: str
    event_id: str
    event: str
    body: str
    attempts: int


class NewGap(msgspec.Struct, kw_only=True):
    id: int
    question: str
    lang: str
    count: int
    page_url: str
    first_at: float


def check_events(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise InvalidInput(f"unknown webhook event {unknown[0]!r}; choose from {', '.join(EVENTS)}", field="events")
    if not events:
        raise InvalidInput("choose at least one event", field="events")
    return [e for e in EVENTS if e in events]


_ENDPOINT_COLUMNS = "id, url, events, active, description, created_at"


def _endpoint(row) -> Endpoint:
    return Endpoint(id=row[0], url=row[1], events=json.loads(row[2]), active=bool(row[3]),
                    description=row[4], created_at=row[5])


def add_endpoint(conn: apsw.Connection, *, url: str, events: list[str], secret: str, description: str = "") -> int:
    """A new endpoint; gap.new starts after the gaps already recorded."""
    events = check_events(events)
    cursor = one_row(conn.execute("SELECT coalesce(max(id), 0) FROM gaps"))[0]
    conn.execute(
        "INSERT INTO webhook_endpoints(url, secret, events, active, description, created_at, gap_cursor) "
        "VALUES (?, ?, ?, 1, ?, ?, ?)",
        (url, secret, json.dumps(events), description[:200], time.time(), cursor),
    )
    return conn.last_insert_rowid()


def update_endpoint(conn: apsw.Connection, endpoint_id: int, *, url: str | None = None,
                    events: list[str] | None = None, active: bool | None = None,
                    description: str | None = None) -> None:
    changed = endpoint_changes(endpoint(conn, endpoint_id), url=url, events=events, active=active,
                               description=description)
    conn.execute("UPDATE webhook_endpoints SET url = ?, events = ?, active = ?, description = ? WHERE id = ?",
                 (*changed, endpoint_id))


def endpoint_changes(current: Endpoint, *, url: str | None, events: list[str] | None, active: bool | None,
                     description: str | None) -> tuple[str, str, int, str]:
    """(url, events JSON, active 0/1, description) of `current` with what is given changed: the
    events checked, the description cut to 200 characters. Shared with store/pg/webhooks.py."""
    return (url if url is not None else current.url,
            json.dumps(check_events(events) if events is not None else current.events),
            int(active if active is not None else current.active),
            (description if description is not None else current.description)[:200])


def set_secret(conn: apsw.Connection, endpoint_id: int, secret: str) -> None:
    conn.execute("UPDATE webhook_endpoints SET secret = ? WHERE id = ?", (secret, endpoint_id))
    if conn.changes() == 0:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")


def delete_endpoint(conn: apsw.Connection, endpoint_id: int) -> None:
    conn.execute("DELETE FROM webhook_endpoints WHERE id = ?", (endpoint_id,))
    if conn.changes() == 0:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")


def endpoint(conn: apsw.Connection, endpoint_id: int) -> Endpoint:
    row = conn.execute(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ?", (endpoint_id,)).fetchone()
    if row is None:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")
    return _endpoint(row)


def endpoints(conn: apsw.Connection) -> list[Endpoint]:
    return [_endpoint(r) for r in conn.execute(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY id")]


def has_endpoints(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM webhook_endpoints WHERE active = 1 LIMIT 1").fetchone() is not None


def enqueue(conn: apsw.Connection, event: str, event_id: str, body: str, *,
            endpoint_id: int | None = None, now: float | None = None) -> list[int]:
    """Queue one event for every active endpoint subscribed to it (or for one endpoint)."""
    now = time.time() if now is None else now
    ids = []
    for row in all_rows(conn.execute(
            "SELECT id, events FROM webhook_endpoints WHERE active = 1 AND (? IS NULL OR id = ?)",
            (endpoint_id, endpoint_id))):
        if not wants(row[1], event, endpoint_id):
            continue
        conn.execute(
            "INSERT INTO webhook_deliveries(endpoint_id, event_id, event, body, next_at, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)", (row[0], event_id, event, body, now, now))
        ids.append(conn.last_insert_rowid())
    return ids


def wants(events_json: str, event: str, endpoint_id: int | None) -> bool:
    """Whether an endpoint subscribed to `events_json` gets `event`: any event when it was named
    (a test delivery), else the events it subscribed to. Shared with store/pg/webhooks.py."""
    return endpoint_id is not None or event in json.loads(events_json)


def claim_due(conn: apsw.Connection, *, now: float, lease_seconds: float, limit: int = 20) -> list[DueDelivery]:
    """Deliveries whose time has come (or whose sender's lease ran out), leased to the caller.
    Call inside a write transaction: two processes never claim the same delivery."""
    rows: list[Row] = conn.execute(
        "SELECT d.id, d.endpoint_id, e.url, e.secret, d.event_id, d.event, d.body, d.attempts "
        "FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id "
        "WHERE (d.status = 'pending' AND d.next_at <= ?) OR (d.status = 'sending' AND d.lease_until < ?) "
        "ORDER BY d.next_at LIMIT ?", (now, now, limit)).fetchall()
    for row in rows:
        conn.execute("UPDATE webhook_deliveries SET status = 'sending', lease_until = ? WHERE id = ?",
                     (now + lease_seconds, row[0]))
    return [DueDelivery(id=r[0], endpoint_id=r[1], url=r[2], secret=r[3], event_id=r[4], event=r[5], body=r[6],
                        attempts=r[7]) for r in rows]


def record_attempt(conn: apsw.Connection, delivery_id: int, *, response_status: int | None, error: str,
                   ms: float | None, delivered: bool, retry_at: float | None, now: float | None = None) -> None:
    """One attempt's outcome: delivered, retried at `retry_at`, or (no retry_at) failed for good."""
    now = time.time() if now is None else now
    row = conn.execute("SELECT attempts FROM webhook_deliveries WHERE id = ?", (delivery_id,)).fetchone()
    if row is None:
        return  # the endpoint was deleted meanwhile
    attempt = row[0] + 1
    conn.execute("INSERT OR REPLACE INTO webhook_attempts(delivery_id, attempt, at, response_status, error, ms) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (delivery_id, attempt, now, response_status, error[:500], ms))
    status = attempt_status(delivered, retry_at)
    conn.execute(
        "UPDATE webhook_deliveries SET status = ?, attempts = ?, next_at = ?, lease_until = NULL, "
        "response_status = ?, error = ?, delivered_at = ? WHERE id = ?",
        (status, attempt, retry_at if retry_at is not None else now, response_status, error[:500],
         now if delivered else None, delivery_id))


def attempt_status(delivered: bool, retry_at: float | None) -> str:
    """A delivery's status after an attempt: delivered, pending again (a retry), or failed for
    good. Shared with store/pg/webhooks.py."""
    return "delivered" if delivered else "pending" if retry_at is not None else "failed"


def next_due(conn: apsw.Connection) -> float | None:
    """When the next pending delivery (or expired lease) is due; None when nothing waits."""
    row = one_row(conn.execute(
        "SELECT min(CASE status WHEN 'pending' THEN next_at ELSE lease_until END) FROM webhook_deliveries "
        "WHERE status IN ('pending', 'sending')"))
    return row[0]


_DELIVERY_COLUMNS = ("id, endpoint_id, event_id, event, status, attempts, next_at, response_status, error, "
                     "created_at, delivered_at, body")


def deliveries(conn: apsw.Connection, endpoint_id: int | None = None, *, limit: int = 50,
               with_attempts: bool = True) -> list[Delivery]:
    """The delivery log, newest first, each with its attempts."""
    rows: list[Row] = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ? IS NULL OR endpoint_id = ? "
        "ORDER BY id DESC LIMIT ?", (endpoint_id, endpoint_id, limit)).fetchall()
    result = [Delivery(id=r[0], endpoint_id=r[1], event_id=r[2], event=r[3], status=r[4], attempts=r[5],
                       next_at=r[6], response_status=r[7], error=r[8], created_at=r[9], delivered_at=r[10],
                       body=r[11]) for r in rows]
    if with_attempts:
        for item in result:
            item.log = [Attempt(attempt=a[0], at=a[1], response_status=a[2], error=a[3], ms=a[4]) for a in conn.execute(
                "SELECT attempt, at, response_status, error, ms FROM webhook_attempts WHERE delivery_id = ? "
                "ORDER BY attempt", (item.id,))]
    return result


def new_gaps(conn: apsw.Connection, endpoint_id: int, limit: int = 100) -> list[NewGap]:
    """Gaps recorded after the endpoint's cursor and not resolved: the next gap.new batch."""
    rows: list[Row] = conn.execute(
        "SELECT g.id, g.question, g.lang, g.count, g.page_url, g.first_at FROM gaps g, webhook_endpoints e "
        "WHERE e.id = ? AND g.id > e.gap_cursor AND g.resolved_at IS NULL ORDER BY g.id LIMIT ?",
        (endpoint_id, limit)).fetchall()
    return [NewGap(id=r[0], question=r[1], lang=r[2], count=r[3], page_url=r[4], first_at=r[5]) for r in rows]


def advance_gap_cursor(conn: apsw.Connection, endpoint_id: int, last_gap_id: int) -> None:
    conn.execute("UPDATE webhook_endpoints SET gap_cursor = max(gap_cursor, ?) WHERE id = ?",
                 (last_gap_id, endpoint_id))


def gap_endpoints(conn: apsw.Connection) -> list[int]:
    """Active endpoints subscribed to gap.new."""
    return [e.id for e in endpoints(conn) if e.active and "gap.new" in e.events]
