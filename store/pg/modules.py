"""The PostgreSQL twins as one `StoreModules` (store/modules.py): what a `PgTenant.store` is."""

from __future__ import annotations

from store.modules import StoreModules
from store.pg import (
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

POSTGRES = StoreModules(
    backend="postgres", analytics=analytics, contacts=contacts, conversations=conversations, crawls=crawls,
    curated=curated, manifests=manifests, migrations=migrations, page_content=page_content, pages=pages,
    pending=pending, reindex=reindex, search=search, webhooks=webhooks,
)
