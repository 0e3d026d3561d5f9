"""Token buckets shared by the worker processes of one server, in a small SQLite file
(DATA_DIR/ratelimits.db): one short `BEGIN IMMEDIATE` transaction per take, so N workers allow
the limit once, not N times. Rate-limit state is not worth a disk flush: WAL, synchronous=OFF."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import apsw

log = logging.getLogger(__name__)

#: Takes between two sweeps of buckets that have filled up again (a full bucket = no row).
SWEEP_EVERY = 1000
#: A take runs on the worker's event loop: waiting longer for the other workers' takes would stall
#: every stream the worker serves. Two processes taking flat out (far past real traffic) measured
#: p50 0.07 ms, p99 7–16 ms, max 170–350 ms a check with a 2 s timeout.
BUSY_TIMEOUT_MS = 100
#: Opening the file (WAL switch, schema) may wait for a worker starting beside it.
SETUP_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (
    name TEXT NOT NULL,      -- which limit ('ip', 'tenant')
    key TEXT NOT NULL,       -- whose bucket
    tokens REAL NOT NULL,
    updated REAL NOT NULL,   -- unix time of the last take
    PRIMARY KEY (name, key)
) WITHOUT ROWID
"""


def refill(tokens: float, updated: float, now: float, rate: float, burst: float) -> float:
    """Tokens a bucket holds at `now` that held `tokens` at `updated`."""
    return min(burst, tokens + max(0.0, now - updated) * rate)


def open_file(path: Path) -> apsw.Connection:
    """Open (creating) the shared bucket file. The workers of `frontdesk serve` open it at the same
    moment: when two turn a new file to WAL at once, SQLite answers one "database is locked" at once
    rather than wait (its busy handler is not called where waiting could deadlock), and that worker
    died at start and was respawned. The setup is tried again until SETUP_TIMEOUT_MS has passed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + SETUP_TIMEOUT_MS / 1000
    while True:
        conn = apsw.Connection(str(path))
        try:
            conn.set_busy_timeout(SETUP_TIMEOUT_MS)
            conn.pragma("journal_mode", "wal")
            conn.pragma("synchronous", "off")
            conn.execute(_SCHEMA)
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            return conn
        except apsw.BusyError:
            conn.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


class SharedTokenBuckets:
    """`rate` tokens per second up to `burst`, kept in the shared file under `name`; the interface of
    app/ratelimit.py's in-memory TokenBuckets."""

    def __init__(self, conn: apsw.Connection, lock: threading.Lock, name: str, rate: float, burst: float) -> None:
        self.name = name
        self.rate = rate
        self.burst = burst
        self._conn = conn
        self._lock = lock
        self._takes = 0

    def take(self, key: str, cost: float = 1.0, floor: float = 0.0) -> float:
        """Take `cost` tokens, leaving at least `floor`; 0 when allowed, else the seconds until it
        would be. A file too busy to answer within BUSY_TIMEOUT_MS lets the request through."""
        if self.rate <= 0:
            return 0.0
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except apsw.BusyError:
                log.warning("rate-limit file busy; request let through")
                return 0.0
            try:
                wait = self._take(key, cost, floor, time.time())
                self._conn.execute("COMMIT")
                return wait
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _take(self, key: str, cost: float, floor: float, now: float) -> float:
        row = self._conn.execute("SELECT tokens, updated FROM buckets WHERE name = ? AND key = ?",
                                 (self.name, key)).fetchone()
        tokens = self.burst if row is None else refill(row[0], row[1], now, self.rate, self.burst)
        allowed = tokens - cost >= floor
        left = tokens - cost if allowed else tokens
        self._conn.execute("INSERT INTO buckets (name, key, tokens, updated) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (name, key) DO UPDATE SET tokens = excluded.tokens, updated = excluded.updated",
                           (self.name, key, left, now))
        self._takes += 1
        if self._takes % SWEEP_EVERY == 0:
            self._conn.execute("DELETE FROM buckets WHERE name = ? AND updated < ?",
                               (self.name, now - self.burst / self.rate))
        return 0.0 if allowed else (cost + floor - tokens) / self.rate

    def available(self, key: str) -> float:
        """Tokens `key` has now (a full bucket for a key not seen lately, or when there is no limit)."""
        if self.rate <= 0:
            return self.burst
        with self._lock:
            row = self._conn.execute("SELECT tokens, updated FROM buckets WHERE name = ? AND key = ?",
                                     (self.name, key)).fetchone()
        return self.burst if row is None else refill(row[0], row[1], time.time(), self.rate, self.burst)


class SharedBucketFile:
    """One connection to the file per process, shared by its bucket families."""

    def __init__(self, path: Path) -> None:
        self._conn = open_file(path)
        self._lock = threading.Lock()

    def buckets(self, name: str, rate: float, burst: float) -> SharedTokenBuckets:
        return SharedTokenBuckets(self._conn, self._lock, name, rate, burst)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
