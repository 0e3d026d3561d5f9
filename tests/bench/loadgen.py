"""The answer benchmark's load driver: each stream one keep-alive HTTP/1.1 connection over asyncio
streams, its `/v1/chat` answers read as chunked Server-Sent Events.

The client runs on the same two cores as the server it measures. httpx spent ~2 ms of CPU an answer
there (~15% of the machine at ~150 answers a second) and queued streams in its own pool, adding to
the TTFT it reported; this driver spends ~0.4 ms. It speaks only what `frontdesk serve` answers
with: a status line, headers, and a chunked or Content-Length body."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _body_chunks(reader: asyncio.StreamReader, headers: dict[str, str]):
    """The body as it comes: chunk by chunk (chunked), or whole (Content-Length)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers are sent
                return
            data = await reader.readexactly(size + 2)
            yield data[:-2]
    else:
        yield await reader.readexactly(int(headers.get("content-length", "0")))


async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, question: str, key: str,
              origin: str) -> tuple[dict, bool]:
    """One question on an open connection: (the result as `bench_answer._one` gives it, whether
    the connection may be used again)."""
    body = json.dumps({"key": key, "question": question}).encode()
    started = time.perf_counter()
    first = None
    writer.write(b"POST /v1/chat HTTP/1.1\r\nHost: bench\r\nOrigin: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (origin.encode(), len(body), body))
    status, headers = await _read_head(reader)
    reusable = headers.get("connection", "").lower() != "close"
    if status != 200:
        async for _ in _body_chunks(reader, headers):
            pass
        return {"status": status}, reusable
    pending, server, failed = b"", {}, False
    async for chunk in _body_chunks(reader, headers):
        pending = (pending + chunk).replace(b"\r\n", b"\n")  # the server ends SSE lines in CRLF
        *events, pending = pending.split(b"\n\n")
        for event in events:
            name, data = "", b""
            for line in event.split(b"\n"):
                if line.startswith(b"event:"):
                    name = line[6:].strip().decode()
                elif line.startswith(b"data:"):
                    data = line[5:].strip()
            if name == "token" and first is None:
                first = time.perf_counter()
            elif name == "done":
                server = json.loads(data)
            elif name == "error":
                failed = True
    end = time.perf_counter()
    if failed:
        return {"status": 200, "error": True}, reusable
    return {"status": 200, "client_ttft_ms": ((first or end) - started) * 1000,
            "client_total_ms": (end - started) * 1000, "server_ttft_ms": server.get("ttft_ms"),
            "server_total_ms": server.get("latency_ms")}, reusable


async def load(bases: Sequence[str], key: str, origin: str, concurrency: int, requests: int,
               questions: Sequence[str]) -> list[dict]:
    """`requests` questions from `concurrency` streams at once, each new (`(#n)` appended); with
    several base URLs (nodes), request n goes to base n mod their count, as a load balancer would
    send it. A failed request counts as an error and its stream reconnects."""
    results: list[dict] = []
    queue = list(range(requests))

    async def stream() -> None:
        connections: dict[str, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        try:
            while queue:
                n = queue.pop()
                base = bases[n % len(bases)]
                try:
                    if base not in connections:
                        host, port = base.removeprefix("http://").rsplit(":", 1)
                        connections[base] = await asyncio.open_connection(host, int(port))
                    reader, writer = connections[base]
                    result, reusable = await ask(reader, writer, questions[n % len(questions)] + f" (#{n})",
                                                 key, origin)
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    result, reusable = {"status": 0, "error": type(exc).__name__}, False
                results.append(result)
                if not reusable and base in connections:
                    connections.pop(base)[1].close()
        finally:
            for _, writer in connections.values():
                writer.close()

    await asyncio.gather(*(stream() for _ in range(concurrency)))
    return results
