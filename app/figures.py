"""What a sentence states that a source must also state: its figures (prices, percentages, times,
dates, phone numbers, versions and other numbers, each normalised to keys that any spelling of the
same value shares) and its names (quoted text, inline code, identifiers, file names, URLs).

The grounding guard (`app/grounding.py`) compares a generated sentence's figures and names with
its sources'; nothing here knows about prompts or models.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

import msgspec

SMALL_NUMBERS = 3
"""Bare integers up to this are not checked ("2 options", "step 3"); every larger number is."""


# -- figures ----------------------------------------------------------------------------------------

_CURRENCIES = {
    "$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "dólar": "USD", "dólares": "USD",
    "dolares": "USD", "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "£": "GBP", "gbp": "GBP",
    "pound": "GBP", "pounds": "GBP", "¥": "JPY", "jpy": "JPY", "chf": "CHF", "cad": "CAD", "c$": "CAD",
    "aud": "AUD", "a$": "AUD", "r$": "BRL", "brl": "BRL", "mxn": "MXN",
}
_CUR_BEFORE = r"(?:US\$|C\$|A\$|R\$|[$€£¥]|\b(?:USD|EUR|GBP|CHF|CAD|AUD|JPY|BRL|MXN)\b)"
_CUR_AFTER = (r"(?:[$€£¥]|(?:USD|EUR|GBP|CHF|CAD|AUD|JPY|BRL|MXN|dollars?|d[óo]lar(?:es)?|euros?|pounds?)\b)")
NUMBER = r"\d{1,3}(?:[,.\u00a0\u202f\u2009]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d+)?"
_MONEY_NUMBER = rf"\d{{1,3}}(?: \d{{3}})+(?:[.,]\d{{1,2}})?|{NUMBER}"
_MONEY = re.compile(
    rf"(?P<cur>{_CUR_BEFORE})\s?(?P<num>{_MONEY_NUMBER})(?!\d)"
    rf"|(?<![\w.,])(?P<num2>{_MONEY_NUMBER})\s?(?P<cur2>{_CUR_AFTER})", re.IGNORECASE)
_PERCENT = re.compile(
    rf"(?<![\w.,])(?P<num>{NUMBER})\s?(?:%|per ?cent\b|percent\b|por ?ciento\b|prozent\b|pour ?cent\b|"
    rf"per ?cento\b|por ?cento\b)", re.IGNORECASE)
_TIME_12 = re.compile(r"(?<![\w.:])(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?\s?(?P<ap>[ap])\.?\s?m\b\.?", re.IGNORECASE)
_TIME_24 = re.compile(r"(?<![\w.:])(?P<h>\d{1,2})(?:(?::(?P<m>\d{2}))(?!\d)(?:\s?(?:Uhr|h)\b)?"
                      r"|(?:[.h](?P<m2>\d{2}))?\s?Uhr\b|\s?h\s?(?P<m3>\d{2})\b)", re.IGNORECASE)
_MONTHS = {
    1: "january jan janvier gennaio janeiro enero januar jänner",
    2: "february feb febrero februar février fevrier febbraio fevereiro",
    3: "march mar marzo märz maerz mars março marco",
    4: "april apr abril avril aprile",
    5: "may mayo mai maggio maio",
    6: "june jun junio juni juin giugno junho",
    7: "july jul julio juli juillet luglio julho",
    8: "august aug agosto août aout",
    9: "september sep sept septiembre setiembre septembre settembre setembro",
    10: "october oct octubre oktober octobre ottobre outubro",
    11: "november nov noviembre novembre novembro",
    12: "december dec diciembre dezember décembre decembre dicembre dezembro",
}
MONTH_NUMBERS = {name: number for number, names in _MONTHS.items() for name in names.split()}
_MONTH = "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True))
_DATE_DAY_MONTH = re.compile(
    rf"(?<![\w.])(?P<d>\d{{1,2}})(?:st|nd|rd|th|er|º|°|\.)?\s+(?:de\s+|of\s+)?(?P<mon>{_MONTH})\b\.?"
    rf"(?:,?\s+(?:de\s+)?(?P<y>\d{{4}})\b)?", re.IGNORECASE)
_DATE_MONTH_DAY = re.compile(
    rf"\b(?P<mon>{_MONTH})\b\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?", re.IGNORECASE)
_DATE_ISO = re.compile(r"(?<![\w.])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)")
_DATE_NUMERIC = re.compile(r"(?<![\w.])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})(?![\d.])")
_PHONE = re.compile(r"(?<![\w.,])\+?\(?\d[\d ()./-]{5,}\d(?![\w])")
VERSION = re.compile(r"(?:(?P<cue>\b(?:v|version|versión|versão|versione|python|py)\s?)|(?<![\w.]))"
                      r"(?P<v>\d+(?:\.\d+){1,3})(?![\d])", re.IGNORECASE)
_BARE = re.compile(rf"(?<![\w.,])(?P<num>{NUMBER})(?!\d)")
CITATION = re.compile(r"\[\d{1,3}\]")
_ENUMERATOR = re.compile(r"^[ \t>*-]*\d{1,2}[.)](?=\s)|(?<![\w)])\d{1,2}\)(?=\s)", re.MULTILINE)


class Figure(msgspec.Struct, frozen=True):
    """A figure of a text: its kind, its spelling, and the keys any of which grounds it."""

    kind: str
    text: str
    keys: frozenset[str]


def _canon(number: str) -> str:
    try:
        value = Decimal(number).normalize()
    except InvalidOperation:
        return number
    return format(value, "f")


def number_values(token: str) -> set[str]:
    """Every value a written number may mean: "1,250.50" and "1.250,50" → 1250.5; "12,50" → 12.5;
    "1,250" and "1.250" are either 1250 or 1.25 (thousands separator or decimal mark)."""
    t = re.sub(r"[\s\u00a0\u202f\u2009]", "", token)
    if "," in t and "." in t:
        decimal = "," if t.rfind(",") > t.rfind(".") else "."
        group = "." if decimal == "," else ","
        return {_canon(t.replace(group, "").replace(decimal, "."))}
    separator = "," if "," in t else "." if "." in t else ""
    if not separator:
        return {_canon(t)}
    parts = t.split(separator)
    if len(parts) > 2:
        return {_canon("".join(parts))}
    head, tail = parts
    if len(tail) == 3:
        return {_canon(head + tail), _canon(f"{head}.{tail}")}
    return {_canon(f"{head}.{tail}")}


def _minutes(hour: int, minute: int, ampm: str = "") -> set[int]:
    if ampm:
        if not 1 <= hour <= 12:
            return set()
        return {(hour % 12 + (12 if ampm.lower() == "p" else 0)) * 60 + minute}
    if hour > 24 or minute > 59:
        return set()
    if 1 <= hour <= 12:  # "3:00" may be 3 am or 3 pm
        return {hour * 60 + minute, ((hour + 12) % 24) * 60 + minute}
    return {(hour % 24) * 60 + minute}


def _blank(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end():]


def _scan(pattern: re.Pattern[str], text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each match of `pattern`, with `text` blanked where it matched so later kinds skip it."""
    for match in list(pattern.finditer(text)):
        text = _blank(text, match)
        yield match, text


