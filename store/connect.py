"""Open a tenant file: connection setup as named steps, sqlite-vec loaded, a time limit per query."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import apsw.bestpractice  # noqa: F401  (documents where the steps below come from)
import sqlite_vec

from store.errors import NotADatabase, StoreError

BUSY_TIMEOUT_MS = 5000

Row = tuple[Any, ...]
"""A result row as store code reads it. apsw types a column as any SQLite value; its real type is the
column's in the schema (store/migrations.py), which a type checker cannot see from the SQL text."""


def all_rows(cursor: apsw.Cursor) -> list[Row]:
    """`cursor.fetchall()`, typed as rows whose columns have their schema types."""
    return cursor.fetchall()


def one_row(cursor: apsw.Cursor) -> Row:
    """The row of a query that always returns exactly one: an aggregate without GROUP BY, a PRAGMA
    reading a setting."""
    row = cursor.fetchone()
    assert row is not None, "an aggregate query or a PRAGMA returns one row"
    return row

_SQLITE_HEADER = b"SQLite format 3\x00"


def check_is_sqlite(path: Path) -> None:
    """Refuse a file that is not SQLite before apsw touches it (so it is left untouched)."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        header = handle.read(16)
    if header != _SQLITE_HEADER:
        raise NotADatabase(f"{path.name} is not a frontdesk tenant database (not an SQLite file)")


def storage_error(exc: BaseException, path: Path) -> StoreError | None:
    """The operator's version of an SQLite failure caused by the disk under ``path`` — full,
    read-only, unopenable, failing — as a StoreError that says what to do; None for others.
    Without it such failures left the CLI with a traceback (found by tests/chaos/faults.py)."""
    folder = path.parent
    if isinstance(exc, apsw.FullError):
        return StoreError(f"the disk holding {path.name} is full ({folder}); free some space and run the "
                          "command again: everything written before is kept", reason="disk_full")
    if isinstance(exc, apsw.ReadOnlyError | apsw.CantOpenError | apsw.PermissionsError):
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            return StoreError(f"{path.name} cannot be written: {folder} is read-only; frontdesk needs to write "
                              "the database and its -wal and -shm files there", reason="read_only")
        return StoreError(f"{path.name} cannot be opened: {exc}", reason="cannot_open")
    if isinstance(exc, apsw.IOError):
        return StoreError(f"disk I/O error on {path.name} ({exc}); check the disk, then restore a backup if "
                          "the file is damaged", reason="io_error")
    return None


def use_wal(conn: apsw.Connection) -> None:
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", "normal")  # WAL + NORMAL: durable at checkpoints, fast commits


def use_busy_timeout(conn: apsw.Connection) -> None:
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)


def use_foreign_keys(conn: apsw.Connection) -> None:
    conn.pragma("foreign_keys", True)


def use_recursive_triggers_off(conn: apsw.Connection) -> None:
    conn.pragma("recursive_triggers", False)


def load_sqlite_vec(conn: apsw.Connection) -> None:
    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)  # nothing else may load code into this process


def use_memory_limits(conn: apsw.Connection) -> None:
    conn.pragma("cache_size", -16000)  # 16 MB page cache per connection
    conn.pragma("temp_store", "memory")
    conn.pragma("mmap_size", 256 * 1024 * 1024)


CONNECTION_STEPS: tuple[Callable[[apsw.Connection], None], ...] = (
    use_busy_timeout,
    use_wal,
    use_foreign_keys,
    use_recursive_triggers_off,
    use_memory_limits,
    load_sqlite_vec,
)


def open_connection(path: Path, *, readonly: bool = False, create: bool = False) -> apsw.Connection:
    """Open `path` with every connection step applied; refuses foreign files without writing."""
    check_is_sqlite(path)
    if not create and not path.exists():
        raise StoreError(f"tenant database {path.name} does not exist")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create:
        flags |= apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
        for step in CONNECTION_STEPS:
            if readonly and step is use_wal:
                continue
            step(conn)
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
    except apsw.NotADBError as exc:
        raise NotADatabase(f"{path.name} is not a valid SQLite database: {exc}") from None
    except apsw.CorruptError as exc:
        raise NotADatabase(f"{path.name} is corrupt: {exc}") from None
    except apsw.Error as exc:
        if (failure := storage_error(exc, path)) is not None:
            raise failure from None
        raise
    return conn


@contextlib.contextmanager
def time_limit(conn: apsw.Connection, seconds: float) -> Iterator[None]:
    """Interrupt any statement on `conn` that has used more than `seconds` of CPU on this thread
    (raises apsw.InterruptError). CPU, not wall-clock time: under a burst (50 visitors at once on
    two cores) a search waits its turn for a core and for the GIL, and a wall-clock limit failed
    ordinary searches that way (5 of 400 at 50 concurrent streams); a pathological query still
    burns its budget and is cut off."""
    deadline = time.thread_time() + seconds

    def over_time() -> bool:
        return time.thread_time() > deadline  # returning True aborts the statement

    conn.set_progress_handler(over_time, 1000)
    try:
        yield
    finally:
        conn.set_progress_handler(None)
