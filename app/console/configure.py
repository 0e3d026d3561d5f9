"""A tenant's site config form and the widget preview: theme, embed snippet, and a preview chat
answered like a visitor's but not recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import anyio
import msgspec
from litestar import Request, Response, get, post
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from app.console import auth, views
from app.console.common import (
    SECURITY_HEADERS,
    base_url,
    console_keys,
    form_of,
    page,
    redirect,
    tenant_for,
)
from app.events import ChatRequest, ErrorEvent, event_name
from app.question import check_question
from app.routes.common import decode_json, read_body
from store.config import SiteConfig, decode_config
from store.errors import Forbidden, FrontdeskError, InvalidConfig, InvalidInput, Unauthorized
from store.tenants import Tenant

# -- site config -----------------------------------------------------------------------------


@get("/t/{tenant_id:str}/config", include_in_schema=False)
async def config_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    config = await tenant.read(tenant.config)
    return page(request, "config.html", session=session, tenant=tenant, section="config",
                sections=views.config_sections(config, admin=session.admin), error=None)


@post("/t/{tenant_id:str}/config", include_in_schema=False)
async def config_save(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    current: SiteConfig = await tenant.read(tenant.config)
    try:
        data = views.config_from_form(form, current, admin=session.admin)
        config = decode_config(data)
        if config.model != current.model:
            raise InvalidConfig("changing the model needs `frontdesk reindex` (it rebuilds every vector)",
                                field="model")
    except InvalidInput as exc:
        field = str(exc.details.get("field") or "")
        return page(request, "config.html", status=400, session=session, tenant=tenant, section="config",
                    sections=views.config_sections(current, admin=session.admin, posted=form, error_field=field),
                    error={"field": field, "message": exc.message})
    await anyio.to_thread.run_sync(tenant.set_config, config)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/config?msg=config_saved")


# -- widget preview --------------------------------------------------------------------------


@get("/t/{tenant_id:str}/widget", include_in_schema=False)
async def widget_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    config = await tenant.read(tenant.config)
    theme = views.theme_from_query(request.query_params, config)
    base = base_url(request)
    snippet = views.widget_snippet(base, tenant.widget_key, theme)
    return page(request, "widget.html", session=session, tenant=tenant, section="widget", theme=theme,
                snippet=snippet,
                preview_api=f"/console/preview/{quote(console_keys(request).preview(tenant.id, session))}",
                widget_key=tenant.widget_key, fields=views.THEME_FIELDS, theme_attrs=views.widget_attrs(theme),
                theme_vars=views.theme_vars(theme))


async def _preview_tenant(request: Request, token: str) -> Tenant:
    origin = request.headers.get("origin")
    if not origin or urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden("the preview answers only the console's own pages")
    found = console_keys(request).preview_tenant(token)
    if found is None:
        raise Unauthorized("the preview link expired: reload the widget page")
    registry = request.app.state.ctx.registry
    if not registry.exists(found[0]):
        raise Unauthorized("the preview link expired: reload the widget page")
    tenant = await anyio.to_thread.run_sync(registry.get, found[0])
    settings = request.app.state.settings
    valid = {auth.tenant_fingerprint(tenant.admin_token_hash)}
    if settings.admin_token:
        valid.add(auth.admin_fingerprint(settings.admin_token))
    if found[1] not in valid:
        raise Unauthorized("the preview link expired: reload the widget page")
    return tenant


@post("/preview/{token:str}/v1/chat", include_in_schema=False)
async def preview_chat(request: Request, token: str) -> Response:
    """The widget preview's questions: answered like a visitor's, but not recorded."""
    tenant = await _preview_tenant(request, token)
    state = request.app.state
    body = decode_json(await read_body(request, 64_000), ChatRequest)
    body.question = check_question(body.question, state.settings.max_question_chars)

    async def events() -> AsyncIterator[ServerSentEventMessage]:
        stream = state.answerer.stream(tenant, body, persist=False, use_cache=False)
        try:
            async for item in stream:
                yield ServerSentEventMessage(event=event_name(item), data=msgspec.json.encode(item).decode())
        except FrontdeskError as exc:
            error = ErrorEvent(exc.code, exc.message)
            yield ServerSentEventMessage(event="error", data=msgspec.json.encode(error).decode())
        finally:
            await stream.aclose()

    return ServerSentEvent(events(), headers=SECURITY_HEADERS)


@post("/preview/{token:str}/v1/feedback", include_in_schema=False, status_code=200)
async def preview_feedback(request: Request, token: str) -> dict[str, bool]:
    await _preview_tenant(request, token)
    return {"ok": True}  # preview answers are not recorded, so neither is their feedback
