"""Reading a page's structured data into items: JSON-LD blocks (each on its own, so one bad block
loses only itself), microdata and OpenGraph through extruct, the @id graph that lets references
read as names, and the bounded JSON kept beside each fact.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jstyleson  # extruct's own JSON-with-comments parser, used the way extruct uses it

from ingest.facts.wording import as_list, clip, first, html_to_text, short_type

log = logging.getLogger(__name__)

MAX_ITEMS = 300
"""Structured items looked at per page (a catalogue page can carry thousands)."""
MAX_DATA_BYTES = 16_000
MAX_DATA_STRING = 500
MAX_DATA_LIST = 30
MAX_DATA_DEPTH = 6
MAX_DESCRIPTION_CHARS = 300


def has_structured_data(html: str) -> bool:
    """Cheap test before paying for an lxml parse: pages without these markers carry none.

    Plain substring searches of the lowercased page: a case-insensitive regex costs
    milliseconds on a large page, this costs microseconds.
    """
    lowered = html.lower()
    return any(marker in lowered for marker in ("ld+json", "itemscope", '"og:', "'og:"))


# -- parsing: every syntax and every JSON-LD block on its own -----------------------------------

_JSON_LD_SCRIPTS = '//script[contains(translate(@type, "LDJSON", "ldjson"), "ld+json")]'
_COMMENT_LINE = re.compile(r"^\s*(?://.*|<!--.*-->)\s*$", re.MULTILINE)
_WRAPPERS = re.compile(
    r"^\s*(?:/\*\s*)?(?:<!\[CDATA\[|<!--)(?:\s*\*/)?|(?:/\*\s*)?(?:\]\]>|-->)(?:\s*\*/)?\s*$"
)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _json_attempts(text: str) -> Iterator[Callable[[], Any]]:
    yield lambda: json.loads(text, strict=False)
    unwrapped = _WRAPPERS.sub("", _COMMENT_LINE.sub("", text))
    yield lambda: jstyleson.loads(unwrapped, strict=False)
    yield lambda: json.loads(_TRAILING_COMMA.sub(r"\1", unwrapped), strict=False)
    # Several objects pasted into one script: {…}{…} or {…},{…}.
    yield lambda: json.loads("[" + re.sub(r"}\s*{", "},{", unwrapped) + "]", strict=False)


def parse_json_ld_block(text: str) -> list[dict]:
    """The items of one ``<script type="application/ld+json">``; [] when it cannot be read."""
    if not text.strip():
        return []
    for attempt in _json_attempts(text):
        try:
            data = attempt()
        except Exception:  # json, jstyleson and recursion errors all mean "not this way"
            continue
        items = data if isinstance(data, list) else [data]
        return [item for item in items if isinstance(item, dict) and item]
    log.debug("skipping unreadable JSON-LD block (%d chars)", len(text))
    return []


def _json_ld_items(tree: Any) -> list[dict]:
    items: list[dict] = []
    for script in tree.xpath(_JSON_LD_SCRIPTS):
        items.extend(parse_json_ld_block(script.text_content() or ""))
    return items


def load_extruct() -> None:
    """Import extruct now. It is imported when a page is first read (a server worker that only
    answers never loads it), but the first import takes ~0.4 s: a crawl calls this before its
    fetchers start, so no page stalls on it mid-crawl. (Mid-crawl, that stall changed the order
    pages were written from run to run, and with it which page a shared passage is shown from.)"""
    import extruct  # noqa: F401
    import extruct.utils  # noqa: F401


def _extruct_items(tree: Any, url: str) -> dict[str, list[dict]]:
    import extruct

    try:
        return extruct.extract(
            tree, base_url=url, syntaxes=["microdata", "opengraph"], uniform=True, errors="ignore"
        )
    except Exception:  # a broken syntax must not cost the page its other facts
        log.debug("extruct failed on %s", url, exc_info=True)
        return {}


def read_page(html: str, url: str) -> tuple[dict[str, list[dict]], list[dict]]:
    """The page's items by syntax (``{"json-ld": […], "microdata": […]}``) and its OpenGraph
    properties; both empty when the page carries none or cannot be parsed. Never raises."""
    if not html or not has_structured_data(html):
        return {}, []
    # Imported here, not with the module: extruct brings rdflib, html5lib, bs4, requests and more
    # (~17 MB a process), and a server worker that only answers never reads a page.
    from extruct.utils import parse_html

    try:
        tree = parse_html(html.encode("utf-8", "replace"), encoding="utf-8")
    except Exception:  # lxml refuses some inputs (empty, all comments)
        return {}, []
    if tree is None:
        return {}, []
    extracted = _extruct_items(tree, url)
    items_by_source = {
        "json-ld": _json_ld_items(tree),
        "microdata": [i for i in extracted.get("microdata", []) if isinstance(i, dict)],
    }
    opengraph = [i for i in extracted.get("opengraph", []) if isinstance(i, dict)]
    return items_by_source, opengraph


# -- the item graph: @graph members, @id references and nested items ----------------------------


def item_types(item: dict) -> list[str]:
    raw = item.get("@type") or item.get("type")
    values = raw if isinstance(raw, list) else [raw]
    return [short_type(v) for v in values if isinstance(v, str) and v.strip()]


# Keys whose nested items are facts of their own (a WebPage's FAQ, an ItemList's products).
_CONTAINER_KEYS = ("mainEntity", "hasPart", "itemListElement", "@graph", "subjectOf", "item")


class Graph:
    """All items of one page, with @id lookup so references render as names."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict] = {}

    def add(self, item: dict) -> None:
        node_id = item.get("@id")
        if isinstance(node_id, str) and len(item) > 1:
            known = self.by_id.get(node_id)
            if known is None or len(item) > len(known):
                self.by_id[node_id] = item

    def resolve(self, value: Any) -> Any:
        """A bare ``{"@id": …}`` reference replaced by the item it names, when known."""
        if isinstance(value, dict) and "@id" in value and len(value) <= 2:
            return self.by_id.get(value["@id"], value) if isinstance(value["@id"], str) else value
        return value

    def name(self, value: Any, *, allow_urls: bool = True) -> str:
        """The readable name of a value (a string, or an item's name or text); a list reads
        "A, B and C"."""
        names = [self._one_name(v) for v in as_list(value)]
        names = [n for n in names if n and (allow_urls or not n.startswith(("http:", "https:")))]
        names = list(dict.fromkeys(names))[:5]
        return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)

    def person(self, value: Any) -> str:
        """Author-like names; a profile URL standing in for a name is left out."""
        return self.name(value, allow_urls=False)

    def _one_name(self, value: Any) -> str:
        value = self.resolve(value)
        if isinstance(value, dict):
            for key in ("name", "headline", "text", "@value", "legalName"):
                if isinstance(value.get(key), str | int | float) and str(value[key]).strip():
                    return html_to_text(str(value[key]))
            return ""
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return html_to_text(str(value))
        return ""

    def text(self, item: dict, key: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
        return clip(self.name(first(item.get(key))), limit)


def flatten_items(items: Iterable[dict], graph: Graph) -> list[dict]:
    """Top-level items with @graph expanded, every item with an @id registered in ``graph``."""
    flat: list[dict] = []
    stack = list(reversed(list(items)))
    while stack and len(flat) < MAX_ITEMS:
        item = stack.pop()
        members = item.get("@graph")
        if isinstance(members, list):
            stack.extend(reversed([m for m in members if isinstance(m, dict)]))
            if len(item) <= 2:  # just @context and @graph
                continue
        flat.append(item)
    for item in flat:
        _register_nested(item, graph)
    return flat


def _register_nested(item: Any, graph: Graph, depth: int = 0) -> None:
    if depth > MAX_DATA_DEPTH:
        return
    if isinstance(item, dict):
        graph.add(item)
        for value in item.values():
            if isinstance(value, dict | list):
                _register_nested(value, graph, depth + 1)
    elif isinstance(item, list):
        for value in item[: MAX_DATA_LIST * 4]:
            _register_nested(value, graph, depth + 1)


def walk_items(top_level: list[dict], graph: Graph) -> Iterator[dict]:
    """Top-level items, then the items under their container keys, each once."""
    seen: set[int] = set()
    stack = list(reversed(top_level))
    visited = 0
    while stack and visited < MAX_ITEMS:
        item = graph.resolve(stack.pop())
        if not isinstance(item, dict) or id(item) in seen:
            continue
        seen.add(id(item))
        visited += 1
        yield item
        children: list[Any] = []
        for key in _CONTAINER_KEYS:
            for child in as_list(item.get(key)):
                if isinstance(child, dict):
                    children.append(child)
        stack.extend(reversed(children))


# -- the normalised JSON kept beside each fact --------------------------------------------------


def _bounded(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return clip(value, MAX_DATA_STRING)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DATA_DEPTH:
        return None
    if isinstance(value, list):
        return [_bounded(v, depth + 1) for v in value[:MAX_DATA_LIST]]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in list(value.items())[:60]:
            if key == "@context" or not isinstance(key, str):
                continue
            if key == "@type":
                types = [short_type(t) for t in as_list(inner) if isinstance(t, str)]
                out[key] = types[0] if len(types) == 1 else types
            else:
                out[key] = _bounded(inner, depth + 1)
        return out
    return str(value)[:MAX_DATA_STRING]


def normalise_data(item: dict) -> dict:
    """``item`` as bounded, JSON-serialisable data: short types, no @context, clipped strings,
    and its largest members dropped until it fits in MAX_DATA_BYTES."""
    data = _bounded(item)
    sizes = {key: len(json.dumps(value, ensure_ascii=False)) for key, value in data.items()}
    total = sum(sizes.values())
    for key in sorted(sizes, key=sizes.__getitem__, reverse=True):
        if total <= MAX_DATA_BYTES:
            break
        if key in ("@type", "@id", "name", "headline"):
            continue
        total -= sizes[key]
        del data[key]
    return data
