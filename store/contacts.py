"""The business's own published contact points (``site_contacts``), learned while crawling when the
owner turns ``clean.allow_site_contacts`` on: the cleaner keeps them, and scrubs every other
phone number and address.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import apsw

from store.connect import Row


def site_contacts(conn: apsw.Connection) -> list[str]:
    """Every learned contact point, as published ("+1-207-555-0148", "hello@example.com")."""
    return [value for (value,) in conn.execute("SELECT value FROM site_contacts ORDER BY value")]


def learn_site_contacts(conn: apsw.Connection, points: Iterable[tuple[str, str]], source: str) -> list[str]:
    """Record (value, kind) contact points seen on ``source``; returns those not known before.
    Call inside a transaction."""
    known = set(site_contacts(conn))
    new = []
    for value, kind in points:
        conn.execute(
            "INSERT INTO site_contacts(value, kind, source, seen_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(value) DO UPDATE SET seen_at = excluded.seen_at",
            (value, kind, source, time.time()),
        )
        if value not in known:
            known.add(value)
            new.append(value)
    return new


def forget_site_contacts(conn: apsw.Connection) -> int:
    """Drop every learned contact point (the owner turned the option off)."""
    conn.execute("DELETE FROM site_contacts")
    return conn.changes()


def pages_with_placeholders(conn: apsw.Connection) -> list[str]:
    """Active pages whose indexed text had a phone number or address scrubbed: the ones to index
    again once the site's own contact points are known."""
    rows: list[Row] = conn.execute(
        "SELECT DISTINCT p.url FROM pages p JOIN page_chunks pc ON pc.page_id = p.id "
        "JOIN chunks c ON c.id = pc.chunk_id WHERE p.status = 'active' "
        "AND (c.text LIKE '%[phone]%' OR c.text LIKE '%[email]%') ORDER BY p.url"
    ).fetchall()
    return [url for (url,) in rows]
