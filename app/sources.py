"""Source shaping: search hits → the numbered sources an answer may quote and cite.

Owns grouping hits by page (one page is one source and one citation), leaving out the site's
repeated opening blocks (boilerplate), the visitor's unindexed page as a source, and the
citation list and snippets shown to the visitor. The answer pipeline (`app/answer.py`) calls
these; nothing here touches the network or the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from app.prompt import Source
from store.search import Hit
from store.words import content_terms

_CITE = re.compile(r"\[(\d{1,2})\]")

#: Opening blocks of a source checked for boilerplate; pages open with at most a few.
MAX_OPENING_BLOCKS = 6


def group_hits(hits: Sequence[Hit], max_sources: int) -> list[Source]:
    """Several chunks of one page are one source (one citation), up to two passages each."""
    sources: list[Source] = []
    by_url: dict[str, Source] = {}
    for hit in hits:
        source = by_url.get(hit.url)
        if source is not None:
            if source.text.count("\n\n") < 1 and hit.similarity > 0.2:
                source.text += "\n\n" + hit.text
                source.context += " " + " ".join(hit.heading_path)
                # The source is as similar as the best passage it carries: which of a page's
                # passages ranks first can turn on a near tie of the lexical side.
                source.similarity = max(source.similarity, hit.similarity)
            continue
        if len(sources) >= max_sources:
            continue
        source = by_url[hit.url] = Source(
            n=len(sources) + 1, title=hit.title, url=hit.url, text=hit.text, kind=hit.kind,
            context=" ".join(hit.heading_path), score=hit.score, similarity=hit.similarity,
            chunk_id=hit.chunk_id)
        sources.append(source)
    return sources


def drop_boilerplate(sources: Sequence[Source], question: str, repeated: Callable[[str], bool]) -> None:
    """Leave out a source's opening blocks that the site repeats on many pages (a translation
    notice, a banner): they would be quoted as the answer's first sentence. A block that uses a
    word of the question is kept without asking (and most first blocks do)."""
    terms = [t for t in content_terms(question) if len(t) > 2]

    def boilerplate(block: str) -> bool:
        folded = block.lower()
        return not any(term in folded for term in terms) and repeated(block)

    for source in sources:
        blocks = source.text.split("\n\n")
        start = 0
        while start < min(len(blocks) - 1, MAX_OPENING_BLOCKS) and boilerplate(blocks[start]):
            start += 1
        if start:
            source.text = "\n\n".join(blocks[start:])


def insert_page_source(sources: list[Source], page_source: Source, max_sources: int) -> list[Source]:
    """The visitor's (unindexed) page as a source, ranked among the others by its similarity."""
    position = sum(1 for s in sources if s.similarity > page_source.similarity + 0.05)
    sources.insert(position, page_source)
    sources = sources[:max_sources]
    renumber(sources)
    return sources


def quoted_first(sources: Sequence[Source], picked: Sequence[tuple[int, str, str]]
                 ) -> tuple[list[Source], list[tuple[int, str, str]]]:
    """Sources reordered so that the quoted ones come first, in the order the answer quotes them,
    and renumbered: the answer's markers are then [1], [2]… and its citations exactly the
    quoted pages. `picked` holds (index into sources, text, kind); the quotes come back with
    their source's new number."""
    order: list[int] = []
    for index, _, _ in picked:
        if index not in order:
            order.append(index)
    rest = [i for i in range(len(sources)) if i not in order]
    reordered = [sources[i] for i in order + rest]
    renumber(reordered)
    return reordered, [(sources[index].n, text, kind) for index, text, kind in picked]


def quoted_passages(sources: Sequence[Source], picked: Sequence[int]) -> str:
    """The title, headings and text of the sources the answer quotes (`picked`: indexes into
    `sources`): what the answer's passages talk about."""
    return "\n".join(f"{sources[i].title}\n{sources[i].context}\n{sources[i].text}" for i in dict.fromkeys(picked))


def renumber(sources: Sequence[Source]) -> None:
    for n, source in enumerate(sources, start=1):
        source.n = n


def snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def cited_numbers(answer: str) -> set[int]:
    return {int(m.group(1)) for m in _CITE.finditer(answer)}


def cited_sources(answer: str, sources: Sequence[Source]) -> list[Source]:
    """The citation list, in source-number order so that marker [n] is the n-th link: every
    source up to the highest number the answer cites (the top three if it cites none)."""
    numbers = cited_numbers(answer) & {s.n for s in sources}
    if not numbers:
        return list(sources[:3])
    return [s for s in sorted(sources, key=lambda s: s.n) if s.n <= max(numbers)]
