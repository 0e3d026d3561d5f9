"""A local OpenAI-compatible chat-completions server for tests: speaks the real streaming wire
format (chunked `data:` lines, `[DONE]`) and misbehaves on request (500, hang, broken stream,
error mid-stream), selected by `server.mode`."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator

TOKENS = ["According ", "to ", "the ", "site, ", "you ", "can ", "upload ", "with ", "twine ", "[1]", "."]


class LLMServer:
    def __init__(self) -> None:
        self.mode = "ok"  # ok | http_500 | hang | broken | error_midstream
        self.delay = 0.15
        self.requests: list[dict] = []
        self.stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("authorization", "")})
                mode = server.mode
                if mode == "http_500":
                    payload = b'{"error": {"message": "boom"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if mode == "hang":
                    server.stop.wait(30)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                tokens = TOKENS[:3] if mode in ("broken", "error_midstream") else TOKENS
                for text in tokens:
                    chunk = {"id": "c1", "object": "chat.completion.chunk",
                             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
                    self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                    time.sleep(server.delay)
                if mode == "broken":
                    self.close_connection = True
                    self.wfile.flush()
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(2)
                    return
                if mode == "error_midstream":
                    self._chunk(b'data: {"error": {"message": "model crashed"}}\n\n')
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)


@contextlib.contextmanager
def serve_llm() -> Iterator[LLMServer]:
    server = LLMServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.httpd.shutdown()
        server.httpd.server_close()
