"""How one structured-data value reads to a person: markup to plain text, type names to words,
ISO dates and durations, prices, availability and opening hours; plus the small value-shape
helpers (first entry, list, clip, sentence) the reading and rendering modules share.

Pure functions of values: nothing here knows about pages, items or the @id graph.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterable
from typing import Any

MAX_TEXT_INPUT = 20_000
"""Characters of one value looked at; facts are short, and this bounds the regex work."""


# -- value shapes -------------------------------------------------------------------------------


def first(value: Any) -> Any:
    """A list's first non-empty entry; any other value as it is."""
    if isinstance(value, list):
        return next((v for v in value if v not in (None, "", [], {})), None)
    return value


def as_list(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?…" else text + "."


# -- text and type names ------------------------------------------------------------------------

# "[^<>]*", not "[^>]*": from every "<" the scan stops at the next "<", so text full of "<" without
# a ">" costs linear time, not quadratic (20,000 of them took 1.3 s a value; found by fuzzing).
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_BLOCK_TAG = re.compile(r"<(?:br|/p|/li|/div|/h[1-6]|/tr)\b[^<>]*>", re.IGNORECASE)


def _without_comments(value: str) -> str:
    """``value`` without its closed ``<!-- … -->`` comments, in one pass (a lazy regex rescans to
    the end from every unclosed ``<!--``)."""
    pieces: list[str] = []
    position = 0
    while (start := value.find("<!--", position)) >= 0:
        end = value.find("-->", start + 4)
        if end < 0:
            break
        pieces.append(value[position:start])
        position = end + 3
    pieces.append(value[position:])
    return "".join(pieces)


def html_to_text(value: str) -> str:
    """Markup and entities in a structured-data string reduced to one line of plain text."""
    value = value[:MAX_TEXT_INPUT]
    # Unescape on both sides of tag stripping: some sites escape their markup twice.
    if "&" in value:
        value = html_lib.unescape(value)
    if "<" in value:
        value = _TAG.sub("", _BLOCK_TAG.sub(" ", _without_comments(value)))
        if "&" in value:
            value = html_lib.unescape(value)
    return " ".join(value.split())


def short_type(value: str) -> str:
    """The bare type name: "http://schema.org/Product" or "schema:Product" → "Product"."""
    return re.split(r"[/#:]", value.strip())[-1]


def humanise_type(name: str) -> str:
    """A type name as words: "NewsArticle" → "news article"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def vocabulary_word(value: Any) -> str:
    """A schema.org enumeration value as words: "http://schema.org/InStock" → "in stock"."""
    text = first(value)
    return humanise_type(short_type(text)) if isinstance(text, str) and text.strip() else ""


# -- dates and durations ------------------------------------------------------------------------

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


# -- money and availability ---------------------------------------------------------------------

_CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "KRW": "₩"}


#: A whole number written with a decimal point ("3.0", "225.00"), not part of a longer number.
_TRAILING_ZEROS = re.compile(r"(?<![\d.,])(\d+)\.0+(?![\d.,])")
#: A unit glued to its amount ("3tbsp", "225g", "0.25tsp").
_GLUED_UNIT = re.compile(
    r"(?<![\w.,])(\d+(?:[.,]\d+)?)(?=(?:tbsp|tbs|tsp|g|kg|mg|ml|cl|dl|l|oz|lbs?|cups?|pts?|qt)\b)", re.I)


def amount(text: str) -> str:
    """An ingredient as a cook writes it: "3.0tbsp gochujang" → "3 tbsp gochujang", "0.25tsp fine
    salt" → "0.25 tsp fine salt" (recipe plugins export the numbers they store)."""
    return _GLUED_UNIT.sub(r"\1 ", _TRAILING_ZEROS.sub(r"\1", text))


def money(price: Any, currency: Any = None) -> str:
    """A price as people write it: ("119.99", "USD") → "$119.99"; 0 → "free"; "$35" stays. Cents
    written stay written ("16.00" → "$16.00", as the page shows it beside the data); none are added
    ("40" → "$40")."""
    text = html_to_text(str(first(price))) if first(price) is not None else ""
    if not text:
        return ""
    code = html_to_text(str(first(currency) or "")).upper()
    try:
        amount = float(text.replace(",", "")) if re.fullmatch(r"[\d.,]+", text) else None
    except ValueError:
        amount = None
    if amount is None:
        return f"{text} {code}".strip()
    if amount == 0:
        return "free"
    number = f"{amount:,.0f}" if amount.is_integer() and "." not in text else f"{amount:,.2f}"
    if code in _CURRENCY_SYMBOLS:
        return _CURRENCY_SYMBOLS[code] + number
    return f"{number} {code}".strip()


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
    text = first(value)
    if not isinstance(text, str) or not text.strip():
        return ""
    return _AVAILABILITY.get(short_type(text), humanise_type(short_type(text)))


# -- opening hours ------------------------------------------------------------------------------

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
    for entry in as_list(value):
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
    for day in as_list(value):
        name = short_type(day) if isinstance(day, str) else ""
        if name in _DAY_ORDER or name == "PublicHolidays":
            days.append(name)
    return days


def opening_hours_specification_text(specs: Iterable[Any]) -> str:
    """``openingHoursSpecification`` entries (their @id references already resolved) grouped
    into runs of days: "Mon–Fri 09:00–17:00; Sat …"."""
    hours_by_day: dict[str, list[str]] = {}
    for spec in specs:
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
