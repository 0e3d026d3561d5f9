"""Document → chunks: split along headings, paragraphs, then sentences, sized in model tokens.

Pure: no I/O, no model. Token counts come from the embedder's own tokenizer through the
`count_tokens` callable, so a 256-token chunk is 256 tokens for the model that embeds it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import msgspec

from ingest.actions import action_text, form_text
from ingest.document import Document

TokenCounter = Callable[[Sequence[str]], list[int]]
LanguageDetector = Callable[[str, str], str]

DEFAULT_TARGET_TOKENS = 256
DEFAULT_OVERLAP = 0.10

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-ZÀ-ÖØ-Þ0-9¿¡])|\n")
_WORDS = re.compile(r"\S+\s*")


class Chunk(msgspec.Struct, frozen=True):
    """One retrievable unit of a page."""

    uid: str
    """Stable id: hash of canonical URL, position and text."""
    hash: str
    """Content hash of (kind, text): the same text on many pages is stored once."""
    text: str
    heading_path: tuple[str, ...]
    position: int
    tokens: int
    lang: str
    kind: str

    def embedding_text(self, title: str) -> str:
        return embedding_text(title, self.heading_path, self.text)


def embedding_text(title: str, heading_path: Sequence[str], text: str) -> str:
    """What the model sees of a chunk: its text, after its page title and heading path for
    context. Ingestion and `frontdesk reindex` both embed this, so a rebuilt vector is the same."""
    context = " > ".join(p for p in (title, *heading_path) if p)
    return f"{context}\n{text}" if context else text


def content_hash(kind: str, text: str) -> str:
    return hashlib.blake2b(f"{kind}\n{text}".encode(), digest_size=16).hexdigest()


def chunk_uid(url: str, position: int, text: str) -> str:
    return hashlib.blake2b(f"{url}\n{position}\n{text}".encode(), digest_size=12).hexdigest()


#: A word that ends with its own full stop and is followed by more of the same sentence: "für ca.
#: 10 Minuten", "approx. 5 minutes", "e.g. Python", "z. B. Django", "Dr. Ellison". Not "etc.", which
#: ends sentences as often as not.
_ABBREVIATION = re.compile(
    r"(?<![\w.])(?:ca|approx|appr|aprox|e\.g|i\.e|cf|vs|z\.\s?B|d\.\s?h|u\.\s?a|bzw|ggf|evtl|inkl|zzgl|vgl|"
    r"p\.\s?ej|[a-zäöüß]|Nr|No|Núm|núm|Dr|Dra|Mr|Mrs|Ms|Prof|Sr|Sra|Jr|St|pp?|S|Abb|Bd|Fig|fig)\.$")


def split_sentences(text: str) -> list[str]:
    sentences, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if "\n" not in end.group(0) and _ABBREVIATION.search(text, start, end.start()):
            continue  # "für ca. 10 Minuten": the sentence goes on
        sentences.append(text[start:end.start()].strip())
        start = end.end()
    sentences.append(text[start:].strip())
    return [sentence for sentence in sentences if sentence]


def _split_words(text: str, tokens: int, target: int) -> list[str]:
    """Last resort for a 'sentence' longer than the target (code, tables): cut by words."""
    words = _WORDS.findall(text)
    pieces = max(2, -(-tokens // target))
    per_piece = max(1, -(-len(words) // pieces))
    return ["".join(words[i : i + per_piece]).strip() for i in range(0, len(words), per_piece)]


class _Packer:
    """Greedy packing of units (paragraphs or sentences) into chunks with a sentence overlap."""

    def __init__(self, target: int, overlap_tokens: int, count_tokens: TokenCounter) -> None:
        self.target = target
        self.overlap_tokens = overlap_tokens
        self.count_tokens = count_tokens
        self.chunks: list[tuple[str, int]] = []
        self._units: list[tuple[str, int]] = []
        self._size = 0
        self._fresh = False  # does the open chunk hold anything beyond the carried overlap?

    def add(self, unit: str, tokens: int) -> None:
        if self._fresh and self._size + tokens > self.target:
            self.flush(keep_overlap=True)
        self._units.append((unit, tokens))
        self._size += tokens
        self._fresh = True

    def flush(self, keep_overlap: bool = False) -> None:
        if not self._fresh:
            return
        self.chunks.append(("\n\n".join(u for u, _ in self._units), self._size))
        self._units = self._overlap() if keep_overlap and self.overlap_tokens else []
        self._size = sum(t for _, t in self._units)
        self._fresh = False

    def _overlap(self) -> list[tuple[str, int]]:
        """The tail sentences of the chunk just closed, within the overlap budget, so a fact cut at
        a boundary is whole in at least one chunk."""
        tail_text = self._units[-1][0]
        sentences = split_sentences(tail_text)
        carried: list[tuple[str, int]] = []
        budget = self.overlap_tokens
        for sentence, tokens in zip(
            reversed(sentences), reversed(self.count_tokens(sentences)), strict=True
        ):
            if tokens > budget:
                break
            carried.insert(0, (sentence, tokens))
            budget -= tokens
        if carried and len(self._units) == 1 and len(carried) == len(sentences):
            return []  # carrying the whole chunk again would repeat it, not overlap it
        return [(" ".join(s for s, _ in carried), sum(t for _, t in carried))] if carried else []


def _section_units(
    paragraphs: list[str], counts: list[int], target: int, count_tokens: TokenCounter
):
    """Yield (text, tokens) units no larger than the target: paragraphs, else sentences, else words."""
    for paragraph, tokens in zip(paragraphs, counts, strict=True):
        if tokens <= target:
            yield paragraph, tokens
            continue
        sentences = split_sentences(paragraph)
        for sentence, sentence_tokens in zip(sentences, count_tokens(sentences), strict=True):
            if sentence_tokens <= target:
                yield sentence, sentence_tokens
            else:
                pieces = _split_words(sentence, sentence_tokens, target)
                yield from zip(pieces, count_tokens(pieces), strict=True)


def chunk_document(
    doc: Document,
    count_tokens: TokenCounter,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    overlap: float = DEFAULT_OVERLAP,
    detect_language: LanguageDetector | None = None,
) -> list[Chunk]:
    """Split a document into chunks; positions count from 0 in document order."""
    url = doc.canonical_url or doc.url
    drafts: list[tuple[str, tuple[str, ...], int, str]] = []  # text, heading path, tokens, kind
    overlap_tokens = int(target_tokens * overlap)

    sections = [s for s in doc.sections if s.text.strip()]
    all_paragraphs = [[p.strip() for p in s.text.split("\n\n") if p.strip()] for s in sections]
    flat = [p for ps in all_paragraphs for p in ps]
    flat_counts = count_tokens(flat) if flat else []
    offset = 0
    for section, paragraphs in zip(sections, all_paragraphs, strict=True):
        counts = flat_counts[offset : offset + len(paragraphs)]
        offset += len(paragraphs)
        # The heading path is prepended when embedding; keep room for it within the model limit.
        packer = _Packer(target_tokens, overlap_tokens, count_tokens)
        for unit, tokens in _section_units(paragraphs, counts, target_tokens, count_tokens):
            packer.add(unit, tokens)
        packer.flush()
        for text, tokens in packer.chunks:
            drafts.append((text, section.heading_path, tokens, section.kind))

    structured: list[tuple[str, tuple[str, ...], str]] = [
        (f.text, (doc.title, f.type), f.kind) for f in doc.facts if f.text.strip()]
    structured += [(form_text(f), (doc.title, "Form"), "form") for f in doc.forms]
    structured += [(action_text(a), (doc.title, "Action"), "action") for a in doc.actions]
    if structured:
        counts = count_tokens([t for t, _, _ in structured])
        for (text, path, kind), tokens in zip(structured, counts, strict=True):
            if tokens <= target_tokens:
                drafts.append((text, path, tokens, kind))
                continue
            packer = _Packer(target_tokens, 0, count_tokens)
            for unit, unit_tokens in _section_units([text], [tokens], target_tokens, count_tokens):
                packer.add(unit, unit_tokens)
            packer.flush()
            drafts.extend((t, path, n, kind) for t, n in packer.chunks)

    chunks: list[Chunk] = []
    seen: set[str] = set()
    for text, path, tokens, kind in drafts:
        digest = content_hash(kind, text)
        if digest in seen:  # the same block twice on one page is indexed once
            continue
        seen.add(digest)
        lang = detect_language(text, doc.lang) if detect_language else doc.lang
        position = len(chunks)
        chunks.append(
            Chunk(
                uid=chunk_uid(url, position, text),
                hash=digest,
                text=text,
                heading_path=tuple(path),
                position=position,
                tokens=tokens,
                lang=lang,
                kind=kind,
            )
        )
    return chunks
