"""Serve the bundled Harbor & Pine sample site on 127.0.0.1 for `frontdesk quickstart` and the
end-to-end tests: placeholders filled in, real validators (ETag, Last-Modified, 304)."""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.server
import mimetypes
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

SITE_DIR = Path(__file__).resolve().parent / "site"
PLACEHOLDER_ORIGIN = "http://127.0.0.1:8780"
_REWRITTEN = (".html", ".xml", ".txt")


class DemoSite:
    def __init__(self, frontdesk_origin: str = "", widget_key: str = "", port: int = 0,
                 root: Path = SITE_DIR) -> None:
        self.root = root
        self.frontdesk_origin = frontdesk_origin
        self.widget_key = widget_key
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self.do_GET(head=True)

            def do_GET(self, head: bool = False) -> None:
                path = unquote(urlsplit(self.path).path)
                file = site.resolve(path)
                if file is None:
                    body = b"<!doctype html><title>Not found</title><h1>Not found</h1>"
                    self._send(404, body, "text/html; charset=utf-8", {}, head)
                    return
                if file.is_dir():
                    self._send(301, b"", "text/plain", {"Location": path.rstrip("/") + "/"}, head)
                    return
                body = site.render(file)
                etag = '"' + hashlib.sha256(body).hexdigest()[:24] + '"'
                mtime = int(file.stat().st_mtime)
                headers = {"ETag": etag, "Last-Modified": email.utils.formatdate(mtime, usegmt=True),
                           "Cache-Control": "no-cache"}
                if self.headers.get("If-None-Match") == etag:
                    self._send(304, b"", None, headers, True)
                    return
                content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
                if content_type.startswith("text/") or file.suffix in (".xml", ".json", ".svg"):
                    content_type += "; charset=utf-8"
                self._send(200, body, content_type, headers, head)

            def _send(self, status: int, body: bytes, content_type: str | None, headers: dict, head: bool) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0" if status == 304 else str(len(body)))
                self.end_headers()
                if not head and status != 304:
                    self.wfile.write(body)

        try:
            self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError:
            if not port:
                raise
            self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # preferred port busy
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def resolve(self, path: str) -> Path | None:
        target = (self.root / path.lstrip("/")).resolve()
        if self.root.resolve() not in (target, *target.parents):
            return None  # no escaping the site folder
        if target.is_dir():
            if not path.endswith("/"):
                return target
            target = target / "index.html"
        return target if target.is_file() else None

    def render(self, file: Path) -> bytes:
        body = file.read_bytes()
        if file.suffix in _REWRITTEN:
            body = (body.replace(PLACEHOLDER_ORIGIN.encode(), self.url.encode())
                    .replace(b"{{FRONTDESK_ORIGIN}}", self.frontdesk_origin.encode())
                    .replace(b"{{WIDGET_KEY}}", self.widget_key.encode()))
        return body

    def start(self) -> DemoSite:
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def serve_demo_site(frontdesk_origin: str = "", widget_key: str = "", port: int = 0) -> Iterator[DemoSite]:
    site = DemoSite(frontdesk_origin, widget_key, port).start()
    try:
        yield site
    finally:
        site.close()
