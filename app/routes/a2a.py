"""The A2A façade: `POST /a2a/invoke` runs one question through the answer pipeline for an agent and
returns the whole answer as JSON (bearer token: the server admin token or the tenant's admin token)."""

from __future__ import annotations

import hmac
import time

import anyio
import msgspec
from litestar import Request, post

from app.events import ChatRequest, Citation, PageContext
from app.routes.common import bearer_token, read_json, trace_id
from store.errors import InvalidInput, TenantNotFound, Unauthorized
from store.tenants import Tenant, validate_tenant_id

AGENTS = ("docs",)


class InvokeTask(msgspec.Struct, kw_only=True):
    question: str


class InvokeParams(msgspec.Struct, kw_only=True):
    tenant: str
    page_url: str | None = None


class InvokeRequest(msgspec.Struct, kw_only=True):
    agent: str
    task: InvokeTask
    params: InvokeParams


class InvokeResponse(msgspec.Struct, kw_only=True):
    answer: str
    citations: list[Citation]
    confidence: float
    latency_ms: float
    trace_id: str
    answered: bool = True
    """False when the site does not hold the answer (the text then says so)."""


def authorised_tenant(request: Request, tenant_id: str, token: str) -> Tenant:
    """Open the tenant if the token is the server admin token or this tenant's own admin token.

    Without the server token, a tenant that does not exist is refused like a wrong token, so a
    caller cannot probe which tenants exist.
    """
    state = request.app.state
    admin = state.settings.admin_token
    is_admin = bool(admin) and hmac.compare_digest(token.encode(), admin.encode())
    try:
        tenant = state.ctx.registry.get(tenant_id)
    except TenantNotFound:
        if is_admin:
            raise
        raise Unauthorized("the token does not grant access to this tenant") from None
    if not is_admin and not tenant.check_admin_token(token):
        raise Unauthorized("the token does not grant access to this tenant")
    return state.ctx.tenant(tenant_id)  # also refuses a file whose vectors are of another model


@post("/a2a/invoke", status_code=200, summary="Ask the docs agent one question; the whole answer as JSON")
async def invoke(request: Request) -> InvokeResponse:
    started = time.perf_counter()
    state = request.app.state
    token = bearer_token(request)
    body = await read_json(request, InvokeRequest, state.settings.max_body_bytes)
    if body.agent not in AGENTS:
        raise InvalidInput(f"unknown agent {body.agent[:40]!r}; this server has {', '.join(AGENTS)}")
    tenant_id = validate_tenant_id(body.params.tenant)
    tenant = await anyio.to_thread.run_sync(authorised_tenant, request, tenant_id, token)

    page = PageContext(url=body.params.page_url) if body.params.page_url else None
    chat = ChatRequest(key=tenant.widget_key, question=body.task.question, page=page)
    result = await state.answerer.answer(tenant, chat)
    return InvokeResponse(answer=result.answer, citations=result.citations, confidence=result.confidence,
                          latency_ms=round((time.perf_counter() - started) * 1000, 2),
                          trace_id=trace_id(request), answered=result.answered)


ROUTES = [invoke]
