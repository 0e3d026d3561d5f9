"""Index one extracted page into a tenant: clean → chunk → (embed only new chunks) → one transaction.

A crawl defers the embedding (`defer_vectors`): the page and its chunks are written at once,
searchable by their text, and ingest/embed_stage.py gives the new chunks their vectors in the
background. Otherwise the new chunks are embedded before the write, as one transaction."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

import msgspec

from ingest.chunk import Chunk, TokenCounter, chunk_document
from ingest.clean import clean_document, site_contact_points
from ingest.document import Document
from ingest.embed import Embedder
from ingest.embed_stage import EmbedStage
from ingest.lang import clear_function_word_language, detect_language
from ingest.rawhtml import scrub_html
from store.config import CleanSettings
from store.pages import ChunkRow, PageWrite, WriteStats, vector_bytes
from store.tenants import Tenant


def document_hash(doc: Document) -> str:
    """Hash of everything that would be indexed or stored: decides whether a page changed. A
    page's injection flags count only when it has some, so that other pages keep their hash."""
    parts = [doc.title, doc.description, doc.lang, doc.sections, doc.facts, doc.forms, doc.actions]
    payload = msgspec.json.encode(parts + [doc.flags] if doc.flags else parts)
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


_CODE_CHARS = re.compile(r"[=(){}\[\]<>;_/\\#$@`|*+]")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_CODE_LINE = re.compile(r"^\s*(from \S+ import |import \S|(async )?def |class \w|return\b|@\w|\$ |>>> )", re.M)


def prose_sample(doc: Document, limit: int = 1500) -> str:
    """Up to `limit` characters of the page's sentences, code left out: on a code-heavy page the
    first 1,500 characters can be mostly Python, which reads as English whatever the page's
    language (four translated pages of the fastapi docs were labelled English that way)."""
    prose: list[str] = []
    for section in doc.sections:
        for block in section.text.split("\n\n"):
            words = len(_WORDS.findall(block))
            if words >= 5 and len(_CODE_CHARS.findall(block)) <= words / 4 and not _CODE_LINE.search(block):
                prose.append(block)
        if sum(len(b) for b in prose) >= limit:
            break
    return " ".join(prose)[:limit]


def content_language(doc: Document) -> str:
    """The language the page's text is actually in. `<html lang>` is trusted unless the text says
    otherwise beyond doubt (untranslated pages of a translated site); detection runs once per
    page, on a sample: langdetect costs ~10 ms a call and misreads short or code-heavy passages."""
    sample = prose_sample(doc)
    if not sample:  # nothing but code, tables or fragments: <html lang>, else a guess from all of it
        return doc.lang or detect_language(" ".join(s.text for s in doc.sections)[:1500], min_words=6, min_prob=0.9)
    if not doc.lang:
        return detect_language(sample, default="", min_words=6, min_prob=0.9)
    if clear_function_word_language(sample) == doc.lang:
        # The text plainly uses <html lang>'s function words: what langdetect would confirm,
        # without its ~10 ms (on every page of the fixture sites the outcome is the same).
        return doc.lang
    return detect_language(sample, default=doc.lang, min_words=15, min_prob=0.97)


class PreparedPage(msgspec.Struct, kw_only=True):
    """A page made ready for its write: cleaned with `clean`, its language read, chunked, hashed,
    and its raw HTML scrubbed (`html` None: not asked for, or the hash equals `previous_hash`, so
    nothing will be written but the validators)."""

    doc: Document
    chunks: list[Chunk]
    content_hash: str
    clean: CleanSettings
    html: bytes | None = None
    encoding: str | None = None


def prepare_page(doc: Document, clean: CleanSettings, count_tokens: TokenCounter, target_tokens: int, *,
                 html: bytes | None = None, encoding: str | None = None,
                 previous_hash: str | None = None) -> PreparedPage:
    """Everything `PageIndexer.index` does to a page before its write, as a pure function of its
    arguments: a crawl runs it in a page process (ingest/page_procs.py)."""
    doc = clean_document(doc, clean)
    doc.lang = content_language(doc)
    chunks = chunk_document(doc, count_tokens, target_tokens=target_tokens)
    content_hash = document_hash(doc)
    if html is not None and content_hash != previous_hash:  # the raw cache holds no more than the index
        html, encoding = scrub_html(html, encoding, clean)
    else:
        html = encoding = None
    return PreparedPage(doc=doc, chunks=chunks, content_hash=content_hash, clean=clean, html=html,
                        encoding=encoding)


