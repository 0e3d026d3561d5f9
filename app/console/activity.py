"""What visitors asked and what the site lacks: conversations (filtered, paged), analytics over 7, 30
or 90 days, and coverage (missing and never-cited pages, open gaps)."""

from __future__ import annotations

from typing import Any

import anyio
from litestar import Request, Response, get

from app.console import gaps, views
from app.console.common import page, tenant_for
from app.console.tenants import missing_pages
from store.tenants import Connection

PAGE_SIZE = 20


# -- conversations, analytics, coverage ------------------------------------------------------


@get("/t/{tenant_id:str}/conversations", include_in_schema=False)
async def conversations_page(request: Request, tenant_id: str, show: str = "", page_number: int = 1) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    if show not in ("", "unanswered", "down"):
        show = ""
    page_number = max(1, min(page_number, 100_000))
    items, total = await tenant.read(lambda conn: tenant.store.conversations.conversation_views(
        conn, unanswered=show == "unanswered", thumbs_down=show == "down", limit=PAGE_SIZE,
        offset=(page_number - 1) * PAGE_SIZE))
    pages = max(1, -(-total // PAGE_SIZE))
    return page(request, "conversations.html", session=session, tenant=tenant, section="conversations",
                items=items, total=total, show=show, page_number=page_number, pages=pages)


@get("/t/{tenant_id:str}/analytics", include_in_schema=False)
async def analytics_page(request: Request, tenant_id: str, days: int = 30) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    days = days if days in (7, 30, 90) else 30

    analytics = tenant.store.analytics

    def read(conn: Connection) -> dict[str, Any]:
        per_day = analytics.daily(conn, days)
        return {"summary": analytics.summary(conn, days), "chart": views.day_chart(per_day), "days_rows": per_day,
                "top": analytics.top_questions(conn, days, 10)}

    data = await tenant.read(read)
    return page(request, "analytics.html", session=session, tenant=tenant, section="analytics", days=days, **data)


@get("/t/{tenant_id:str}/coverage", include_in_schema=False)
async def coverage_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    ctx = request.app.state.ctx
    store = tenant.store

    def read() -> dict[str, Any]:
        with tenant.reading() as conn:
            data = {"stats": store.pages.stats(conn), "missing": missing_pages(tenant, conn),
                    "never_cited": store.analytics.sitemap_pages_never_cited(conn),
                    "skipped": store.analytics.last_skipped(conn), "max_pages": tenant.config(conn).crawl.max_pages}
        # Grouping the gaps may embed and write: not inside the read.
        return {**data, "clusters": gaps.clusters(ctx, tenant)[:50]}

    data = await anyio.to_thread.run_sync(read)
    return page(request, "coverage.html", session=session, tenant=tenant, section="coverage", **data)