def figures(text: str, *, skip_small: bool = True) -> list[Figure]:
    """The figures of `text`, each kind taken before the next looks (a date's day is not also a bare
    number): dates, times, money, percentages, phone numbers, versions, then other numbers."""
    out: list[Figure] = []
    text = re.sub(r"[‐‑‒–—―−]", "-", text)
    text = CITATION.sub(lambda m: " " * len(m.group()), text)
    text = _ENUMERATOR.sub(lambda m: " " * len(m.group()), text)

    def take(pattern: re.Pattern[str], make) -> None:
        nonlocal text
        for match in list(pattern.finditer(text)):
            made = make(match)
            if made is None:
                continue
            text = _blank(text, match)
            out.extend(made)

    def date(month: int, day: int, year: str | None, spelled: str) -> list[Figure]:
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return []
        found = [Figure("date", spelled, frozenset({f"date:{month}-{day}"}))]
        if year:
            found.append(Figure("number", year, frozenset({f"num:{_canon(year)}"})))
        return found

    def iso(m: re.Match[str]):
        return date(int(m["m"]), int(m["d"]), m["y"], m.group())

    def numeric(m: re.Match[str]):
        a, b = int(m["a"]), int(m["b"])
        keys = {f"date:{month}-{day}" for month, day in ((b, a), (a, b)) if 1 <= month <= 12 and 1 <= day <= 31}
        if not keys:
            return None
        year = m["y"] if len(m["y"]) == 4 else None
        return [Figure("date", m.group(), frozenset(keys)),
                *([Figure("number", year, frozenset({f"num:{year}"}))] if year else [])]

    def spelled(m: re.Match[str]):
        month = MONTH_NUMBERS.get(m["mon"].lower().rstrip("."))
        return date(month, int(m["d"]), m["y"], m.group()) if month else None

    def time12(m: re.Match[str]):
        values = _minutes(int(m["h"]), int(m["m"] or 0), m["ap"])
        return [Figure("time", m.group(), frozenset(f"time:{v}" for v in values))] if values else None

    def time24(m: re.Match[str]):
        minute = m["m"] or m["m2"] or m["m3"]
        spelled_out = bool(re.search(r"uhr|h", m.group(), re.IGNORECASE))
        if minute is None and not spelled_out:
            return None
        hour = int(m["h"])
        if spelled_out and hour <= 24 and int(minute or 0) < 60:
            values = {(hour % 24) * 60 + int(minute or 0)}
        else:
            values = _minutes(hour, int(minute or 0))
        return [Figure("time", m.group(), frozenset(f"time:{v}" for v in values))] if values else None

    def money(m: re.Match[str]):
        symbol = (m["cur"] or m["cur2"]).lower()
        currency = _CURRENCIES.get(symbol, symbol.upper())
        values = number_values(m["num"] or m["num2"])
        return [Figure("money", m.group(), frozenset(f"money:{currency}:{v}" for v in values))]

    def percent(m: re.Match[str]):
        return [Figure("percent", m.group(), frozenset(f"pct:{v}" for v in number_values(m["num"])))]

    def phone(m: re.Match[str]):
        digits = re.sub(r"\D", "", m.group())
        spelled = m.group().strip()
        if len(digits) < 7 or not re.search(r"[ ()./+-]", spelled) or re.fullmatch(r"\d{4}\s?[-/]\s?\d{2,4}", spelled):
            return None  # not a phone number: a year range ("2020-2024") is two numbers
        return [Figure("phone", m.group().strip(), frozenset({f"tel:{digits}"}))]

    def version(m: re.Match[str]):
        if not m["cue"] and m["v"].count(".") < 2:
            return None
        return [Figure("version", m.group().strip(), frozenset({f"ver:{m['v']}"}))]

    def bare(m: re.Match[str]):
        values = number_values(m["num"])
        if skip_small and all(v.isdigit() and int(v) <= SMALL_NUMBERS for v in values):
            return []
        return [Figure("number", m["num"], frozenset(f"num:{v}" for v in values))]

    take(_DATE_ISO, iso)
    take(_DATE_NUMERIC, numeric)
    take(_DATE_DAY_MONTH, spelled)
    take(_DATE_MONTH_DAY, spelled)
    take(_TIME_12, time12)
    take(_TIME_24, time24)
    take(_MONEY, money)
    take(_PERCENT, percent)
    take(_PHONE, phone)
    take(VERSION, version)
    take(_BARE, bare)
    return out


