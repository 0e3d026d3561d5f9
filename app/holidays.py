"""Holidays on a fixed date, named in a visitor's question.

Visitors ask "are you open on Christmas Eve?"; a shop's holiday hours say "On December 24 and
December 31 we open from 8:00 am to 1:00 pm." Nothing on the page names the holiday, so the
question found neither the passage nor, by the rule that refuses names the site never mentions,
an answer. A holiday that always falls on the same date is searched and answered with that date
as the site's language writes it, and its name does not count as a name the site never mentions.
Holidays whose date moves (Easter, Thanksgiving) are left out: no one date stands for them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from app.asks import asks_of
from ingest.lang import primary_subtag

#: Each holiday's names in the languages the sample site and the fixtures use, with its date.
_HOLIDAYS: tuple[tuple[tuple[str, ...], int, int], ...] = (
    (("christmas eve", "xmas eve", "nochebuena", "heiligabend", "heiligen abend", "veille de noël",
      "réveillon de noël"), 12, 24),
    (("christmas day", "christmas", "xmas day", "xmas", "día de navidad", "navidad", "erster weihnachtsfeiertag",
      "weihnachten", "jour de noël", "noël"), 12, 25),
    (("boxing day", "zweiter weihnachtsfeiertag", "stephanstag", "san esteban"), 12, 26),
    (("new year's eve", "new years eve", "new year eve", "nochevieja", "silvester", "saint-sylvestre"), 12, 31),
    (("new year's day", "new years day", "new year's", "año nuevo", "neujahr", "jour de l'an"), 1, 1),
    (("día de reyes", "epiphany", "heilige drei könige"), 1, 6),
    (("halloween",), 10, 31),
    (("valentine's day", "valentines day", "san valentín", "valentinstag", "saint-valentin"), 2, 14),
)

_MONTHS = {
    "en": ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"),
    "es": ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"),
    "de": ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
           "November", "Dezember"),
    "fr": ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
           "novembre", "décembre"),
}

_NAMES = sorted(((name, month, day) for names, month, day in _HOLIDAYS for name in names),
                key=lambda entry: -len(entry[0]))
# Longest first, so that "christmas eve" is read before "christmas"; whole words only.
_PATTERN = re.compile(r"(?<!\w)(" + "|".join(re.escape(name) for name, _, _ in _NAMES) + r")(?!\w)", re.I)
_DATE_OF = {name: (month, day) for name, month, day in _NAMES}


#: A date the question writes itself ("the 26th of December", "Dec 31", "1 de enero", "24.
#: Dezember"), in any of the languages here: searched as the site writes it ("December 26").
_MONTH_NAMES = {name.lower(): month for names in _MONTHS.values() for month, name in enumerate(names, 1)}
_MONTH_NAMES.update({name[:3].lower(): month for month, name in enumerate(_MONTHS["en"], 1)})
_MONTH_NAMES.update({"sept": 9, "ene": 1, "dic": 12, "dez": 12, "déc": 12, "janv": 1, "févr": 2})
_MONTH = "(" + "|".join(sorted(map(re.escape, _MONTH_NAMES), key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th|º|\.)?"
_WRITTEN_DATE = re.compile(
    rf"(?<!\w)(?:{_DAY}\s+(?:of\s+|de\s+)?{_MONTH}|{_MONTH}\s+(?:the\s+)?{_DAY})(?!\w)", re.I)


def _dates_written(question: str) -> list[tuple[str, int, int]]:
    """The dates `question` writes, as (the text, month, day)."""
    found = []
    for match in _WRITTEN_DATE.finditer(question):
        day_text = match.group(1) or match.group(4)
        month = _MONTH_NAMES[(match.group(2) or match.group(3)).lower()]
        day = int(day_text)
        if 1 <= day <= 31:
            found.append((match.group(0), month, day))
    return found


class HolidayDates(NamedTuple):
    names: list[str]
    """The holidays' names as the question writes them ("Christmas Eve")."""
    days: list[tuple[int, int]]
    """The (month, day) each name falls on, in the same order."""
    dates: str
    """The dates as the site's language writes them ("December 24"), space-separated; "" if none."""


def written_date(month: int, day: int, lang: str) -> str:
    """A date as a page in `lang` writes it: "December 24", "24 de diciembre", "24. Dezember"."""
    name = _MONTHS.get(lang, _MONTHS["en"])[month - 1]
    if lang == "es":
        return f"{day} de {name}"
    if lang == "de":
        return f"{day}. {name}"
    if lang == "fr":
        return f"{day} {name}"
    return f"{name} {day}"


#: Besides what `asks_of` reads as asking when: "are you closed on Boxing Day?".
_CLOSED = re.compile(r"\b(closed|cerrad[oa]s?|geschlossen|fermée?s?)\b", re.I)


def asks_when(question: str) -> bool:
    """Whether the question asks when, or whether the place is open or closed, on a day."""
    asked = asks_of(question)
    return asked.time or asked.date or bool(_CLOSED.search(question))


def holiday_dates(question: str, lang: str | None) -> HolidayDates:
    """The fixed-date holidays `question` names and the dates they fall on, in `lang`, when it
    asks when or whether something is open then ("are you open on Christmas Eve?"). "Do you
    sell Christmas cookies?" asks about cookies: read as a date, it was answered with the
    holiday closing days; it is left to the rule that refuses names the site never mentions."""
    if not question or not asks_when(question):
        return HolidayDates([], [], "")
    names: list[str] = []
    days: list[tuple[int, int]] = []
    dates: list[str] = []
    # "New Year’s Eve" as phones type it; one character for one, so the name is the question's own.
    named = [(question[found.start(1):found.end(1)], *_DATE_OF[found.group(1).lower()])
             for found in _PATTERN.finditer(question.replace("’", "'"))]
    for name, month, day in [*named, *_dates_written(question)]:
        names.append(name)
        days.append((month, day))
        date = written_date(month, day, primary_subtag(lang) or "en")
        if date not in dates:
            dates.append(date)
    return HolidayDates(names, days, " ".join(dates))


def mentions_date(text: str, month: int, day: int) -> bool:
    """Whether `text` gives that date in any of the languages here, the day within a few words of
    its month: "December 24", "24 December", "Dec. 24", "24. Dezember", "el 24 y el 31 de
    diciembre". A holiday's name is known to a site only where a passage says its date: "cookies
    for Navidad" on documentation is still a question about something the site never mentions."""
    months = "|".join(re.escape(names[month - 1]) for names in _MONTHS.values()) + "|" + _MONTHS["en"][month - 1][:3]
    pattern = (rf"(?<!\d){day}(?!\d)\.?\W+(?:\w+\W+){{0,4}}?(?:{months})\b"
               rf"|\b(?:{months})\.?\s+{day}(?!\d)")
    return re.search(pattern, text, re.I) is not None


def dated_in(found: HolidayDates, text: str) -> list[str]:
    """The names of `found` whose date `text` gives (`mentions_date`)."""
    return [name for name, (month, day) in zip(found.names, found.days, strict=True) if mentions_date(text, month, day)]
