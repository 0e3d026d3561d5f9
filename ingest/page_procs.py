"""A crawl's CPU-bound page work — extraction, then cleaning, chunking and scrubbing the raw HTML —
in child processes beside the crawl's own (issue 15).

The page path is pure Python: in one process it holds the interpreter's lock and used one of two
cores while fetching, writing and the event loop waited their turn (~80 ms of CPU a fastapi page,
~600 pages a minute). A child process takes the two heavy steps, so the crawl's own process is
left with fetching, the junk verdict and the write. Both steps are pure functions of their
inputs, sent and returned as msgpack, so a page comes out the same wherever it was made
(tests/test_page_procs.py compares them on 52 fixture and hostile pages, and a whole crawl).
With `processes` 0, or when a child dies, the same functions run in a thread of this process,
as before.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import logging.handlers
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType

import anyio
import msgspec

from ingest.document import Document
from ingest.embed import shared_embedder
from ingest.extract import extract
from ingest.indexer import PreparedPage, prepare_page
from store.config import CleanSettings

log = logging.getLogger(__name__)


_PR_SET_PDEATHSIG = 1


def _child_started(parent: int, queue: multiprocessing.Queue, level: int) -> None:
    """A child dies with the crawl's process (killed -9, it would otherwise wait for pages
    forever), and its log records go to that process, whose handlers write them as its own."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(queue)]
    root.setLevel(level)


class _AsLogged(logging.Handler):
    """Hands a child's record to the logger it was made by, in this process."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _extract_here(body: bytes, url: str, headers: dict[str, str], encoding: str | None) -> bytes:
    return msgspec.msgpack.encode(extract(body, url, headers=headers, encoding=encoding))


def _prepare_here(doc: bytes, clean: bytes, model: str, target_tokens: int, html: bytes | None,
                  encoding: str | None, previous_hash: str | None) -> bytes:
    counter = shared_embedder(model)  # only its tokenizer is loaded: the model's weights never are
    prepared = prepare_page(msgspec.msgpack.decode(doc, type=Document),
                            msgspec.msgpack.decode(clean, type=CleanSettings), counter.count_tokens,
                            target_tokens, html=html, encoding=encoding, previous_hash=previous_hash)
    return msgspec.msgpack.encode(prepared)


class PageProcesses:
    """`extract` and `prepare` for one crawl, in `processes` child processes (0: in threads).

    A child is started with the first page (spawned: this process has threads, which fork would
    copy in whatever state they are in) and stopped when the crawl ends. If one dies, the pool is
    given up and the rest of the crawl runs in threads (`fallbacks` counts the pages that noticed).
    """

    def __init__(self, processes: int, model: str) -> None:
        self.processes = max(0, processes)
        self.model = model
        self.fallbacks = 0
        self._pool: ProcessPoolExecutor | None = None
        self._listener: logging.handlers.QueueListener | None = None
        self._closed = False

    async def __aenter__(self) -> PageProcesses:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the children (pages still in them are abandoned); later pages run in threads."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    async def extract(self, body: bytes, url: str, headers: dict[str, str], encoding: str | None) -> Document:
        """`ingest.extract.extract` of a fetched page."""
        data = await self._run(_extract_here, body, url, headers, encoding)
        if data is not None:
            return msgspec.msgpack.decode(data, type=Document)
        return await anyio.to_thread.run_sync(lambda: extract(body, url, headers=headers, encoding=encoding))

    async def prepare(self, doc: Document, clean: CleanSettings, target_tokens: int, *, html: bytes | None,
                      encoding: str | None, previous_hash: str | None) -> PreparedPage | None:
        """`ingest.indexer.prepare_page` in a child; None without one (the write prepares it)."""
        data = await self._run(_prepare_here, msgspec.msgpack.encode(doc), msgspec.msgpack.encode(clean),
                               self.model, target_tokens, html, encoding, previous_hash)
        return msgspec.msgpack.decode(data, type=PreparedPage) if data is not None else None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        logs = context.Queue()
        self._listener = logging.handlers.QueueListener(logs, _AsLogged())
        self._listener.start()
        self._pool = ProcessPoolExecutor(self.processes, mp_context=context, initializer=_child_started,
                                         initargs=(os.getpid(), logs, logging.getLogger().getEffectiveLevel()))

    async def _run(self, function: Callable[..., bytes], *args: object) -> bytes | None:
        if self._pool is None and self.processes and not self._closed:
            self._start()
        pool = self._pool
        if pool is None:
            return None
        try:
            return await asyncio.wrap_future(pool.submit(function, *args))
        except (BrokenProcessPool, RuntimeError) as exc:  # RuntimeError: submitted after a shutdown
            self.fallbacks += 1
            if self._pool is pool:
                log.warning("page process stopped (%s): the crawl goes on in threads", exc)
                self.close()
            return None
