"""A real HTTP/1.1 test server: serves a fixture site on 127.0.0.1 with validators and gzip,
logs every request, and injects faults (errors, slowness, redirects, bombs) by path at runtime.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import gzip
import hashlib
import http.server
import mimetypes
import socket
import socketserver
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
    ".gz": "application/gzip",
    ".json": "application/json",
    ".pdf": "application/pdf",
    ".css": "text/css",
    ".js": "text/javascript",
}
_TEXTUAL = ("text/", "application/xml", "application/json", "application/xhtml+xml")
_FILLER = (b"<p>All work and no play makes Jack a dull boy.</p>\n" * 1400)[:65536]


@dataclass
class Fault:
    """What a path answers instead of its file. Fields combine; unset fields change nothing.

    Precedence: ``redirect``, then ``gzip_bomb``, then ``huge``, then ``status``/``body``,
    else the file itself (with ``content_type``, ``headers`` and ``dribble`` applied).
    """

    status: int | None = None
    """Answer with this status (body: ``body`` or a short HTML message)."""
    times: int | None = None
    """Apply the fault to the first N requests only, then serve normally (fail-N-then-succeed)."""
    retry_after: str | None = None
    """Retry-After header value, for 429 / 503."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    dribble: float | None = None
    """Seconds between single body bytes: a slow-loris server."""
    redirect: str | None = None
    """Location to redirect to (status 302 unless ``status`` says otherwise)."""
    content_type: str | None = None
    """Content-Type to send instead of the right one."""
    huge: int | None = None
    """Stream this many bytes of filler HTML."""
    chunked: bool = False
    """With ``huge``: send no Content-Length (chunked transfer encoding)."""
    gzip_bomb: int | None = None
    """Send ``Content-Encoding: gzip`` of a small payload that expands to this many bytes."""
    body: bytes | Callable[[str], bytes] | None = None
    """Body to send, or a callable of the request target (path and query) returning it."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers."""
    hits: int = 0
    """Requests this fault has seen (set by the server)."""


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    method: str
    host: str
    """The Host header."""
    path: str
    query: str
    status: int
    conditional: bool
    """The request carried If-None-Match or If-Modified-Since."""
    body_bytes: int
    """Body bytes actually written to the socket."""
    gzip: bool
    started: float
    """time.monotonic() when the request line was read."""
    finished: float


class VirtualFiles(dict[str, bytes]):
    """Paths served instead of the folder's files; each remembers when it was last set, which
    becomes its Last-Modified (so replacing one simulates a site update)."""

    def __init__(self) -> None:
        super().__init__()
        self.mtimes: dict[str, int] = {}

    def __setitem__(self, path: str, data: bytes) -> None:
        super().__setitem__(path, data)
        self.mtimes[path] = int(time.time())


