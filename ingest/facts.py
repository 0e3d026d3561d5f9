"""Structured data on a page (JSON-LD, microdata, OpenGraph) turned into facts: readable
one-paragraph text for indexing plus the normalised item as JSON, and the page's breadcrumbs.
"""

from __future__ import annotations

import html as html_lib
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import extruct
import jstyleson  # extruct's own JSON-with-comments parser, used the way extruct uses it
import msgspec
from extruct.utils import parse_html

from ingest.document import Fact

log = logging.getLogger(__name__)

MAX_ITEMS = 300
"""Structured items looked at per page (a catalogue page can carry thousands)."""
MAX_FACTS = 100
MAX_FACT_CHARS = 4000
MAX_DATA_BYTES = 16_000
MAX_DATA_STRING = 500
MAX_DATA_LIST = 30
MAX_DATA_DEPTH = 6
MAX_DESCRIPTION_CHARS = 300
MAX_TEXT_INPUT = 20_000


def has_structured_data(html: str) -> bool:
    """Cheap test before paying for an lxml parse: pages without these markers carry none.

    Plain substring searches of the lowercased page: a case-insensitive regex costs
    milliseconds on a large page, this costs microseconds.
    """
    lowered = html.lower()
    return any(marker in lowered for marker in ("ld+json", "itemscope", '"og:', "'og:"))


_JSON_LD_SCRIPTS = '//script[contains(translate(@type, "LDJSON", "ldjson"), "ld+json")]'


class StructuredData(msgspec.Struct):
    """What a page's structured data says, beyond its visible text."""

    facts: list[Fact] = msgspec.field(default_factory=list)
    breadcrumbs: list[str] = msgspec.field(default_factory=list)
    date_modified: str | None = None


# ---------------------------------------------------------------------------------------------
# Parsing: every syntax and every JSON-LD block on its own, so one bad block loses only itself
# ---------------------------------------------------------------------------------------------

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


def _extruct_items(tree: Any, url: str) -> dict[str, list[dict]]:
    try:
        return extruct.extract(
            tree, base_url=url, syntaxes=["microdata", "opengraph"], uniform=True, errors="ignore"
        )
    except Exception:  # a broken syntax must not cost the page its other facts
        log.debug("extruct failed on %s", url, exc_info=True)
        return {}


# ---------------------------------------------------------------------------------------------
# Value helpers
# ---------------------------------------------------------------------------------------------

_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][^>]*>", re.DOTALL)
_BLOCK_TAG = re.compile(r"<(?:br|/p|/li|/div|/h[1-6]|/tr)\b[^>]*>", re.IGNORECASE)


def html_to_text(value: str) -> str:
    """Markup and entities in a structured-data string reduced to one line of plain text."""
    value = value[:MAX_TEXT_INPUT]  # facts are short; this bounds the regex work per value
    # Unescape on both sides of tag stripping: some sites escape their markup twice.
    if "&" in value:
        value = html_lib.unescape(value)
    if "<" in value:
        value = _TAG.sub("", _BLOCK_TAG.sub(" ", value))
        if "&" in value:
            value = html_lib.unescape(value)
    return " ".join(value.split())


def short_type(value: str) -> str:
    """The bare type name: "http://schema.org/Product" or "schema:Product" → "Product"."""
    return re.split(r"[/#:]", value.strip())[-1]


def item_types(item: dict) -> list[str]:
    raw = item.get("@type") or item.get("type")
    values = raw if isinstance(raw, list) else [raw]
    return [short_type(v) for v in values if isinstance(v, str) and v.strip()]


