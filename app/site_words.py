"""A visitor's question in the words the site writes.

Visitors ask "are you open on Christmas Eve?", "where are you located?", "can I swing by Thursday
around 4?", "are you open today?"; pages write "December 24", "Address: 14 Quay Street",
"Tuesday to Friday: 7:30 am – 5:00 pm". The question is searched with the site's words added
(`in_site_words`), and its own words for them count as words the site uses where the passages
found write what they stand for (`known_besides_index`): the coverage check and the name rule
would otherwise refuse "located" or "Wednesday" as words the site never uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from app.asks import contact_words, where_the_place_is
from app.carries import carries
from app.events import PageContext
from app.holidays import HolidayDates, asks_when, dated_in, holiday_dates
from app.prompt import Source
from app.visitor_day import VisitorDay, visitor_day
from app.visitor_words import agent_words, site_terms_for, visitor_place
from app.visits import days_spanned, period_days, when_to_visit
from store.words import words_of


class SiteWords(NamedTuple):
    query: str
    """What is searched: the question (after the subject a follow-up continues) and the site's words."""
    weighed: str
    """The site's words that weigh like the question's own: holiday dates, the weekend's days, the
    visitor's day, what sites write for a visitor's everyday word ("December 24", "Saturday
    Sunday", "Monday", "gluten-free")."""
    holidays: HolidayDates
    today: VisitorDay
    visiting: frozenset[str]
    """The question's words for a visit at a time of day ("swing", "4:45")."""
    asking_where: str
    """The question's words that ask where the place is ("where are you located")."""
    everyday: str
    """What sites write for the question's everyday words ("gluten-free gluten" for "coeliac")."""
    everyday_own: frozenset[str]
    """The question's everyday words ("coeliac")."""
    covered: str
    """The words the coverage check reads: the query without what was added for everyday words."""


def in_site_words(question: str, carried: str, page: PageContext | None, lang: str) -> SiteWords:
    """`question` with the words the site writes for what it asks."""
    query = f"{carried} {question}" if carried else question
    # "Christmas Eve" is searched and answered as the date the site writes ("December 24").
    holidays = holiday_dates(query, lang)
    # "Are you open today?" is searched as the visitor's day ("Monday"): no page names "today".
    today = visitor_day(question, page, lang)
    # "Open on weekends?", "…entre semana?": searched as an hours table writes those days, a row a day.
    period = period_days(question, lang) if asks_when(question) else ""
    # "Can I swing by Thursday around 4?" is searched as the site heads its hours.
    hours_word, visiting = when_to_visit(question, lang)
    # "Where are you located?" is searched as the site writes an address.
    address, asking_where = where_the_place_is(question, lang)
    # "My daughter is coeliac" is searched and weighed as sites write it ("gluten-free"); so is the
    # subject a follow-up continues ("baking classes" → "workshop" for "how much is it?").
    everyday, everyday_own = site_terms_for(query, lang)
    # "Who does the baking?" is searched and weighed as the page names the one who does ("baker").
    agents = agent_words(question)
    weighed = " ".join(part for part in (holidays.dates, period, today.day, everyday, agents) if part)
    # The words added for an everyday word are not the visitor's: the coverage check does not read
    # them, neither as words the site uses nor as ones it never does ("daña" beside "dañado").
    covered = " ".join(part for part in (query, holidays.dates, period, today.day, hours_word, address) if part)
    query = " ".join(part for part in (query, weighed, hours_word, address) if part)
    return SiteWords(query, weighed, holidays, today, visiting, asking_where, everyday, everyday_own, covered)


#: A country as visitors shorten it ("EE. UU.", "USA", "UK") and as a page writes it in full.
_SHORTHANDS = (
    (re.compile(r"\bEE\.?\s?UU\.?|\bEEUU\b"), re.compile(r"\bestados\s+unidos\b", re.I)),
    (re.compile(r"\bU\.?S\.?A\.?(?!\w)|\bU\.S\.(?!\w)|\bUS\b"),
     re.compile(r"\bunited\s+states\b|\bestados\s+unidos\b|\bvereinigten?\s+staaten\b", re.I)),
    (re.compile(r"\bUK\b|\bU\.K\.(?!\w)"), re.compile(r"\bunited\s+kingdom\b|\breino\s+unido\b", re.I)),
)


def shorthand_written(question: str, text: str) -> str:
    """The question's shortened country names ("EE. UU.") that `text` writes in full ("Estados
    Unidos"): known to the site, not names it never mentions."""
    return " ".join(found.group(0) for short, full in _SHORTHANDS
                    if (found := short.search(question)) and full.search(text))


def known_besides_index(words: SiteWords, question: str, sources: Sequence[Source],
                        page_text: str, pages: Iterable[str] = ()) -> tuple[str, frozenset[str]]:
    """The words a question uses that the site uses too without the index saying so, and the days
    the top passages' ranges span. Known: the visitor's page when it is not indexed, a holiday's
    name where a passage gives its date, "located" where one gives an address, "call" where one
    gives a phone number or e-mail address, a visit's words where one gives a time, "today",
    "coeliac" where one writes "gluten-free", and "Wednesday" where the hours say "Tuesday to
    Friday" (weighed as a word the site uses, so that the row answers), where the visitor says
    they are ("I'm in Oregon"), and "EE. UU." where one writes "Estados Unidos". `pages`: the
    whole pages of the top sources (read only for a question about when or how to reach the
    place), whose hours table or contact lines may be another passage than the one retrieved
    ("…abrimos de 8:00 a 13:00" for "¿a qué hora abrís el miércoles?", beside "De martes a
    viernes: 7:30 – 17:00")."""
    top = sources[:3]
    said = " ".join(s.text for s in sources) if words.holidays.names else ""
    located = words.asking_where if words.asking_where and any(carries(s.text, "address") for s in top) else ""
    reaching, when = contact_words(question), asks_when(question)
    texts = [*(s.text for s in top), *pages] if reaching or when else []
    # The contact page's best passage may be its form; the number is in another passage of it.
    reached = " ".join(sorted(reaching)) if reaching and any(carries(text, "contact") for text in texts) else ""
    spanned = frozenset().union(*(days_spanned(text) for text in texts)) if when else frozenset()
    visiting = words.visiting if any(carries(s.text, "time") for s in top) else frozenset()
    top_text = " ".join(s.text for s in top)
    written = bool(words.everyday) and bool(words_of(words.everyday) & words_of(top_text))
    everyday = words.everyday_own if written else frozenset()
    short = shorthand_written(question, top_text)
    known = " ".join([page_text, located, reached, words.today.words, *sorted(spanned), *sorted(visiting),
                      *sorted(everyday), visitor_place(question), *dated_in(words.holidays, said), short]).strip()
    return known, spanned
