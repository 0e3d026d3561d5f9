"""Console sign-in: signed, expiring session cookies (never the token itself), per-session CSRF
tokens, short-lived preview capabilities for the widget preview, the signing key (kept in
DATA_DIR/console.secret unless configured) and a brake on repeated wrong tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time
from collections import deque
from pathlib import Path

import msgspec

from app.settings import Settings

COOKIE = "fd_console"
LOGIN_COOKIE = "fd_login"
CSRF_FIELD = "_csrf"
#: Wrong tokens allowed per client address in LOGIN_WINDOW seconds.
LOGIN_FAILURES = 10
LOGIN_WINDOW = 300.0
PREVIEW_SECONDS = 3600.0


class Session(msgspec.Struct, frozen=True):
    """What the cookie carries: who (`*` = server admin, else one tenant id), until when, a
    random nonce (the CSRF token derives from it) and a fingerprint of the credential, so a
    changed server token or a deleted tenant ends the session."""

    scope: str
    expires: float
    nonce: str
    fingerprint: str

    @property
    def admin(self) -> bool:
        return self.scope == "*"

    def reaches(self, tenant_id: str) -> bool:
        return self.admin or self.scope == tenant_id


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_secret(settings: Settings) -> bytes:
    """The configured key, else one made once (0600) in DATA_DIR and kept across restarts."""
    if settings.console_secret:
        return settings.console_secret.encode()
    path = Path(settings.data_dir) / "console.secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".console.secret.{os.getpid()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
        try:
            os.link(partial, path)  # another process may have won the race: keep its key
        except FileExistsError:
            pass
        finally:
            partial.unlink(missing_ok=True)
    return path.read_text().strip().encode()


def admin_fingerprint(admin_token: str) -> str:
    return hashlib.sha256(b"server-admin\x00" + admin_token.encode()).hexdigest()[:24]


def tenant_fingerprint(admin_token_hash: str) -> str:
    return hashlib.sha256(b"tenant\x00" + admin_token_hash.encode()).hexdigest()[:24]


class Keys:
    """Signs and checks everything the console hands to browsers."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, purpose: str, data: bytes) -> str:
        return _b64(hmac.new(self._secret, purpose.encode() + b"\x00" + data, hashlib.sha256).digest())

    def _seal(self, purpose: str, payload: bytes) -> str:
        body = _b64(payload)
        return f"{body}.{self._mac(purpose, body.encode())}"

    def _open(self, purpose: str, value: str) -> bytes | None:
        body, _, mac = value.partition(".")
        if not body or not mac or not hmac.compare_digest(mac, self._mac(purpose, body.encode())):
            return None
        try:
            return _unb64(body)
        except ValueError:
            return None

    def issue(self, scope: str, fingerprint: str, hours: float) -> tuple[str, Session]:
        session = Session(scope=scope, expires=round(time.time() + hours * 3600), nonce=secrets.token_urlsafe(18),
                          fingerprint=fingerprint)
        return self._seal("session", msgspec.json.encode(session)), session

    def session(self, value: str | None) -> Session | None:
        """The cookie's session if its signature holds and it has not expired."""
        if not value or len(value) > 1000:
            return None
        payload = self._open("session", value)
        if payload is None:
            return None
        try:
            session = msgspec.json.decode(payload, type=Session)
        except msgspec.MsgspecError:
            return None
        return session if session.expires > time.time() else None

    def csrf(self, session: Session) -> str:
        return self._mac("csrf", session.nonce.encode())

    def check_csrf(self, session: Session, token: str) -> bool:
        return bool(token) and hmac.compare_digest(token, self.csrf(session))

    def login_csrf(self, nonce: str) -> str:
        return self._mac("login", nonce.encode())

    def check_login_csrf(self, nonce: str | None, token: str) -> bool:
        return bool(nonce) and bool(token) and hmac.compare_digest(token, self.login_csrf(nonce or ""))

    def preview(self, tenant_id: str, session: Session) -> str:
        """A capability for the widget preview's chat calls (the widget sends no cookies)."""
        expires = min(session.expires, time.time() + PREVIEW_SECONDS)
        return self._seal("preview", msgspec.json.encode([tenant_id, round(expires), session.fingerprint]))

    def preview_tenant(self, token: str) -> tuple[str, str] | None:
        """(tenant id, credential fingerprint) of a valid, unexpired preview capability."""
        payload = self._open("preview", token)
        if payload is None:
            return None
        try:
            tenant_id, expires, fingerprint = msgspec.json.decode(payload, type=tuple[str, float, str])
        except msgspec.MsgspecError:
            return None
        return (tenant_id, fingerprint) if expires > time.time() else None


class LoginBrake:
    """Counts wrong tokens per client address; too many in a window are refused for a while."""

    def __init__(self, limit: int = LOGIN_FAILURES, window: float = LOGIN_WINDOW) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.setdefault(client, deque())
        while times and now - times[0] > self.window:
            times.popleft()
        return times

    def blocked_for(self, client: str) -> float:
        now = time.monotonic()
        with self._lock:
            times = self._recent(client, now)
            return self.window - (now - times[0]) if len(times) >= self.limit else 0.0

    def failed(self, client: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._recent(client, now).append(now)
            if len(self._failures) > 10_000:  # bound memory under a spray of addresses
                self._failures = {k: v for k, v in self._failures.items() if v}

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)
