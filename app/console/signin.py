"""Signing in and out of the console: the sign-in form (its own CSRF nonce cookie), a server or tenant
admin token exchanged for a signed session cookie, a brake on repeated wrong tokens, sign-out."""

from __future__ import annotations

import hmac
import secrets

import anyio
from litestar import Request, Response, get, post
from litestar.response import Template

from app.console import auth
from app.console.common import (
    console_keys,
    current_session,
    form_of,
    form_text,
    page,
    redirect,
    signed_in,
)
from app.routes.widget import client_ip
from store.errors import FrontdeskError, RateLimited
from store.tenants import validate_tenant_id

# -- sign-in ---------------------------------------------------------------------------------


def _login_page(request: Request, *, error: str = "", status: int = 200, next_url: str = "") -> Template:
    nonce = request.cookies.get(auth.LOGIN_COOKIE) or secrets.token_urlsafe(18)
    response = page(request, "login.html", status=status, error=error, next_url=next_url,
                    login_csrf=console_keys(request).login_csrf(nonce))
    response.set_cookie(auth.LOGIN_COOKIE, nonce, path="/console", httponly=True, samesite="strict",
                        secure=_secure(request), max_age=3600)
    return response


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.app.state.settings.public_url.startswith("https:")


def _safe_next(value: str) -> str:
    return value if value.startswith("/console") and not value.startswith("//") and "\\" not in value else "/console"


@get("/login", include_in_schema=False)
async def login_form(request: Request) -> Response:
    if await anyio.to_thread.run_sync(current_session, request) is not None:
        return redirect("/console")
    return _login_page(request, next_url=_safe_next(request.query_params.get("next", "")))


def _who(request: Request, token: str, tenant_id: str) -> tuple[str, str] | None:
    """(scope, fingerprint) for a server or tenant admin token, else None."""
    state = request.app.state
    admin = state.settings.admin_token
    if admin and hmac.compare_digest(token.encode(), admin.encode()):
        return "*", auth.admin_fingerprint(admin)
    registry = state.ctx.registry
    candidates = [tenant_id] if tenant_id else registry.ids()
    for candidate in candidates:
        try:
            if not registry.exists(validate_tenant_id(candidate)):
                continue
            tenant = registry.get(candidate)
        except FrontdeskError:
            continue
        if tenant.check_admin_token(token):
            return tenant.id, auth.tenant_fingerprint(tenant.admin_token_hash)
    return None


@post("/login", include_in_schema=False)
async def login(request: Request) -> Response:
    keys = console_keys(request)
    brake: auth.LoginBrake = request.app.state.console_brake
    client = client_ip(request)
    form = await request.form()
    next_url = _safe_next(form_text(form, "next", 500))
    if not keys.check_login_csrf(request.cookies.get(auth.LOGIN_COOKIE), form_text(form, auth.CSRF_FIELD, 200)):
        return _login_page(request, status=403, next_url=next_url,
                           error="The sign-in form expired or came from another site. Please try again.")
    wait = brake.blocked_for(client)
    if wait:
        raise RateLimited(f"too many wrong tokens from your address: try again in {int(wait) + 1} s",
                          retry_after=wait)
    token = form_text(form, "token", 500)
    tenant_id = form_text(form, "tenant", 100).lower()
    found = await anyio.to_thread.run_sync(_who, request, token, tenant_id) if token else None
    if found is None:
        brake.failed(client)
        message = ("Enter the server admin token or a tenant's admin token." if not token else
                   "That token is neither the server admin token nor the admin token of "
                   + (f"tenant “{tenant_id}”." if tenant_id else "a tenant."))
        return _login_page(request, status=401, error=message, next_url=next_url)
    brake.succeeded(client)
    hours = request.app.state.settings.console_session_hours
    value, session = keys.issue(found[0], found[1], hours)
    target = next_url if session.admin or next_url.startswith(f"/console/t/{session.scope}") else "/console"
    response = redirect(target)
    response.set_cookie(auth.COOKIE, value, path="/console", httponly=True, samesite="strict",
                        secure=_secure(request), max_age=int(hours * 3600))
    response.delete_cookie(auth.LOGIN_COOKIE, path="/console")
    return response


@post("/logout", include_in_schema=False)
async def logout(request: Request) -> Response:
    session = await signed_in(request)
    await form_of(request, session)
    response = redirect("/console/login?msg=signed_out")
    response.delete_cookie(auth.COOKIE, path="/console")
    return response
