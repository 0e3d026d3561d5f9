"""A tenant's site configuration: what to crawl, how politely, and how to answer.

Stored as JSON in the tenant file (table ``site_config``), validated on every update: unknown
fields and bad values are refused with the field named (``InvalidConfig``).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

import msgspec

from store.errors import InvalidConfig

#: `crawl.render` values (ingest/render/).
RENDER_MODES = ("never", "auto", "always")


class CrawlSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    seeds: list[str] = msgspec.field(default_factory=list)
    """Start URLs for breadth-first link discovery (the site URL is always one)."""
    sitemaps: list[str] = msgspec.field(default_factory=list)
    """Extra sitemap URLs; `/sitemap.xml` and robots.txt `Sitemap:` lines are always tried."""
    allow: list[str] = msgspec.field(default_factory=list)
    """Regular expressions; when any is given a URL must match one to be crawled."""
    deny: list[str] = msgspec.field(default_factory=list)
    """Regular expressions; a URL matching any is never crawled."""
    allowed_hosts: list[str] = msgspec.field(default_factory=list)
    """Hosts the crawler may visit besides the site's own host."""
    max_pages: int = 2000
    """Stop discovering after this many pages."""
    max_depth: int = 10
    """Link hops from a seed; sitemap URLs are depth 0."""
    rate: float = 2.0
    """Requests per second per host (one request in flight per host). 0 means no limit."""
    respect_robots: bool = True
    """Obey robots.txt rules and Crawl-delay."""
    user_agent: str = "frontdesk-bot/0.1 (+https://github.com/frontdesk)"
    timeout: float = 15.0
    """Seconds for one request (connect + read), per attempt."""
    retries: int = 3
    """Attempts for a transient failure (timeouts, 429, 5xx) before giving up on a page."""
    later_retries: int = 2
    """Times a page that still fails transiently after `retries` is tried again later in the
    same crawl, after the rest of the queue had its turn (0: give up at once)."""
    later_retry_delay: float = 10.0
    """Seconds before a page's first later retry; each further one waits three times as long."""
    junk_detection: bool = True
    """Keep generated page families (calendar chains, endless query families, faceted filters,
    near-duplicate templates) out of the index, with the reason recorded (README.md, "Junk pages")."""
    max_bytes: int = 5_000_000
    """Largest response body accepted, after decompression."""
    allow_private_network: bool = False
    """Allow loopback / private / link-local addresses (for local sites and tests only)."""
    delta_every_hours: float = 24.0
    """Scheduler: sitemap-delta recrawl period; 0 disables."""
    full_every_days: float = 7.0
    """Scheduler: full recrawl period; 0 disables."""
    render: Literal["never", "auto", "always"] = "auto"
    """JavaScript pages: `never` reads only the HTML the server sends; `auto` renders a page in
    headless Chromium when its HTML is an app shell and keeps the result when it adds content;
    `always` renders every page. Rendering needs the `frontdesk[render]` extra and Chromium."""


class CleanSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    scrub_emails: bool = True
    scrub_phones: bool = True
    scrub_secrets: bool = True
    scrub_cards: bool = True
    allow: list[str] = msgspec.field(default_factory=list)
    """Exact strings never scrubbed: the site's own published contact address, say."""
    allow_site_contacts: bool = False
    """Keep the business's own published phone, fax numbers and e-mail addresses, learned from
    its Organization / LocalBusiness structured data and the tel:/mailto: links of its contact
    page; other people's numbers and addresses are still scrubbed. Run `frontdesk crawl ID
    --full` after turning it on (README.md, "Configuration")."""


class AnswerSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    persona: str = "the site's assistant"
    tone: str = "friendly and concise"
    guardrails: list[str] = msgspec.field(default_factory=list)
    avoid: list[str] = msgspec.field(default_factory=list)
    """Topics the assistant must not discuss."""
    min_confidence: float = 0.2
    """Below this confidence the visitor gets the honest 'not found on this site' answer."""
    min_chunks: int = 1
    min_term_coverage: float = 0.5
    """Share of the question's content words the site must use somewhere; below it the question
    is refused unless the best passage is a strong semantic match (0 turns the check off)."""
    min_answerability: float = 0.45
    """The probability (0..1) that the site answers the question below which the visitor gets the
    honest 'not found' answer: read from the best passage's confidence and how well the sentence
    the answer would lead with addresses the question (app/answerability.py; 0 turns it off)."""
    refuse_unknown_names: bool = True
    """Give the honest 'not found' answer to a question that names something the site never
    mentions (an acronym, a product, a place: "deploy on Vercel", "the festival in Taiwan"),
    however similar its passages look, or mentions only in passing where the answer's passages
    do not, or asks the hours of ("what time does the post office close?") (app/answerability.py
    `unknown_names`, `names_in_passing`, `unknown_timed_subject`)."""
    page_boost: float = 0.1
    """How much to favour the page the visitor is on (x the top fused score)."""
    max_sources: int = 5


class SiteConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    site: str
    """The site's base URL, e.g. https://example.com/."""
    name: str = ""
    model: str = "minilm-l6-v2-int8"
    """Embedding model id; changing it requires `frontdesk reindex`."""
    allowed_origins: list[str] = msgspec.field(default_factory=list)
    """Origins allowed to call the widget API; the site's own origin is always allowed."""
    crawl: CrawlSettings = msgspec.field(default_factory=CrawlSettings)
    clean: CleanSettings = msgspec.field(default_factory=CleanSettings)
    answer: AnswerSettings = msgspec.field(default_factory=AnswerSettings)

    @property
    def host(self) -> str:
        return (urlsplit(self.site).hostname or "").lower()

    @property
    def origin(self) -> str:
        parts = urlsplit(self.site)
        return f"{parts.scheme}://{parts.netloc}".lower()


def validate_config(config: SiteConfig) -> SiteConfig:
    """Check values msgspec's types cannot; raise InvalidConfig naming the field."""
    parts = urlsplit(config.site)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidConfig("site must be an http(s) URL with a host", field="site")
    crawl = config.crawl
    for name in ("max_pages", "max_depth", "retries", "max_bytes"):
        if getattr(crawl, name) < 0:
            raise InvalidConfig(f"crawl.{name} must not be negative", field=f"crawl.{name}")
    for name in ("rate", "timeout", "delta_every_hours", "full_every_days"):
        if getattr(crawl, name) < 0:
            raise InvalidConfig(f"crawl.{name} must not be negative", field=f"crawl.{name}")
    if crawl.timeout == 0:
        raise InvalidConfig("crawl.timeout must be positive", field="crawl.timeout")
    if crawl.render not in RENDER_MODES:
        raise InvalidConfig(f"crawl.render must be one of {', '.join(RENDER_MODES)}", field="crawl.render")
    hosts = {config.host, *(h.lower() for h in crawl.allowed_hosts)}
    for i, seed in enumerate(crawl.seeds + crawl.sitemaps):
        seed_parts = urlsplit(seed)
        if seed_parts.scheme not in ("http", "https") or (seed_parts.hostname or "") not in hosts:
            raise InvalidConfig(
                f"seed {seed!r} is not on the site's allowed hosts", field=f"crawl.seeds[{i}]"
            )
    import re

    for name in ("allow", "deny"):
        for i, pattern in enumerate(getattr(crawl, name)):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidConfig(
                    f"crawl.{name}[{i}] is not a valid regular expression: {exc}",
                    field=f"crawl.{name}[{i}]",
                ) from None
    for name in ("later_retries", "later_retry_delay"):
        if getattr(crawl, name) < 0:
            raise InvalidConfig(f"crawl.{name} must not be negative", field=f"crawl.{name}")
    if not 0 <= config.answer.min_confidence <= 1:
        raise InvalidConfig("answer.min_confidence must be within 0..1", field="answer.min_confidence")
    if not 0 <= config.answer.min_term_coverage <= 1:
        raise InvalidConfig("answer.min_term_coverage must be within 0..1", field="answer.min_term_coverage")
    if not 0 <= config.answer.min_answerability <= 1:
        raise InvalidConfig("answer.min_answerability must be within 0..1", field="answer.min_answerability")
    if config.answer.min_chunks < 0 or config.answer.max_sources < 1:
        raise InvalidConfig("answer.min_chunks/max_sources out of range", field="answer")
    return config


#: Settings a stored config may still carry from an older frontdesk, dropped when it is read
#: back from a tenant file (a request naming one is refused like any unknown field).
RETIRED_FIELDS = {"answer": ("min_answer_evidence",)}


def decode_stored_config(raw: bytes | str) -> SiteConfig:
    """A config as stored in a tenant file, written by this or an older version."""
    data = msgspec.json.decode(raw)
    if isinstance(data, dict):
        for section, names in RETIRED_FIELDS.items():
            if isinstance(data.get(section), dict):
                for name in names:
                    data[section].pop(name, None)
    return decode_config(data)


def decode_config(raw: bytes | str | dict) -> SiteConfig:
    """Parse and validate a config; errors name the offending field."""
    try:
        if isinstance(raw, dict):
            config = msgspec.convert(raw, SiteConfig)
        else:
            config = msgspec.json.decode(raw, type=SiteConfig)
    except msgspec.ValidationError as exc:
        text = str(exc)
        field = text.rsplit("at `$.", 1)[-1].rstrip("`") if "at `$." in text else None
        if "Object contains unknown field" in text:
            field = text.split("`")[1] if "`" in text else field
        raise InvalidConfig(f"invalid site config: {text}", field=field) from None
    except msgspec.DecodeError as exc:
        raise InvalidConfig(f"site config is not valid JSON: {exc}") from None
    # msgspec checks UTF-8 only when it builds a str, and nests by recursion: neither is a DecodeError.
    except UnicodeDecodeError:
        raise InvalidConfig("site config is not valid UTF-8") from None
    except RecursionError:
        raise InvalidConfig("site config is nested too deeply") from None
    return validate_config(config)


def encode_config(config: SiteConfig) -> bytes:
    return msgspec.json.encode(config)
