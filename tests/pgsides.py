"""What the store tests that compare the two backends share: one tenant on each side (an SQLite
tenant file, a PostgreSQL schema) whose store modules read the time from the side's own clock, and
the fixtures `side` (each backend in turn) and `sides` (both at once) built from a test module's
two side classes. The PostgreSQL server is the `pg` fixture's (tests/conftest.py), one per module."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

from store.config import SiteConfig
from store.pg.tenants import PgTenants
from store.tenants import TenantRegistry

DIM = 8
SITE = "https://acme.test"
#: Near the real time: `usage` counts days back from SQLite's date('now').
START = float(int(time.time()))
_ids = itertools.count()


class Clock:
    """`time` as the store modules use it, one second further at each `time()`: the same calls
    on both sides then give the same times, so results compare whole."""

    strftime = staticmethod(time.strftime)
    gmtime = staticmethod(time.gmtime)

    def __init__(self) -> None:
        self.now = START

    def time(self) -> float:
        self.now += 1.0
        return self.now


class SqliteSide:
    """One tenant file; `clocked` names the modules whose `time` is the side's clock."""

    name = "sqlite"
    clocked: tuple[ModuleType, ...] = ()

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.registry = TenantRegistry(root)
        self.tenant, _ = self.registry.create(SiteConfig(site=SITE + "/"), "acme", embedder_id="test-model", dim=DIM)
        self.clock = Clock()
        for module in self.clocked:
            monkeypatch.setattr(module, "time", self.clock)

    def write(self):
        return self.tenant.write()

    @contextmanager
    def read(self) -> Iterator:
        yield self.tenant.reader()

    def close(self) -> None:
        self.registry.close_all()


class PgSide:
    """One tenant schema on the module's PostgreSQL; `clocked` as SqliteSide's."""

    name = "postgres"
    clocked: tuple[ModuleType, ...] = ()

    def __init__(self, tenants: PgTenants, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tenants = tenants
        self.id = f"side-{next(_ids)}"
        tenants.create(SiteConfig(site=SITE + "/"), self.id, embedder_id="test-model", dim=DIM)
        self.clock = Clock()
        for module in self.clocked:
            monkeypatch.setattr(module, "time", self.clock)

    def write(self):
        return self.tenants.write(self.id)

    def read(self):
        return self.tenants.read(self.id)

    def close(self) -> None:
        self.tenants.delete(self.id)


def side_fixtures(sqlite_side: type[SqliteSide], pg_side: type[PgSide]):
    """The `side` and `sides` fixtures of a test module, from its two side classes."""

    @pytest.fixture(params=["sqlite", "postgres"])
    def side(request, tmp_path, monkeypatch):
        made = sqlite_side(tmp_path, monkeypatch) if request.param == "sqlite" else \
            pg_side(request.getfixturevalue("pg"), monkeypatch)
        yield made
        made.close()

    @pytest.fixture
    def sides(tmp_path, monkeypatch, pg):
        made = (sqlite_side(tmp_path, monkeypatch), pg_side(pg, monkeypatch))
        yield made
        for one in made:
            one.close()

    return side, sides
