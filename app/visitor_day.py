""""Today", "tonight", "tomorrow" in a visitor's question, read as the day the visitor means.

"Are you open today?" names no day a page writes: the answer quoted the history page's "today's
bookshop". The widget sends the visitor's clock (`PageContext.local_time`, ISO 8601 with its UTC
offset); a question that asks when, or whether the place is open, is searched and answered with
that day's name in the site's language ("Monday"), so the opening-hours row for the day answers
it (a day inside a range too: app/visits.py `days_spanned`). Not its date: "December 1" brought the
holiday hours of December 24. Without the clock (an API client, the MCP tools) the words only
weigh like "when" and "open" (app/asks.py `today_words`).
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from app.events import PageContext
from app.holidays import asks_when
from app.visits import RELATIVE_DAY
from ingest.lang import primary_subtag

_DAYS = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "es": ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
    "de": ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    "fr": ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
}

_DAYS_ON = {"tomorrow": 1, "mañana": 1, "morgen": 1, "demain": 1, "pasado mañana": 2, "übermorgen": 2}

#: The most a visitor's clock may differ from the server's: UTC+14 to UTC-12, and a little.
_CLOCK_SKEW = dt.timedelta(hours=27)
_MAX_LOCAL_TIME = 40


class VisitorDay(NamedTuple):
    words: str
    """The question's words for the day ("today"), space-separated; "" when none was read."""
    day: str
    """That day's name in the site's language ("Monday"); "" when none."""


def visitor_clock(page: PageContext | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """The visitor's local date and time, when the widget sent a plausible one."""
    raw = page.local_time if page else ""
    if not raw or len(raw) > _MAX_LOCAL_TIME:
        return None
    try:
        local = dt.datetime.fromisoformat(raw)
    except ValueError:
        return None
    if local.tzinfo is None:
        return None
    now = now or dt.datetime.now(dt.UTC)
    return local if abs(local - now) <= _CLOCK_SKEW else None


def visitor_day(question: str, page: PageContext | None, lang: str | None,
                now: dt.datetime | None = None) -> VisitorDay:
    """The day a question about when, or whether the place is open, means by "today" or
    "tomorrow", written in `lang`."""
    found = [m.group(1) for m in RELATIVE_DAY.finditer(question)]
    if not found or not asks_when(question):
        return VisitorDay("", "")
    clock = visitor_clock(page, now)
    if clock is None:
        return VisitorDay("", "")
    on = max((_DAYS_ON.get(word.lower(), 0) for word in found), default=0)
    day = (clock + dt.timedelta(days=on)).date()
    language = primary_subtag(lang) or "en"
    name = _DAYS.get(language, _DAYS["en"])[day.weekday()]
    return VisitorDay(" ".join(found), name)
