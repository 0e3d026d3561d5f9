"""A tenant's webhooks: the endpoint list, creating one (its secret shown once), an endpoint's delivery
log, and the update, test, rotate-secret and delete actions."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.response import Template

from app.console import auth
from app.console.common import form_of, form_text, page, redirect, tenant_for
from app.webhooks import change_endpoint, create_endpoint, remove_endpoint, rotate_secret, send_test
from store import webhooks as outbox
from store.errors import InvalidInput, NotFound
from store.tenants import Connection, Tenant

# -- webhooks --------------------------------------------------------------------------------


async def _webhooks_page(request: Request, session: auth.Session, tenant: Tenant, *, status: int = 200,
                         created: tuple[outbox.Endpoint, str] | None = None, form: dict | None = None,
                         error: dict | None = None) -> Template:
    store = tenant.store

    def read(conn: Connection) -> dict[str, Any]:
        return {"endpoints": store.webhooks.endpoints(conn),
                "recent": store.webhooks.deliveries(conn, limit=20, with_attempts=False),
                "allow_private": tenant.config(conn).crawl.allow_private_network}

    data = await tenant.read(read)
    return page(request, "webhooks.html", status=status, session=session, tenant=tenant, section="webhooks",
                events=outbox.EVENTS, created=created, form=form or {"events": list(outbox.EVENTS)}, error=error,
                **data)


@get("/t/{tenant_id:str}/webhooks", include_in_schema=False)
async def webhooks_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    return await _webhooks_page(request, session, tenant)


@post("/t/{tenant_id:str}/webhooks", include_in_schema=False)
async def webhook_create(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    url, description = form_text(form, "url", 2000), form_text(form, "description", 200)
    events = [str(e) for e in form.getall("events", [])]
    values = {"url": url, "events": events, "description": description}
    try:
        created = await create_endpoint(getattr(request.app.state, "webhooks", None), tenant, url=url,
                                        events=events, description=description)
    except InvalidInput as exc:
        return await _webhooks_page(request, session, tenant, status=400, form=values,
                                    error={"field": exc.details.get("field", ""), "message": exc.message})
    return await _webhooks_page(request, session, tenant, status=201, created=created)


async def _webhook_page(request: Request, session: auth.Session, tenant: Tenant, endpoint_id: int,
                        secret: str | None = None) -> Template:
    store = tenant.store

    def read(conn: Connection) -> dict[str, Any]:
        return {"endpoint": store.webhooks.endpoint(conn, endpoint_id),
                "deliveries": store.webhooks.deliveries(conn, endpoint_id, limit=50)}

    data = await tenant.read(read)
    return page(request, "webhook.html", session=session, tenant=tenant, section="webhooks", secret=secret,
                events=outbox.EVENTS, **data)


@get("/t/{tenant_id:str}/webhooks/{endpoint_id:int}", include_in_schema=False)
async def webhook_log(request: Request, tenant_id: str, endpoint_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    return await _webhook_page(request, session, tenant, endpoint_id)


@post("/t/{tenant_id:str}/webhooks/{endpoint_id:int}/{action:str}", include_in_schema=False)
async def webhook_action(request: Request, tenant_id: str, endpoint_id: int, action: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    here = f"/console/t/{tenant.id}/webhooks"
    dispatcher = getattr(request.app.state, "webhooks", None)
    if action == "delete":
        await remove_endpoint(tenant, endpoint_id)
        return redirect(f"{here}?msg=webhook_deleted")
    if action == "update":
        await change_endpoint(tenant, endpoint_id, active=form.get("active") == "on",
                              events=[str(e) for e in form.getall("events", [])])
        if dispatcher is not None:
            dispatcher.watch(tenant.id)
        return redirect(f"{here}/{endpoint_id}?msg=webhook_updated")
    if action == "test":
        await send_test(dispatcher, tenant, endpoint_id)
        return redirect(f"{here}/{endpoint_id}?msg=webhook_test")
    if action == "rotate":
        return await _webhook_page(request, session, tenant, endpoint_id, await rotate_secret(tenant, endpoint_id))
    raise NotFound("no such webhook action")