class SiteServer:
    """The server's state, shared with the handler threads. Start it with ``serve_site``."""

    def __init__(self, root: Path | None, origin_to_rewrite: str | None) -> None:
        self.root = root.resolve() if root is not None else None
        self.faults: dict[str, Fault] = {}
        self.files = VirtualFiles()
        self.requests: list[Hit] = []
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self._in_flight = 0
        self._lock = threading.Condition()
        self._gzip_cache: dict[str, bytes] = {}
        self._httpd = _HTTPServer(self)
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._rewrite = (
            (origin_to_rewrite.encode(), self.url.encode()) if origin_to_rewrite else None
        )
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- for tests ---------------------------------------------------------------------------

    def hits(self, path: str | None = None) -> list[Hit]:
        with self._lock:
            return [hit for hit in self.requests if path is None or hit.path == path]

    def statuses(self, path: str | None = None) -> Counter[int]:
        return Counter(hit.status for hit in self.hits(path))

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no request is being handled (a response can reach the client before its
        handler logs it); False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._in_flight == 0, timeout)

    def reset(self) -> None:
        """Forget the request log and in-flight peak (faults and files stay)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stopping.set()  # wakes delayed and dribbling handlers
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler -----------------------------------------------------------------

    def enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def leave(self, hit: Hit) -> None:
        with self._lock:
            self._in_flight -= 1
            self.requests.append(hit)
            self._lock.notify_all()

    def fault_for(self, path: str) -> Fault | None:
        fault = self.faults.get(path)
        if fault is None:
            return None
        with self._lock:
            fault.hits += 1
            spent = fault.times is not None and fault.hits > fault.times
        return None if spent else fault

    def lookup(self, path: str) -> tuple[bytes, int, str] | str | None:
        """(body, mtime, content type) for a path, a redirect target for a bare directory, or None."""
        if path in self.files:
            return self._prepared(self.files[path], self.files.mtimes[path], path)
        if self.root is None:
            return None
        candidate = (self.root / path.lstrip("/")).resolve()
        if not candidate.is_relative_to(self.root):
            return None
        if candidate.is_dir():
            if not path.endswith("/"):
                return path + "/"
            candidate = candidate / "index.html"
        if not candidate.is_file():
            return None
        return self._prepared(
            candidate.read_bytes(), int(candidate.stat().st_mtime), candidate.name
        )

    def gzipped(self, etag: str, data: bytes) -> bytes:
        with self._lock:
            cached = self._gzip_cache.get(etag)
        if cached is None:
            cached = gzip.compress(data, mtime=0)
            with self._lock:
                self._gzip_cache[etag] = cached
        return cached

    def _prepared(self, data: bytes, mtime: int, name: str) -> tuple[bytes, int, str]:
        content_type = content_type_for(name)
        if self._rewrite and content_type.startswith(_TEXTUAL):
            data = data.replace(*self._rewrite)
        return data, mtime, content_type


def content_type_for(name: str) -> str:
    """Content-Type by extension; names without one (``/``, ``/calendar``) are HTML pages."""
    suffix = Path(name).suffix.lower()
    if not suffix:
        return "text/html; charset=utf-8"
    return _CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


@functools.lru_cache(maxsize=4)
def gzip_bomb(expanded: int) -> bytes:
    """A gzip stream of zeros that expands to ``expanded`` bytes (about 1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = [compressor.compress(block) for _ in range(expanded // len(block))]
    parts.append(compressor.compress(bytes(expanded % len(block))))
    parts.append(compressor.flush())
    return b"".join(parts)


class _HTTPServer(http.server.HTTPServer):
    """One daemon thread per connection, tracked so ``close`` can cut them off promptly."""

    allow_reuse_address = True

    def __init__(self, site: SiteServer) -> None:
        self.site = site
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the FQDN, which can stall on a machine without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), daemon=True
        )
        with self._connections_lock:
            self._connections[request] = thread
        thread.start()

    def _serve_connection(self, request: socket.socket, client_address: object) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:
            pass  # the client went away mid-response: that is what many tests do on purpose
        finally:
            self.shutdown_request(request)
            with self._connections_lock:
                self._connections.pop(request, None)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # failures are visible in the request log; tracebacks on stderr help nobody

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections.items())
        for sock, _ in connections:
            with contextlib.suppress(OSError):  # already closed by its handler
                sock.shutdown(socket.SHUT_RDWR)
        for _, thread in connections:
            thread.join(timeout=2)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sitesrv/1.0"
    timeout = 10  # idle keep-alive connections are closed after this many seconds
    # Headers and body go out in separate writes; with Nagle on, the second waits for the
    # client's delayed ACK (40 ms a request on Linux).
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    # -- bookkeeping -------------------------------------------------------------------------

    def _handle(self, head: bool) -> None:
        site = self.server.site
        self._head = head
        self._status = 0
        self._sent = 0
        self._chunked = False
        self._gzip = False
        started = time.monotonic()
        parts = urlsplit(self.path)
        site.enter()
        try:
            self._respond(unquote(parts.path) or "/", self.path)
        except OSError:
            self.close_connection = True
        except Exception:  # a broken fault callable: answer 500 rather than kill the thread
            self.close_connection = True
            if self._status == 0:
                self._send(500, b"sitesrv: fault handler failed", {"Content-Type": "text/plain"})
        finally:
            conditional = bool(
                self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since")
            )
            site.leave(
                Hit(
                    method=self.command,
                    host=self.headers.get("Host", ""),
                    path=unquote(parts.path) or "/",
                    query=parts.query,
                    status=self._status,
                    conditional=conditional,
                    body_bytes=self._sent,
                    gzip=self._gzip,
                    started=started,
                    finished=time.monotonic(),
                )
            )

    def _start(self, status: int, headers: dict[str, str], length: int | None) -> None:
        self._status = status
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if length is None and status != 304:
            self._chunked = not self._head
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _write(self, data: bytes) -> None:
        if self._head or not data:
            return
        if self._chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self._sent += len(data)

    def _end(self) -> None:
        if self._chunked:
            self.wfile.write(b"0\r\n\r\n")

    # -- responses ---------------------------------------------------------------------------

    def _respond(self, path: str, target: str) -> None:
        site = self.server.site
        fault = site.fault_for(path)
        if fault is not None and fault.delay and site.stopping.wait(fault.delay):
            self.close_connection = True
            return
        if fault is not None and fault.redirect is not None:
            headers = {"Location": fault.redirect, **fault.headers}
            self._send(fault.status or 302, b"", headers)
        elif fault is not None and fault.gzip_bomb is not None:
            headers = {"Content-Type": fault.content_type or "text/html; charset=utf-8"}
            headers |= {"Content-Encoding": "gzip", **fault.headers}
            self._send(fault.status or 200, gzip_bomb(fault.gzip_bomb), headers)
        elif fault is not None and fault.huge is not None:
            self._send_huge(fault)
        elif fault is not None and (fault.status is not None or fault.body is not None):
            self._send_custom(fault, target)
        else:
            self._send_file(path, target, fault)

    def _send(
        self, status: int, body: bytes, headers: dict[str, str], dribble: float | None = None
    ) -> None:
        self._start(status, headers, len(body))
        if dribble is None:
            self._write(body)
            return
        for index in range(len(body)):
            self._write(body[index : index + 1])
            if self.server.site.stopping.wait(dribble):
                self.close_connection = True
                return

    def _send_custom(self, fault: Fault, target: str) -> None:
        status = fault.status or 200
        body = fault.body(target) if callable(fault.body) else fault.body
        if body is None:
            body = f"<html><body><h1>{status}</h1></body></html>".encode()
        headers = {"Content-Type": fault.content_type or "text/html; charset=utf-8"}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        self._send(status, body, headers | fault.headers, fault.dribble)

    def _send_huge(self, fault: Fault) -> None:
        assert fault.huge is not None
        headers = {
            "Content-Type": fault.content_type or "text/html; charset=utf-8",
            **fault.headers,
        }
        self._start(fault.status or 200, headers, None if fault.chunked else fault.huge)
        remaining = fault.huge
        while remaining > 0 and not self.server.site.stopping.is_set():
            block = _FILLER[: min(remaining, len(_FILLER))]
            self._write(block)
            remaining -= len(block)
        self._end()

    def _send_file(self, path: str, target: str, fault: Fault | None) -> None:
        site = self.server.site
        found = site.lookup(path)
        if isinstance(found, str):
            query = urlsplit(target).query
            self._send(301, b"", {"Location": found + ("?" + query if query else "")})
            return
        if found is None:
            self._send(
                404, b"<html><body><h1>Not found</h1></body></html>", {"Content-Type": "text/html"}
            )
            return
        data, mtime, content_type = found
        etag = '"' + hashlib.sha256(data).hexdigest()[:20] + '"'
        headers = {
            "Content-Type": fault.content_type if fault and fault.content_type else content_type,
            "Last-Modified": email.utils.formatdate(mtime, usegmt=True),
            "Vary": "Accept-Encoding",
        }
        if fault is not None:
            headers |= fault.headers
        wants_gzip = "gzip" in self.headers.get("Accept-Encoding", "") and len(data) > 256
        if wants_gzip and content_type.startswith(_TEXTUAL):
            self._gzip = True
            data = site.gzipped(etag, data)
            headers["Content-Encoding"] = "gzip"
            headers["ETag"] = etag[:-1] + '-gz"'
        else:
            headers["ETag"] = etag
        if self._not_modified(etag, mtime):
            self._start(
                304,
                {k: v for k, v in headers.items() if k in ("ETag", "Last-Modified", "Vary")},
                None,
            )
            return
        self._send(200, data, headers, fault.dribble if fault else None)

    def _not_modified(self, etag: str, mtime: int) -> bool:
        """RFC 9110: If-None-Match wins over If-Modified-Since; either representation's tag matches."""
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match:
            tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
            return "*" in tags or etag in tags or etag[:-1] + '-gz"' in tags
        if_modified_since = self.headers.get("If-Modified-Since")
        if if_modified_since:
            try:
                since = email.utils.parsedate_to_datetime(if_modified_since).timestamp()
            except (TypeError, ValueError):
                return False
            return mtime <= since
        return False


@contextlib.contextmanager
def serve_site(
    root: Path | None = None, origin_to_rewrite: str | None = None
) -> Iterator[SiteServer]:
    """Serve ``root`` (and ``server.files``) on 127.0.0.1 at a free port until the block ends.

    ``origin_to_rewrite`` (e.g. ``http://127.0.0.1:8766``) is replaced by the server's own
    origin in every textual body, so the fixture's absolute URLs point back at it.
    """
    server = SiteServer(root, origin_to_rewrite)
    server.start()
    try:
        yield server
    finally:
        server.close()
