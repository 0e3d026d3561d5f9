"""What every console page shares: the templates, security headers and status messages, `page()` and
`redirect()`, and who is asking — the signed session, the tenants it reaches, forms checked for
their CSRF token and origin — with the helpers that read form fields."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from jinja2 import Environment, FileSystemLoader
from litestar import MediaType, Request
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.template.config import TemplateConfig

from app.console import auth, views
from store.errors import Forbidden, FrontdeskError, InvalidTenantId, NotFound, Unauthorized
from store.tenants import Tenant, validate_tenant_id

HERE = Path(__file__).resolve().parent
STATIC = {name: HERE / "static" / name for name in ("console.css", "console.js")}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}
MESSAGES = {
    "signed_out": "You are signed out.",
    "crawl_started": "The crawl has started.",
    "crawl_cancelled": "The crawl is being cancelled.",
    "no_crawl": "No crawl was running.",
    "published": "The curated answer is published and the gap is resolved.",
    "dismissed": "The gap is dismissed.",
    "curated_saved": "The curated answer is saved.",
    "curated_deleted": "The curated answer is deleted.",
    "config_saved": "The site config is saved.",
    "webhook_updated": "The webhook is updated.",
    "webhook_deleted": "The webhook is deleted.",
    "webhook_test": "A webhook.test delivery is queued.",
}


class SignInRequired(Unauthorized):
    code = "sign_in_required"


def template_config() -> TemplateConfig:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    views.install_filters(env)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(env))


def console_keys(request: Request) -> auth.Keys:
    state = request.app.state
    keys = getattr(state, "console_keys", None)
    if keys is None:
        keys = state.console_keys = auth.Keys(auth.load_secret(state.settings))
        state.console_brake = auth.LoginBrake()
    return keys


def _static_version() -> str:
    digest = hashlib.sha256()
    for path in STATIC.values():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


_VERSION = _static_version()


def page(request: Request, name: str, *, status: int = 200, session: auth.Session | None = None,
         tenant: Tenant | None = None, section: str = "", **context: Any) -> Template:
    keys = console_keys(request)
    return Template(template_name=name, status_code=status, headers=SECURITY_HEADERS, media_type=MediaType.HTML,
                    context={"session": session, "csrf": keys.csrf(session) if session else "",
                             "csrf_field": auth.CSRF_FIELD, "tenant": tenant, "tenant_id": tenant.id if tenant else "",
                             "section": section, "version": _VERSION,
                             "message": MESSAGES.get(request.query_params.get("msg", "")), **context})


def redirect(path: str) -> Redirect:
    return Redirect(path=path, status_code=303, headers=SECURITY_HEADERS)


# -- who is asking ---------------------------------------------------------------------------


def current_session(request: Request) -> auth.Session | None:
    session = console_keys(request).session(request.cookies.get(auth.COOKIE))
    if session is None:
        return None
    state = request.app.state
    if session.admin:
        token = state.settings.admin_token
        ok = bool(token) and session.fingerprint == auth.admin_fingerprint(token)
    else:
        registry = state.ctx.registry
        try:
            ok = registry.exists(session.scope) and session.fingerprint == auth.tenant_fingerprint(
                registry.get(session.scope).admin_token_hash)
        except FrontdeskError:
            ok = False
    return session if ok else None


async def signed_in(request: Request) -> auth.Session:
    session = await anyio.to_thread.run_sync(current_session, request)
    if session is None:
        raise SignInRequired("sign in to use the console")
    return session


async def tenant_for(request: Request, tenant_id: str) -> tuple[auth.Session, Tenant]:
    """The session and the tenant, if the session reaches it. A tenant session gets the same
    refusal for another tenant and for one that does not exist."""
    session = await signed_in(request)
    try:
        validate_tenant_id(tenant_id)
    except InvalidTenantId:
        raise (NotFound("there is no such tenant") if session.admin else Forbidden(
            "this sign-in reaches only its own tenant")) from None
    if not session.reaches(tenant_id):
        raise Forbidden("this sign-in reaches only its own tenant")
    registry = request.app.state.ctx.registry
    if not registry.exists(tenant_id):
        raise NotFound(f"there is no tenant {tenant_id}")
    return session, await anyio.to_thread.run_sync(registry.get, tenant_id)


async def form_of(request: Request, session: auth.Session):
    """The posted form, after the CSRF token and the request's origin are checked."""
    origin = request.headers.get("origin")
    if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden("a form from another site was refused")
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise Forbidden("a form from another site was refused")
    form = await request.form()
    if not console_keys(request).check_csrf(session, str(form.get(auth.CSRF_FIELD) or "")):
        raise Forbidden("the form's security token is missing or stale: reload the page and try again")
    return form


def form_text(form, name: str, limit: int = 10_000) -> str:
    value = form.get(name)
    return str(value).strip()[:limit] if value is not None else ""


def form_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def base_url(request: Request) -> str:
    public = request.app.state.settings.public_url.rstrip("/")
    return public or f"{request.url.scheme}://{request.headers.get('host', '')}"
