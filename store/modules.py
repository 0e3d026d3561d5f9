"""The store modules of one backend as one object, so code above the store reaches the backend a
tenant lives on without naming it: `tenant.store.pages.write_page(conn, …)` is the SQLite
function for a tenant file and its PostgreSQL twin (store/pg/) for a tenant schema, called with the
connection that tenant's `reading()` / `write()` handed out.

Structs, errors and pure helpers (`Filters`, `Hit`, `vector_bytes`…) are the same on both backends
and are imported from the SQLite modules directly; the word helpers (`content_terms`…) from
store/words.py."""

from __future__ import annotations

from types import ModuleType

import msgspec

from store import (
    analytics,
    contacts,
    conversations,
    crawls,
    curated,
    manifests,
    migrations,
    page_content,
    pages,
    pending,
    reindex,
    search,
    webhooks,
)


class StoreModules(msgspec.Struct, frozen=True, kw_only=True):
    """One backend's modules, each with the functions listed in docs/architecture.md "The store
    seam" (same names, arguments, Structs and errors on both backends)."""

    backend: str
    """"sqlite" or "postgres"."""
    analytics: ModuleType
    contacts: ModuleType
    conversations: ModuleType
    crawls: ModuleType
    curated: ModuleType
    manifests: ModuleType
    migrations: ModuleType
    page_content: ModuleType
    pages: ModuleType
    pending: ModuleType
    reindex: ModuleType
    search: ModuleType
    webhooks: ModuleType


SQLITE = StoreModules(
    backend="sqlite", analytics=analytics, contacts=contacts, conversations=conversations, crawls=crawls,
    curated=curated, manifests=manifests, migrations=migrations, page_content=page_content, pages=pages,
    pending=pending, reindex=reindex, search=search, webhooks=webhooks,
)