# -- names ------------------------------------------------------------------------------------------

_QUOTED = re.compile(r"“([^”\n]{2,160})”|\"([^\"\n]{2,160})\"|«\s?([^»\n]{2,160}?)\s?»|„([^“”\n]{2,160})[“”]"
                     r"|‘([^’\n]{2,160})’|`([^`\n]{1,200})`")
_IDENTIFIER = re.compile(
    r"(?<![\w.-])(?:"
    r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+"  # CamelCase: TestPyPI, FastAPI, GitHub
    r"|[a-z]+[A-Z][A-Za-z0-9]*"  # lowerCamel: iPhone, fetchData
    r"|_{0,2}[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+"  # snake_case, __init__
    r"|[\w-]+\.(?:toml|py|cfg|txt|json|md|rst|html?|ya?ml|ini|lock|whl|gz|zip|sh|js|css)"  # file names
    r")(?![\w])")
_URL = re.compile(r"https?://[^\s)\]>\"'`]+")
_CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)


def normalise_text(text: str) -> str:
    """Text compared for names: NFKC, case-folded, one kind of quote and dash, single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[\u200b-\u200f\u2060\ufeff]", "", text)
    text = re.sub(r"[‘’‚‛′`´]", "'", text)
    text = re.sub(r"[“”„‟«»″]", '"', text)
    text = re.sub(r"[‐‑‒–—―−]", "-", text)
    return " ".join(text.split())


def names(text: str) -> list[str]:
    """Quoted text, inline code, identifiers, file names and URLs: what must be found verbatim."""
    found: list[str] = []
    for block in _CODE_BLOCK.findall(text):  # a code block: its identifiers, not its every line
        found += _IDENTIFIER.findall(block)
    text = _CODE_BLOCK.sub(" ", text)
    for url in _URL.findall(text):
        found.append(url.rstrip(".,;:!?"))
    text = _URL.sub(" ", text)
    for groups in _QUOTED.findall(text):
        quoted = next(g for g in groups if g).strip()
        if quoted and not quoted.isdigit():
            found.append(quoted)
    text = _QUOTED.sub(" ", text)
    found += _IDENTIFIER.findall(text)
    return found


def contains_name(haystack: str, name: str) -> bool:
    needle = normalise_text(name)
    if not needle:
        return True
    if needle.startswith("http"):
        return needle.rstrip("/") in haystack
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None or (
        not needle[0].isalnum() and needle in haystack)



def without_names(text: str) -> str:
    """`text` with its code, URLs, quoted text and identifiers blanked: what is left is prose."""
    text = _QUOTED.sub(" ", _URL.sub(" ", _CODE_BLOCK.sub(" ", text)))
    return _IDENTIFIER.sub(" ", text)
