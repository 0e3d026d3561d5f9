"""The site owner's console at /console: server-rendered pages (Jinja templates through Litestar),
a session cookie signed in with the server or a tenant admin token, CSRF tokens on every form and a
strict Content-Security-Policy. `ROUTES` and `template_config()` are what the app factory mounts."""

from app.console.common import template_config
from app.console.routes import ROUTES

__all__ = ["ROUTES", "template_config"]
