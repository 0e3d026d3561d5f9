"""Server settings: one frozen struct read from FRONTDESK_* environment variables.

Every field's docstring is its documentation (the README's configuration table is made from
them). `Settings.from_env()` refuses bad values with the variable named.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from app.workers import resolve_crawl_processes
from store.errors import InvalidConfig


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    data_dir: str = "./data"
    """Where tenant files (`tenants/<id>.db`) and the model cache live."""
    host: str = "127.0.0.1"
    """Interface `frontdesk serve` binds to."""
    port: int = 8000
    """Port `frontdesk serve` listens on."""
    workers: int = 0
    """Worker processes `frontdesk serve` runs; 0 (the default) = one per core, as many as memory
    allows at ~350 MB each, at least one (README, "Workers": two workers answered 1.2-1.9x as many
    questions a second as one on two cores)."""
    answer_threads: int = 0
    """Questions one server worker retrieves and ranks at once, in worker threads; the others wait
    their turn. 0 (the default): on the SQLite files one at a time on the worker's event loop
    itself, where retrieval is CPU in one interpreter and threads only take the lock from each other
    and from the loop (in a thread only while new content's in-memory indexes are built; README,
    "Workers"); on PostgreSQL, where it also waits on the database, the connection pool's size
    (`database_pool_size`: each holds a connection)."""
    admin_token: str = ""
    """Server admin bearer token for /admin and /a2a; empty disables the server-wide token."""
    model: str = "minilm-l6-v2-int8"
    """Default embedding model for new tenants."""
    model_cache_dir: str = ""
    """Where the int8 model copy is made once and kept; default DATA_DIR/models."""
    embed_threads: int = 0
    """onnxruntime threads for embedding; 0 means one per core."""
    crawl_processes: int = -1
    """Child processes that extract, clean and chunk a crawl's pages beside the process that
    fetches and writes them (ingest/page_procs.py); 0 = none, in threads of that process; -1 (the
    default) = one fewer than the cores, at most 2 (none on one core). Each holds ~130 MB while
    fetching runs; on two cores one made the fastapi fixture searchable ~30% sooner (README, "Speed")."""
    embed_batch: int = 0
    """Texts per embedding run; 0 = the model's default (1 for MiniLM: batch-independent vectors, the
    fastest and smallest on CPU; README, "Speed"). Larger batches use more memory per run."""
    public_url: str = ""
    """URL visitors reach this server at (used in the widget snippet); default http://HOST:PORT."""
    llm_base_url: str = ""
    """OpenAI-compatible chat-completions base URL (e.g. http://127.0.0.1:8080/v1); empty = extractive answers."""
    llm_api_key: str = ""
    """API key sent as a bearer token to the LLM endpoint."""
    llm_model: str = ""
    """Model name sent to the LLM endpoint."""
    llm_timeout: float = 20.0
    """Seconds to wait for the LLM's first token (and between tokens) before falling back."""
    rate_per_ip: float = 0.5
    """Widget questions per second allowed per visitor IP (burst below)."""
    rate_burst_ip: int = 10
    """Burst size of the per-IP limit."""
    rate_per_tenant: float = 20.0
    """Widget questions per second allowed per tenant (burst = 5x)."""
    max_question_chars: int = 2000
    """Longer questions are refused with `question_too_long`."""
    max_body_bytes: int = 64_000
    """Largest accepted request body for the widget API."""
    cache_entries: int = 2048
    """Answer cache size (entries, across tenants)."""
    vector_memory_mb: float = 256.0
    """Memory per process for tenants' vectors held in RAM (the dense side's fast path, ~15 MB per
    10k chunks); tenants that do not fit are searched in the file by sqlite-vec. 0 = none held."""
    text_memory_mb: float = 64.0
    """Memory per process for tenants' text indexes held in RAM (the lexical side's fast path: BM25
    ranked with numpy over postings read once, the same ranking as FTS5's; ~10 bytes a posting, a
    few MB per 10k-chunk tenant in use). A tenant's warm-up reads its frequent words' postings
    ahead, up to a quarter of this, while the indexes hold under half of it. 0 = none held: FTS5
    ranks every query."""
    cache_ttl: float = 600.0
    """Seconds an answer is fresh; a stale one is served once while it is recomputed."""
    scheduler: bool = True
    """Run each tenant's periodic recrawls inside `frontdesk serve`."""
    trust_proxy: bool = False
    """Take the visitor IP from X-Forwarded-For (only behind a proxy you run)."""
    log_level: str = "info"
    """Log level of the JSON logs on stderr."""
    console_session_hours: float = 8.0
    """Hours a /console sign-in lasts before the owner must sign in again."""
    console_secret: str = ""
    """Key that signs /console session cookies; empty = a random key made once in DATA_DIR/console.secret."""
    webhook_timeout: float = 10.0
    """Seconds a webhook receiver has to answer one delivery attempt."""
    webhook_max_attempts: int = 8
    """Attempts per webhook delivery before it is marked failed."""
    webhook_retry_base: float = 30.0
    """Seconds before the first webhook retry; each further retry waits twice as long (at most 1 h)."""
    webhook_gap_batch_seconds: float = 300.0
    """New knowledge gaps are collected and sent as one gap.new event at most this often."""
    database_url: str = ""
    """PostgreSQL + pgvector backend (postgresql://user:password@host:5432/db); empty = the SQLite
    files under DATA_DIR. Several `frontdesk serve` nodes may share one database (README,
    "PostgreSQL backend"); backup, restore, reindex, eval and quickstart work on the files only."""
    crawl_lease_seconds: float = 30.0
    """PostgreSQL backend: how long a node's claim on a tenant's crawl lasts unless renewed (it
    renews every second while crawling); a node that dies frees the crawl after this."""
    scheduler_tick_seconds: float = 60.0
    """How often the periodic scheduler looks for due crawls (and for crawls a dead process left)."""
    database_pool_size: int = 8
    """Most PostgreSQL connections one frontdesk process opens (its connection pool's size); a tenant's
    unit of work holds one until it commits. A CLI command needs one; a server, about its concurrent requests."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for name in cls.__struct_fields__:
            raw = env.get(f"FRONTDESK_{name.upper()}")
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: str(v) if isinstance(v, Path) else v for k, v in overrides.items() if v is not None})
        try:
            settings = msgspec.convert(values, cls, strict=False)
        except msgspec.ValidationError as exc:
            raise InvalidConfig(f"bad FRONTDESK_* setting: {exc}") from None
        if settings.answer_threads < 0:
            raise InvalidConfig("bad FRONTDESK_* setting: FRONTDESK_ANSWER_THREADS must be 0 (automatic) or more")
        if settings.crawl_processes < -1:
            raise InvalidConfig("bad FRONTDESK_* setting: FRONTDESK_CRAWL_PROCESSES must be -1 (automatic), 0 or more")
        if settings.database_pool_size < 1:
            raise InvalidConfig("bad FRONTDESK_* setting: FRONTDESK_DATABASE_POOL_SIZE must be at least 1")
        for name in ("crawl_lease_seconds", "scheduler_tick_seconds"):
            if not getattr(settings, name) > 0:
                raise InvalidConfig(f"bad FRONTDESK_* setting: FRONTDESK_{name.upper()} must be more than 0")
        return settings

    @property
    def retrieval_threads(self) -> int:
        """`answer_threads`, with 0 resolved for the storage backend."""
        return self.answer_threads or (self.database_pool_size if self.database_url else 1)

    @property
    def page_processes(self) -> int:
        """`crawl_processes`, with -1 resolved for this machine's cores."""
        return resolve_crawl_processes(self.crawl_processes)

    @property
    def base_url(self) -> str:
        return self.public_url.rstrip("/") or f"http://{self.host}:{self.port}"

    @property
    def model_cache(self) -> Path:
        return Path(self.model_cache_dir) if self.model_cache_dir else Path(self.data_dir) / "models"
