"""`frontdesk` as the fault harness runs it: `python -m tests.chaos.cli <command> …` is exactly
`python -m app <command> …` (app/__main__.py main()), with the deterministic test embedder
(tests/fakes.py) registered so tenants can be made with `--model fake-hash-words`. Killing,
filling and corrupting a crawl does not depend on what the model understands, and the fake
keeps 20 crawls × 4 faults within minutes on two cores; `--model` in tests/chaos/faults.py
switches to the real one.

FRONTDESK_CHAOS_MAX_PAGES (a number of 4 KiB pages), when set, caps every tenant connection with
SQLite's `PRAGMA max_page_count`: the disk-full fault's stand-in where no small filesystem can be
mounted. SQLite then fails writes with SQLITE_FULL, the same error a full disk gives.
"""

from __future__ import annotations

import os
import sys

import tests.fakes  # noqa: F401  (registers the fake embedder)


def _cap_pages() -> None:
    limit = os.environ.get("FRONTDESK_CHAOS_MAX_PAGES")
    if not limit:
        return
    from store import connect

    def use_max_page_count(conn) -> None:
        conn.pragma("max_page_count", int(limit))

    connect.CONNECTION_STEPS = (*connect.CONNECTION_STEPS, use_max_page_count)


if __name__ == "__main__":
    _cap_pages()
    from app.__main__ import main

    sys.exit(main())