def humanise_type(name: str) -> str:
    """A type name as words: "NewsArticle" → "news article"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def _first(value: Any) -> Any:
    if isinstance(value, list):
        return next((v for v in value if v not in (None, "", [], {})), None)
    return value


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else text + "."


_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def human_date(value: Any, *, with_time: bool = True) -> str:
    """ISO dates as people write them: "2017-06-10T19:30:00-0400" → "10 June 2017, 19:30".

    Anything unparseable is returned as written.
    """
    text = html_to_text(str(value)) if value is not None else ""
    match = _ISO_DATE.match(text)
    if not match:
        return text
    year, month, day, hour, minute = match.groups()
    if not 1 <= int(month) <= 12 or not 1 <= int(day) <= 31:
        return text
    rendered = f"{int(day)} {_MONTHS[int(month) - 1]} {year}"
    if with_time and hour is not None and (hour, minute) != ("00", "00"):
        rendered += f", {hour}:{minute}"
    return rendered


_ISO_DURATION = re.compile(
    r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE
)


def human_duration(value: Any) -> str:
    """ISO 8601 durations as people write them: "PT1H30M" → "1 h 30 min"."""
    text = html_to_text(str(value)) if value is not None else ""
    match = _ISO_DURATION.match(text)
    if not match or not any(match.groups()):
        return text
    days, hours, minutes, seconds = match.groups()
    parts = []
    if days and int(days):
        parts.append(f"{int(days)} day" + ("s" if int(days) > 1 else ""))
    if hours and int(hours):
        parts.append(f"{int(hours)} h")
    if minutes and int(minutes):
        parts.append(f"{int(minutes)} min")
    if seconds and float(seconds) and not parts:
        parts.append(f"{float(seconds):g} s")
    return " ".join(parts)


_CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "KRW": "₩"}


def money(price: Any, currency: Any = None) -> str:
    """A price as people write it: ("119.99", "USD") → "$119.99"; 0 → "free"; "$35" stays."""
    text = html_to_text(str(_first(price))) if _first(price) is not None else ""
    if not text:
        return ""
    code = html_to_text(str(_first(currency) or "")).upper()
    try:
        amount = float(text.replace(",", "")) if re.fullmatch(r"[\d.,]+", text) else None
    except ValueError:
        amount = None
    if amount is None:
        return f"{text} {code}".strip()
    if amount == 0:
        return "free"
    number = f"{amount:,.0f}" if amount.is_integer() else f"{amount:,.2f}"
    if code in _CURRENCY_SYMBOLS:
        return _CURRENCY_SYMBOLS[code] + number
    return f"{number} {code}".strip()


def _vocabulary_word(value: Any) -> str:
    """A schema.org enumeration value as words: "http://schema.org/InStock" → "in stock"."""
    text = _first(value)
    return humanise_type(short_type(text)) if isinstance(text, str) and text.strip() else ""


_AVAILABILITY = {
    "InStock": "in stock",
    "OutOfStock": "out of stock",
    "SoldOut": "sold out",
    "PreOrder": "available for pre-order",
    "PreSale": "available for pre-sale",
    "BackOrder": "on back order",
    "Discontinued": "discontinued",
    "LimitedAvailability": "limited availability",
    "InStoreOnly": "in store only",
    "OnlineOnly": "online only",
    "MadeToOrder": "made to order",
}


def availability(value: Any) -> str:
    text = _first(value)
    if not isinstance(text, str) or not text.strip():
        return ""
    return _AVAILABILITY.get(short_type(text), humanise_type(short_type(text)))


# ---------------------------------------------------------------------------------------------
# The item graph: @graph members, @id references and nested items
# ---------------------------------------------------------------------------------------------

# Keys whose nested items are facts of their own (a WebPage's FAQ, an ItemList's products).
_CONTAINER_KEYS = ("mainEntity", "hasPart", "itemListElement", "@graph", "subjectOf", "item")


class _Graph:
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
        names = [self._one_name(v) for v in _as_list(value)]
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
        return _clip(self.name(_first(item.get(key))), limit)


def _flatten_items(items: Iterable[dict], graph: _Graph) -> list[dict]:
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


def _register_nested(item: Any, graph: _Graph, depth: int = 0) -> None:
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


def _walk_items(top_level: list[dict], graph: _Graph) -> Iterator[dict]:
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
            for child in _as_list(item.get(key)):
                if isinstance(child, dict):
                    children.append(child)
        stack.extend(reversed(children))


# ---------------------------------------------------------------------------------------------
# The normalised JSON kept beside each fact
# ---------------------------------------------------------------------------------------------


def _bounded(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return _clip(value, MAX_DATA_STRING)
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
                types = [short_type(t) for t in _as_list(inner) if isinstance(t, str)]
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


# ---------------------------------------------------------------------------------------------
# Renderers: one readable paragraph per item type
# ---------------------------------------------------------------------------------------------


def _join_sentences(parts: Iterable[str]) -> str:
    return _clip(" ".join(_sentence(p) for p in parts if p and p.strip()), MAX_FACT_CHARS)


def _rating(item: dict, graph: _Graph) -> str:
    rating = graph.resolve(_first(item.get("aggregateRating")))
    if not isinstance(rating, dict):
        return ""
    value = _first(rating.get("ratingValue"))
    try:
        score = f"{float(str(value)):.1f}".removesuffix(".0")
    except (TypeError, ValueError):
        return ""
    best = _first(rating.get("bestRating")) or 5
    count = _first(rating.get("reviewCount")) or _first(rating.get("ratingCount"))
    text = f"Rated {score}/{html_to_text(str(best))}"
    if count not in (None, "", 0, "0"):
        count_text = html_to_text(str(count))
        text += f" ({count_text} review{'' if count_text == '1' else 's'})"
    return text


def _offer_summary(offers: Any, graph: _Graph) -> str:
    """Price and availability ("$40, in stock") of an Offer, AggregateOffer or offer list."""
    resolved = [graph.resolve(o) for o in _as_list(offers)]
    offer_items = [o for o in resolved if isinstance(o, dict)]
    if not offer_items:
        return ""
    first = offer_items[0]
    currency = first.get("priceCurrency")
    spec = graph.resolve(_first(first.get("priceSpecification")))
    if "AggregateOffer" in item_types(first) or "lowPrice" in first:
        low = money(first.get("lowPrice"), currency)
        high = money(first.get("highPrice"), currency)
        price = f"{low}–{high}" if low and high and low != high else (f"from {low}" if low else "")
        price = price or money(first.get("price"), currency)
    else:
        prices = {
            money(o.get("price"), o.get("priceCurrency") or currency)
            for o in offer_items
            if o.get("price") not in (None, "")
        }
        if not prices and isinstance(spec, dict):
            prices = {money(spec.get("price"), spec.get("priceCurrency") or currency)}
        prices.discard("")
        price = (
            next(iter(prices)) if len(prices) == 1 else (f"{len(prices)} prices" if prices else "")
        )
        if len(prices) > 1:
            price = "from " + _lowest_price(offer_items, currency)
    parts = [p for p in (price, availability(first.get("availability"))) if p]
    condition = _vocabulary_word(first.get("itemCondition")).removesuffix(" condition")
    if condition and condition != "new":
        parts.append(condition)
    return ", ".join(parts)


def _lowest_price(offers: list[dict], currency: Any) -> str:
    def amount(offer: dict) -> float:
        try:
            return float(str(_first(offer.get("price"))).replace(",", ""))
        except ValueError:
            return math.inf

    cheapest = min(offers, key=amount)
    return money(cheapest.get("price"), cheapest.get("priceCurrency") or currency)


def _seller(offers: Any, graph: _Graph) -> str:
    for offer in _as_list(offers):
        offer = graph.resolve(offer)
        if isinstance(offer, dict) and (seller := graph.name(offer.get("seller"))):
            return seller
    return ""


def render_product(item: dict, graph: _Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "headline")
    if not name:
        return ""
    kind = types[0]
    head = name if kind == "Product" else f"{name} ({humanise_type(kind)})"
    offer = _offer_summary(item.get("offers"), graph)
    seller = _seller(item.get("offers"), graph)
    parts = [f"{head} — {offer}" if offer else head]
    if brand := graph.name(_first(item.get("brand"))):
        parts.append(f"Brand: {brand}")
    if seller:
        parts.append(f"Sold by {seller}")
    for key, label in (("sku", "SKU"), ("gtin13", "GTIN"), ("mpn", "MPN"), ("isbn", "ISBN")):
        if code := graph.text(item, key, 60):
            parts.append(f"{label}: {code}")
            break
    parts.append(_rating(item, graph))
    parts.append(graph.text(item, "description"))
    return _join_sentences(parts)


def render_offer(item: dict, graph: _Graph, types: list[str]) -> str:
    summary = _offer_summary(item, graph)
    what = graph.name(item.get("itemOffered")) or graph.text(item, "name")
    if not summary or not what:
        return ""
    parts = [f"{what} — {summary}"]
    if seller := graph.name(item.get("seller")):
        parts.append(f"Sold by {seller}")
    return _join_sentences(parts)


def postal_address(value: Any, graph: _Graph) -> str:
    value = graph.resolve(_first(value))
    if isinstance(value, str):
        return html_to_text(value)
    if not isinstance(value, dict):
        return ""
    region = " ".join(
        graph.name(value.get(k))
        for k in ("addressRegion", "postalCode")
        if graph.name(value.get(k))
    )
    parts = [
        graph.name(value.get("streetAddress")),
        graph.name(value.get("addressLocality")),
        region,
        graph.name(value.get("addressCountry")),
    ]
    seen: list[str] = []
    for part in parts:
        if part and part not in seen:
            seen.append(part)
    return ", ".join(seen) or graph.name(value)


def place_text(value: Any, graph: _Graph) -> str:
    place = graph.resolve(_first(value))
    if isinstance(place, str):
        return html_to_text(place)
    if not isinstance(place, dict):
        return ""
    if "VirtualLocation" in item_types(place):
        return "online"
    name = graph.name(place.get("name"))
    address = postal_address(place.get("address"), graph)
    if name and address and not address.startswith(name):
        return f"{name}, {address}"
    return name or address


def render_event(item: dict, graph: _Graph, types: list[str]) -> str:
    name = graph.text(item, "name")
    if not name:
        return ""
    when = human_date(_first(item.get("startDate")))
    if end := human_date(_first(item.get("endDate"))):
        when = f"{when} to {end}" if when else f"until {end}"
    head = f"{name} — {humanise_type(types[0])}"
    if when:
        head += f" on {when}"
    if where := place_text(item.get("location"), graph):
        head += f" at {where}"
    parts = [head]
    status = _vocabulary_word(item.get("eventStatus")).removeprefix("event ")
    if status and status != "scheduled":
        parts.append(f"Status: {status}")
    if offer := _offer_summary(item.get("offers"), graph):
        parts.append(f"Tickets: {offer}")
    performers = graph.name(item.get("performer"))
    if performers and performers != name:
        parts.append(f"Performers: {performers}")
    if organizer := graph.name(item.get("organizer")):
        parts.append(f"Organised by {organizer}")
    parts.append(graph.text(item, "description"))
    return _join_sentences(parts)


_DAY_ORDER = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAY_ABBREVIATIONS = {
    "Mo": "Mon",
    "Tu": "Tue",
    "We": "Wed",
    "Th": "Thu",
    "Fr": "Fri",
    "Sa": "Sat",
    "Su": "Sun",
}


def _short_time(value: Any) -> str:
    text = html_to_text(str(value or ""))
    match = re.match(r"^(\d{1,2}):(\d{2})", text)
    return f"{int(match.group(1)):02d}:{match.group(2)}" if match else text


def opening_hours_text(value: Any) -> str:
    """schema.org ``openingHours`` strings: "Mo-Fr 09:00-17:00" → "Mon–Fri 09:00–17:00"."""
    rendered = []
    for entry in _as_list(value):
        if not isinstance(entry, str) or not entry.strip():
            continue
        text = re.sub(
            r"\b(Mo|Tu|We|Th|Fr|Sa|Su)\b", lambda m: _DAY_ABBREVIATIONS[m.group(1)], entry.strip()
        )
        text = re.sub(r"(?<=[a-z])\s*-\s*(?=[A-Z])", "–", text)
        text = re.sub(r"(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})", r"\1–\2", text)
        rendered.append(html_to_text(text))
    return "; ".join(rendered)


def _day_names(value: Any) -> list[str]:
    days = []
    for day in _as_list(value):
        name = short_type(day) if isinstance(day, str) else ""
        if name in _DAY_ORDER or name == "PublicHolidays":
            days.append(name)
    return days


def opening_hours_specification_text(value: Any, graph: _Graph) -> str:
    """``openingHoursSpecification`` grouped into runs of days: "Mon–Fri 09:00–17:00; Sat …"."""
    hours_by_day: dict[str, list[str]] = {}
    for spec in _as_list(value):
        spec = graph.resolve(spec)
        if not isinstance(spec, dict):
            continue
        opens, closes = _short_time(spec.get("opens")), _short_time(spec.get("closes"))
        if opens == closes == "00:00" or (not opens and not closes):
            hours = "closed"
        elif opens == "00:00" and closes in ("23:59", "24:00"):
            hours = "open 24 hours"
        else:
            hours = f"{opens}–{closes}"
        for day in _day_names(spec.get("dayOfWeek")):
            hours_by_day.setdefault(day, []).append(hours)
    runs: list[tuple[list[str], str]] = []
    for day in (*_DAY_ORDER, "PublicHolidays"):
        if day not in hours_by_day:
            continue
        hours = ", ".join(dict.fromkeys(hours_by_day[day]))
        previous_day_index = (
            _DAY_ORDER.index(runs[-1][0][-1]) if runs and runs[-1][0][-1] in _DAY_ORDER else None
        )
        consecutive = (
            previous_day_index is not None
            and day in _DAY_ORDER
            and _DAY_ORDER.index(day) == previous_day_index + 1
        )
        if runs and consecutive and runs[-1][1] == hours:
            runs[-1][0].append(day)
        else:
            runs.append(([day], hours))
    rendered = []
    for days, hours in runs:
        label = "Public holidays" if days == ["PublicHolidays"] else days[0][:3]
        if len(days) > 1:
            label += ("–" if len(days) > 2 else ", ") + days[-1][:3]
        rendered.append(f"{label} {hours}")
    return "; ".join(rendered)


def render_organization(item: dict, graph: _Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "legalName")
    if not name:
        return ""
    parts = [f"{name} ({humanise_type(types[0])})"]
    if address := postal_address(item.get("address"), graph) or place_text(
        item.get("location"), graph
    ):
        parts.append(f"Address: {address}")
    if phone := graph.text(item, "telephone", 60):
        parts.append(f"Phone: {phone}")
    if email := graph.text(item, "email", 120):
        parts.append(f"Email: {email.removeprefix('mailto:')}")
    hours = opening_hours_text(item.get("openingHours")) or opening_hours_specification_text(
        item.get("openingHoursSpecification"), graph
    )
    if hours:
        parts.append(f"Opening hours: {hours}")
    points = [graph.resolve(p) for p in _as_list(item.get("contactPoint"))]
    for point in (p for p in points if isinstance(p, dict)):
        contact = ", ".join(
            x for x in (graph.name(point.get("telephone")), graph.name(point.get("email"))) if x
        )
        if contact:
            kind = graph.name(point.get("contactType")) or "Contact"
            parts.append(f"{kind[:1].upper() + kind[1:]}: {contact}")
    if cuisine := graph.name(item.get("servesCuisine")):
        parts.append(f"Cuisine: {cuisine}")
    if price_range := graph.text(item, "priceRange", 40):
        parts.append(f"Price range: {price_range}")
    parts.append(_rating(item, graph))
    if website := graph.text(item, "url", 200):
        parts.append(f"Website: {website}")
    parts.append(graph.text(item, "description"))
    if not any(parts[1:]):
        return ""  # a bare name (a band, a publisher logo) tells a visitor nothing
    return _join_sentences(parts)


def render_article(item: dict, graph: _Graph, types: list[str]) -> str:
    title = graph.text(item, "headline") or graph.text(item, "name")
    if not title:
        return ""
    head = f"{title} — {humanise_type(types[0])}"
    author = graph.person(item.get("author"))
    if author:
        head += f" by {author}"
    dates = []
    # Publication times are mostly UTC timestamps of a CMS: the day is the useful part.
    if published := human_date(_first(item.get("datePublished")), with_time=False):
        dates.append(f"published {published}")
    modified = human_date(_first(item.get("dateModified")), with_time=False)
    if modified and modified != published:
        dates.append(f"updated {modified}")
    if dates:
        head += ", " + ", ".join(dates)
    if publisher := graph.name(item.get("publisher")):
        head += f" ({publisher})" if publisher != author else ""
    return _join_sentences([head, graph.text(item, "description")])


def _steps(value: Any, graph: _Graph) -> list[str]:
    """HowToStep / HowToSection / plain strings flattened into step texts."""
    steps: list[str] = []
    stack = list(reversed(_as_list(value)))
    while stack and len(steps) < 60:
        step = graph.resolve(stack.pop())
        if isinstance(step, str):
            steps.extend(s for s in (html_to_text(x) for x in re.split(r"\n+", step)) if s)
        elif isinstance(step, dict):
            nested = step.get("itemListElement")
            if nested:
                stack.extend(reversed(_as_list(nested)))
            else:
                text = graph.name(step.get("text")) or graph.name(step.get("name"))
                if text:
                    steps.append(text)
    return steps


def _numbered(steps: list[str]) -> str:
    return " ".join(f"{i}. {_sentence(step)}" for i, step in enumerate(steps, 1))


def _times(item: dict) -> str:
    labels = (
        ("prepTime", "prep"),
        ("cookTime", "cook"),
        ("performTime", "work"),
        ("totalTime", "total"),
    )
    times = [
        f"{label} {human_duration(item.get(key))}"
        for key, label in labels
        if human_duration(item.get(key))
    ]
    return ("Time: " + ", ".join(times)) if times else ""


def render_recipe(item: dict, graph: _Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "headline")
    if not name:
        return ""
    head = f"{name} — recipe"
    if author := graph.person(item.get("author")):
        head += f" by {author}"
    parts = [head, graph.text(item, "description"), _times(item)]
    yields = [graph.name(y) for y in _as_list(item.get("recipeYield"))]
    if yields := [y for y in yields if y]:
        parts.append("Yield: " + max(yields, key=len))
    for key, label in (("recipeCuisine", "Cuisine"), ("recipeCategory", "Category")):
        if value := graph.name(item.get(key)):
            parts.append(f"{label}: {value}")
    parts.append(_rating(item, graph))
    ingredients = [
        graph.name(i) for i in _as_list(item.get("recipeIngredient") or item.get("ingredients"))
    ]
    if ingredients := [i for i in ingredients if i]:
        parts.append("Ingredients: " + "; ".join(ingredients))
    if steps := _steps(item.get("recipeInstructions"), graph):
        parts.append("Steps: " + _numbered(steps))
    return _join_sentences(parts)


def render_howto(item: dict, graph: _Graph, types: list[str]) -> str:
    name = graph.text(item, "name")
    steps = _steps(item.get("step"), graph)
    if not name or not steps:
        return ""
    parts = [f"{name} — how-to", graph.text(item, "description"), _times(item)]
    for key, label in (("supply", "Supplies"), ("tool", "Tools")):
        things = [graph.name(t) for t in _as_list(item.get(key))]
        if things := [t for t in things if t]:
            parts.append(f"{label}: " + ", ".join(things))
    parts.append("Steps: " + _numbered(steps))
    return _join_sentences(parts)


def faq_pairs(item: dict, graph: _Graph) -> list[tuple[str, str]]:
    """(question, answer) pairs of a FAQPage, or of a single Question item."""
    questions = [item] if "Question" in item_types(item) else _as_list(item.get("mainEntity"))
    pairs = []
    for question in questions:
        question = graph.resolve(question)
        if not isinstance(question, dict):
            continue
        text = graph.text(question, "name", 1000) or graph.text(question, "text", 1000)
        answer = graph.resolve(
            _first(question.get("acceptedAnswer") or question.get("suggestedAnswer"))
        )
        answer_text = graph.name(answer.get("text") if isinstance(answer, dict) else answer)
        if text and answer_text:
            pairs.append((text, _clip(answer_text, MAX_FACT_CHARS - len(text) - 8)))
    return pairs


# ---------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------

_ORGANIZATION_TYPES = {
    "Organization", "Corporation", "NGO", "LocalBusiness", "Restaurant", "CafeOrCoffeeShop",
    "BarOrPub", "Bakery", "FastFoodRestaurant", "Winery", "Brewery", "Hotel", "Motel",
    "LodgingBusiness", "BedAndBreakfast", "Dentist", "Physician", "Pharmacy", "Hospital",
    "MedicalClinic", "Optician", "AutoRepair", "AutoDealer", "LegalService", "Attorney",
    "Notary", "RealEstateAgent", "TravelAgency", "BankOrCreditUnion", "InsuranceAgency",
    "HairSalon", "BeautySalon", "DaySpa", "NailSalon", "ExerciseGym", "Library", "Museum",
    "MovieTheater", "Plumber", "Electrician", "Locksmith", "HVACBusiness", "MusicGroup",
    "SportsTeam", "Airline", "Consortium", "PerformingGroup", "TouristInformationCenter",
    "ChildCare", "School", "CollegeOrUniversity", "Preschool", "VeterinaryCare",
}  # fmt: skip
_ORGANIZATION_SUFFIXES = (
    "Organization",
    "Business",
    "Store",
    "Service",
    "Agency",
    "Shop",
    "Restaurant",
)
_ARTICLE_TYPES = {
    "Article",
    "BlogPosting",
    "Report",
    "SocialMediaPosting",
    "LiveBlogPosting",
    "Blog",
}
_PRODUCT_TYPES = {
    "Product",
    "ProductModel",
    "ProductGroup",
    "IndividualProduct",
    "SomeProducts",
    "Vehicle",
    "Car",
}

Renderer = Callable[[dict, _Graph, list[str]], str]


def _renderer_for(types: list[str], item: dict) -> tuple[Renderer, str] | None:
    """The renderer for the most specific type it knows, and that type."""
    for kind in types:
        if kind in _PRODUCT_TYPES:
            return render_product, kind
        if kind == "Recipe":
            return render_recipe, kind
        if kind == "HowTo":
            return render_howto, kind
        if kind.endswith("Event") or kind == "Festival":
            return render_event, kind
        if kind in _ARTICLE_TYPES or kind.endswith("Article"):
            return render_article, kind
        if kind in _ORGANIZATION_TYPES or kind.endswith(_ORGANIZATION_SUFFIXES):
            return render_organization, kind
        if kind in ("Offer", "AggregateOffer"):
            return render_offer, kind
    if types and item.get("offers"):
        # Books, courses, software and services sold on the page read like products.
        return render_product, types[0]
    return None


def _facts_for_item(item: dict, graph: _Graph, source: str) -> list[Fact]:
    types = item_types(item)
    if "FAQPage" in types or "Question" in types:
        return [
            Fact(
                type="FAQPage",
                text=f"Q: {_sentence(question)} A: {answer}",
                data={
                    "@type": "Question",
                    "name": question,
                    "acceptedAnswer": {"@type": "Answer", "text": answer},
                },
                kind="faq",
                source=source,
            )
            for question, answer in faq_pairs(item, graph)
        ]
    chosen = _renderer_for(types, item)
    if chosen is None:
        return []
    renderer, kind = chosen
    text = renderer(item, graph, [kind, *types])
    if not text:
        return []
    return [Fact(type=kind, text=text, data=normalise_data(item), source=source)]


def breadcrumb_names(item: dict, graph: _Graph) -> list[str]:
    elements = [graph.resolve(e) for e in _as_list(item.get("itemListElement"))]
    entries = []
    for index, element in enumerate(elements):
        if not isinstance(element, dict):
            continue
        name = graph.name(element.get("name")) or graph.name(graph.resolve(element.get("item")))
        try:
            position = float(str(_first(element.get("position"))))
        except (TypeError, ValueError):
            position = float(index)
        if name:
            entries.append((position, index, _clip(name, 200)))
    return [name for _, _, name in sorted(entries)]


def opengraph_fact(og: dict) -> Fact | None:
    title = html_to_text(str(_first(og.get("og:title")) or ""))
    description = html_to_text(str(_first(og.get("og:description")) or ""))
    if not title and not description:
        return None
    kind = html_to_text(str(_first(og.get("@type")) or ""))
    head = f"{title} ({kind})" if title and kind else title
    text = _join_sentences([head, _clip(description, MAX_DESCRIPTION_CHARS)])
    return Fact(type="OpenGraph", text=text, data=normalise_data(og), source="opengraph")


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
        graph = _Graph()
        top_level = _flatten_items(items, graph)
        for item in _walk_items(top_level, graph):
            types = item_types(item)
            if "BreadcrumbList" in types:
                breadcrumbs = breadcrumbs or breadcrumb_names(item, graph)
                continue
            if date_modified is None and isinstance(item.get("dateModified"), str):
                date_modified = item["dateModified"].strip() or None
            facts.extend(_facts_for_item(item, graph, source))
    if not facts:
        og_facts = [f for f in (opengraph_fact(og) for og in opengraph or []) if f]
        facts.extend(og_facts[:1])
    return StructuredData(
        facts=_dedupe(facts), breadcrumbs=breadcrumbs, date_modified=date_modified
    )


def facts_from_jsonld(items: Any) -> list[Fact]:
    """Facts from JSON-LD items that are already parsed (the widget sends a page's JSON-LD
    with each question). Anything that is not an object is ignored; never raises."""
    objects = [item for item in _as_list(items) if isinstance(item, dict)]
    try:
        return structured_data_from_items({"json-ld": objects}).facts
    except Exception:  # hostile input: no facts rather than a failed answer
        log.warning("page JSON-LD could not be rendered", exc_info=True)
        return []


def extract_structured(html: str, url: str) -> StructuredData:
    """Everything :func:`extract_facts` returns, plus the page's ``dateModified``. Never raises."""
    if not html or not has_structured_data(html):
        return StructuredData()
    try:
        tree = parse_html(html.encode("utf-8", "replace"), encoding="utf-8")
    except Exception:  # lxml refuses some inputs (empty, all comments)
        return StructuredData()
    if tree is None:
        return StructuredData()
    extracted = _extruct_items(tree, url)
    items_by_source = {
        "json-ld": _json_ld_items(tree),
        "microdata": [i for i in extracted.get("microdata", []) if isinstance(i, dict)],
    }
    opengraph = [i for i in extracted.get("opengraph", []) if isinstance(i, dict)]
    try:
        return structured_data_from_items(items_by_source, opengraph)
    except Exception:  # structured data is a bonus; the page must still index
        log.warning("structured data of %s could not be rendered", url, exc_info=True)
        return StructuredData()


def extract_facts(html: str, url: str) -> tuple[list[Fact], list[str]]:
    """The page's structured-data facts and its breadcrumb trail (names, root first)."""
    structured = extract_structured(html, url)
    return structured.facts, structured.breadcrumbs
