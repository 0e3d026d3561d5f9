"""The business's own published contact points in a tenant's PostgreSQL schema: store/contacts.py's
functions, with its arguments and results, on a connection from PgTenants.read or .write.

As on SQLite: values listed in byte order (COLLATE "C"), and a chunk's placeholders found with
ASCII letters in any case (SQLite's LIKE ignores ASCII case only). Text goes in without U+0000
(store/pg/nul.py), and `learn_site_contacts` reports the values as stored."""

from __future__ import annotations

import time
from collections.abc import Iterable

from store.pg.connect import PgConnection
from store.pg.nul import strip_nul


def site_contacts(conn: PgConnection) -> list[str]:
    """Every learned contact point, as published ("+1-207-555-0148", "hello@example.com")."""
    return [value for (value,) in conn.execute('SELECT value FROM site_contacts ORDER BY value COLLATE "C"')]


def learn_site_contacts(conn: PgConnection, points: Iterable[tuple[str, str]], source: str) -> list[str]:
    """Record (value, kind) contact points seen on ``source``; returns those not known before.
    Call inside a transaction (PgTenants.write)."""
    known = set(site_contacts(conn))
    new = []
    seen_on = strip_nul(source)
    for published, kind in points:
        value = strip_nul(published)
        conn.execute(
            "INSERT INTO site_contacts(value, kind, source, seen_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (value) DO UPDATE SET seen_at = excluded.seen_at",
            (value, strip_nul(kind), seen_on, time.time()),
        )
        if value not in known:
            known.add(value)
            new.append(value)
    return new


def forget_site_contacts(conn: PgConnection) -> int:
    """Drop every learned contact point (the owner turned the option off)."""
    return conn.execute("DELETE FROM site_contacts").rowcount


#: The chunk text with the letters of the placeholders lowercased and no other: SQLite's LIKE
#: ignores the case of ASCII letters alone (PostgreSQL's ILIKE would follow the locale).
_PLACEHOLDER_TEXT = "translate(c.text, 'PHONEMAIL', 'phonemail')"


def pages_with_placeholders(conn: PgConnection) -> list[str]:
    """Active pages whose indexed text had a phone number or address scrubbed: the ones to index
    again once the site's own contact points are known."""
    rows = conn.execute(
        "SELECT DISTINCT p.url COLLATE \"C\" FROM pages p JOIN page_chunks pc ON pc.page_id = p.id "
        "JOIN chunks c ON c.id = pc.chunk_id WHERE p.status = 'active' "
        f"AND ({_PLACEHOLDER_TEXT} LIKE %s OR {_PLACEHOLDER_TEXT} LIKE %s) ORDER BY p.url COLLATE \"C\"",
        ("%[phone]%", "%[email]%"),
    ).fetchall()
    return [url for (url,) in rows]