def chunk_rows(chunks: Sequence[Chunk], vectors: Mapping[str, bytes]) -> list[ChunkRow]:
    """A page's chunks as store rows, each with its vector by chunk hash (None: the store already
    holds that text, or the chunk is written pending and embedded later)."""
    return [
        ChunkRow(hash=c.hash, kind=c.kind, lang=c.lang, text=c.text, heading_path=c.heading_path,
                 position=c.position, uid=c.uid, tokens=c.tokens, vector=vectors.get(c.hash))
        for c in chunks
    ]


class PageIndexer:
    """Turns Documents into rows of one tenant, embedding each distinct chunk text once."""

    def __init__(self, tenant: Tenant, embedder: Embedder, clean: CleanSettings | None = None,
                 *, target_tokens: int = 256, defer_vectors: bool = False) -> None:
        self.tenant = tenant
        self.embedder = embedder
        self.defer_vectors = defer_vectors
        """Write new chunks pending, for an `EmbedStage` to embed (a crawl), instead of embedding
        them before the write."""
        self.clean = clean or CleanSettings()
        self.target_tokens = min(target_tokens, embedder.max_tokens)
        self.contacts_learned = 0
        """The site's own contact points this indexer learned (clean.allow_site_contacts)."""
        if self.clean.allow_site_contacts:
            with tenant.reading() as conn:
                known = tenant.store.contacts.site_contacts(conn)
            self.clean = msgspec.structs.replace(self.clean, allow=[*self.clean.allow, *known])

    def prepare(self, doc: Document, *, lang: str | None = None) -> tuple[Document, list[Chunk]]:
        """The cleaned document and its chunks. The language is read from the text unless the
        caller knows it (`lang`, e.g. an evaluation corpus: detection costs ~10 ms a page)."""
        doc = clean_document(doc, self.clean)
        doc.lang = content_language(doc) if lang is None else lang
        chunks = chunk_document(doc, self.embedder.count_tokens, target_tokens=self.target_tokens)
        return doc, chunks

    def index(
        self,
        doc: Document,
        *,
        html: bytes | None = None,
        encoding: str | None = None,
        etag: str | None = None,
        last_modified: str | None = None,
        sitemap_lastmod: str | None = None,
        http_status: int = 200,
        previous_hash: str | None = None,
        prepared: PreparedPage | None = None,
    ) -> WriteStats:
        """Index a page. With `previous_hash` equal to the new content hash, only the validators
        are refreshed: nothing is chunked into the file or embedded (`changed` is False).
        `prepared`: what `prepare_page` made of this `doc` elsewhere (a page process), used when
        it was made with the clean settings in force now (a site contact may have been learned)."""
        self._learn_site_contacts(doc)
        if prepared is None or prepared.clean != self.clean:
            prepared = prepare_page(doc, self.clean, self.embedder.count_tokens, self.target_tokens, html=html,
                                    encoding=encoding, previous_hash=previous_hash)
        doc, chunks = prepared.doc, prepared.chunks
        url = doc.canonical_url or doc.url
        if previous_hash is not None and previous_hash == prepared.content_hash:
            with self.tenant.write() as conn:
                self.tenant.store.pages.mark_fetched(conn, url, etag=etag, last_modified=last_modified,
                                                     sitemap_lastmod=sitemap_lastmod)
            return WriteStats(page_id=0, changed=False, chunks_added=0, chunks_deleted=0)
        vectors: dict[str, bytes] = {}
        if not self.defer_vectors:
            with self.tenant.reading() as conn:
                missing = self.tenant.store.pages.missing_hashes(conn, (c.hash for c in chunks))
            vectors = self._embed(doc, chunks, missing)
        page = PageWrite(
            url=doc.canonical_url or doc.url,
            fetched_url=doc.url,
            title=doc.title,
            description=doc.description,
            lang=doc.lang,
            breadcrumbs=doc.breadcrumbs,
            updated=doc.updated,
            etag=etag,
            last_modified=last_modified,
            sitemap_lastmod=sitemap_lastmod,
            content_hash=prepared.content_hash,
            http_status=http_status,
            html=prepared.html,
            encoding=prepared.encoding,
            chunks=chunk_rows(chunks, vectors),
            facts=[msgspec.to_builtins(f) for f in doc.facts],
            forms=[msgspec.to_builtins(f) for f in doc.forms],
            actions=[msgspec.to_builtins(a) for a in doc.actions],
            flags=[msgspec.to_builtins(f) for f in doc.flags],
        )
        stats = self._write(page)
        if not self.defer_vectors and (stats.chunks_pending or self._pending_count()):
            # A chunk seen as stored was deleted by another page's write meanwhile (written
            # pending), or one this page shares waits for a crawl's stage: embed them now.
            EmbedStage(self.tenant, self.embedder).drain()
        return stats

    def _learn_site_contacts(self, doc: Document) -> None:
        """With clean.allow_site_contacts, keep the business's own published phone numbers and
        addresses (its Organization data, its contact page) from here on, and remember them."""
        if not self.clean.allow_site_contacts:
            return
        points = [(value, kind) for value, kind in site_contact_points(doc) if value not in self.clean.allow]
        if not points:
            return
        with self.tenant.write() as conn:
            new = self.tenant.store.contacts.learn_site_contacts(conn, points, doc.canonical_url or doc.url)
        self.clean = msgspec.structs.replace(self.clean, allow=[*self.clean.allow, *new])
        self.contacts_learned += len(new)

    def compact(self) -> bool:
        """Merge the segments the page-by-page writes added to the full-text index (one per write;
        store.search.compact_text_index): call when a run of writes is over. Returns whether it
        merged them."""
        with self.tenant.write() as conn:
            return bool(self.tenant.store.search.compact_text_index(conn))

    def scrub_raw_cache(self, batch: int = 100) -> int:
        """Scrub the raw-HTML cache rows an older frontdesk stored as fetched; returns how many.
        A crawl job does this first, so an upgraded file is cleaned by its next crawl (or by
        `frontdesk crawl ID --reparse`) without fetching anything."""
        done = 0
        while rows := self._unscrubbed(batch):
            scrubbed = [(page_id, *scrub_html(html, encoding, self.clean)) for page_id, html, encoding in rows]
            with self.tenant.write() as conn:
                self.tenant.store.pages.replace_html(conn, scrubbed)
            done += len(rows)
        return done

    def _unscrubbed(self, batch: int) -> list[tuple[int, bytes, str | None]]:
        with self.tenant.reading() as conn:
            return self.tenant.store.pages.unscrubbed_html(conn, batch)

    def _pending_count(self) -> int:
        with self.tenant.reading() as conn:
            return self.tenant.store.pending.pending_count(conn)

    def _embed(self, doc: Document, chunks: list[Chunk], hashes: set[str]) -> dict[str, bytes]:
        fresh = list({c.hash: c for c in chunks if c.hash in hashes}.values())
        vectors = self.embedder.embed([c.embedding_text(doc.title) for c in fresh])
        return {c.hash: vector_bytes(v) for c, v in zip(fresh, vectors, strict=True)}

    def _write(self, page: PageWrite) -> WriteStats:
        with self.tenant.write() as conn:
            stats = self.tenant.store.pages.write_page(conn, page)
            if stats.changed:
                self.tenant.bump_generation(conn)
        return stats

    def remove(self, url: str, reason: str, http_status: int | None = None) -> int:
        with self.tenant.write() as conn:
            deleted = self.tenant.store.pages.tombstone_page(conn, url, reason, http_status)
            self.tenant.bump_generation(conn)
        return deleted
