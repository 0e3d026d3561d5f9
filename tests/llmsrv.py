"""A local OpenAI-compatible chat-completions server for tests: speaks the real streaming wire
format (chunked `data:` lines, `[DONE]`) and misbehaves on request, selected by `server.mode`:

- transport failures: http_500, hang, broken (connection cut), error_midstream;
- what a weak model says (`reply()`, read from the request's own prompt): grounded (the first
  source's opening sentences), echo_markup (the prompt's <<SYS>> and <source> blocks),
  markup_later, invent_price (a price no source has), invent_price_later, wrong_language,
  not_on_site (the sentence the prompt asks for), split_figure (a source's price cut across
  chunks), script (`server.script`, a list of pieces)."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
import time
from collections.abc import Iterator

#: Five short sentences: the grounding guard (app/grounding.py) releases a reply sentence by
#: sentence, so a stream shows growth per sentence; none names a figure or an identifier.
TOKENS = ["According ", "to ", "the ", "site, ", "you ", "can ", "upload ", "with ", "twine ", "[1]", ". ",
          "Use ", "twine ", "upload ", "to ", "send ", "the ", "files ", "[1]", ". ",
          "It ", "checks ", "each ", "file ", "first ", "[1]", ". ",
          "Then ", "it ", "sends ", "them ", "[1]", ". ",
          "That ", "is ", "all ", "[1]", "."]
FAILURES = ("http_500", "hang", "broken", "error_midstream")


def _sources(body: dict) -> list[tuple[str, str]]:
    """(id, text) of every <source> block of the request's last user message."""
    content = (body.get("messages") or [{}])[-1].get("content", "")
    return re.findall(r'<source id="(\d+)"[^>]*>\n(.*?)\n</source>', content, re.S)


def _words(text: str) -> list[str]:
    return [w + " " for w in text.split()]


def reply(mode: str, body: dict, script: list[str] | None = None) -> list[str]:
    """The pieces a model in `mode` streams for this request."""
    sources = _sources(body)
    number, text = sources[0] if sources else ("1", "The site has a page about it.")
    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.split()) >= 4]
    opening = [s.rstrip(".!?") for s in sentences[:2]] or ["The site has a page about it"]
    grounded = [piece for s in opening for piece in [*_words(s)[:-1], _words(s)[-1].strip(), f" [{number}]", ". "]]
    system = (body.get("messages") or [{}])[0].get("content", "")
    if mode == "grounded":
        return grounded
    if mode == "echo_markup":
        return ["<<SYS>>\n", *_words(system.split("\n", 1)[0]), "\n<</SYS>>\n",
                f'<source id="{number}" ', 'title="x">\n', *_words(text[:80]), "\n</source>"]
    if mode == "markup_later":
        return [*grounded[: grounded.index(". ") + 1], "\n", "<source ", 'id="9">', " More ", "text."]
    if mode == "invent_price":
        return ["The ", "price ", "is ", "$47", ".13 ", f"[{number}]", "."]
    if mode == "invent_price_later":
        return [*grounded[: grounded.index(". ") + 1], "It ", "costs ", "$47", ".13 ", f"[{number}]", "."]
    if mode == "wrong_language":
        return _words("Die Antwort steht auf der Webseite, bitte lesen Sie die Seite dazu sorgfältig durch.")
    if mode == "not_on_site":
        asked = re.search(r"nothing else: (.+)", system)
        return _words(asked.group(1) if asked else "Not on this site.")
    if mode == "split_figure":  # "$9.50" arrives as "$9", ".", "50"
        price = re.search(r"[$€£]\s?(\d+)[.,](\d{2})", " ".join(t for _, t in sources))
        if price is None:
            return grounded
        whole, cents = price.group()[: -len(price.group(2)) - 1], price.group(2)
        return ["The ", "price ", "is ", whole, price.group()[len(whole)], cents, f" [{number}]", ". ", *grounded]
    if mode == "script":
        return list(script or [])
    return TOKENS


class LLMServer:
    def __init__(self) -> None:
        self.mode = "ok"  # ok, one of FAILURES, or a mode of reply()
        self.script: list[str] | None = None
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
                tokens = TOKENS[:3] if mode in ("broken", "error_midstream") else reply(mode, body, server.script)
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
