"""Structured data on a page (JSON-LD, microdata, OpenGraph) turned into facts: readable
one-paragraph text for indexing plus the normalised item as JSON, and the page's breadcrumbs.

This module holds the entry points callers use; the work is split by job:

- ``read``: the page's items by syntax, the @id graph, the bounded JSON kept with each fact;
- ``wording``: how one value reads (dates, durations, money, availability, opening hours);
- ``render``: one item as a paragraph, chosen by its schema.org type.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import msgspec

from ingest.document import Fact
from ingest.facts.read import Graph, flatten_items, item_types, read_page, walk_items
from ingest.facts.render import breadcrumb_names, facts_for_item, opengraph_fact
from ingest.facts.wording import as_list

__all__ = [
    "MAX_FACTS",
    "StructuredData",
    "extract_facts",
    "extract_structured",
    "facts_from_jsonld",
    "structured_data_from_items",
]

log = logging.getLogger(__name__)

MAX_FACTS = 100
"""Facts kept per page, after duplicates are dropped."""


class StructuredData(msgspec.Struct):
    """What a page's structured data says, beyond its visible text."""

    facts: list[Fact] = msgspec.field(default_factory=list)
    breadcrumbs: list[str] = msgspec.field(default_factory=list)
    date_modified: str | None = None


def _dedupe(facts: Iterable[Fact]) -> list[Fact]:
    seen: set[tuple[str, str]] = set()
    unique = []
    for fact in facts:
        key = (fact.kind, fact.text)
        if key not in seen:
            seen.add(key)
            unique.append(fact)
    return unique[:MAX_FACTS]


def structured_data_from_items(
    items_by_source: dict[str, list[dict]], opengraph: list[dict] | None = None
) -> StructuredData:
    """Facts, breadcrumbs and modification date from already-parsed items, by syntax."""
    facts: list[Fact] = []
    breadcrumbs: list[str] = []
    date_modified: str | None = None
    for source, items in items_by_source.items():
        graph = Graph()
        top_level = flatten_items(items, graph)
        for item in walk_items(top_level, graph):
            types = item_types(item)
            if "BreadcrumbList" in types:
                breadcrumbs = breadcrumbs or breadcrumb_names(item, graph)
                continue
            if date_modified is None and isinstance(item.get("dateModified"), str):
                date_modified = item["dateModified"].strip() or None
            facts.extend(facts_for_item(item, graph, source))
    if not facts:
        og_facts = [f for f in (opengraph_fact(og) for og in opengraph or []) if f]
        facts.extend(og_facts[:1])
    return StructuredData(
        facts=_dedupe(facts), breadcrumbs=breadcrumbs, date_modified=date_modified
    )


def facts_from_jsonld(items: Any) -> list[Fact]:
    """Facts from JSON-LD items that are already parsed (the widget sends a page's JSON-LD
    with each question). Anything that is not an object is ignored; never raises."""
    objects = [item for item in as_list(items) if isinstance(item, dict)]
    try:
        return structured_data_from_items({"json-ld": objects}).facts
    except Exception:  # hostile input: no facts rather than a failed answer
        log.warning("page JSON-LD could not be rendered", exc_info=True)
        return []


def extract_structured(html: str, url: str) -> StructuredData:
    """Everything :func:`extract_facts` returns, plus the page's ``dateModified``. Never raises."""
    items_by_source, opengraph = read_page(html, url)
    if not items_by_source and not opengraph:
        return StructuredData()
    try:
        return structured_data_from_items(items_by_source, opengraph)
    except Exception:  # structured data is a bonus; the page must still index
        log.warning("structured data of %s could not be rendered", url, exc_info=True)
        return StructuredData()


def extract_facts(html: str, url: str) -> tuple[list[Fact], list[str]]:
    """The page's structured-data facts and its breadcrumb trail (names, root first)."""
    structured = extract_structured(html, url)
    return structured.facts, structured.breadcrumbs
