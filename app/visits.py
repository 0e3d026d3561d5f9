"""When a visitor means to come: the days of the week in the sites' languages and the ranges a
text writes ("Tuesday to Friday" spans Thursday), the weekend and the working week, a time of day
proposed for a visit ("can I swing by Thursday around 4?"), and the words for the visitor's own
day ("today", "mañana"). What the question asks for otherwise is app/asks.py's.
"""

from __future__ import annotations

import functools
import re

from ingest.lang import primary_subtag

#: Words for the visitor's own day (app/visitor_day.py reads which day each means). "Mañana" and
#: "Morgen" are also the morning: "por la mañana" and "guten Morgen" are not tomorrow, and
#: "mañana" counts only at the question's end or before a time of day.
RELATIVE_DAY = re.compile(
    r"(?<!\w)(today|tonight|this (?:morning|afternoon|evening)|right now|now|tomorrow|"
    r"hoy|esta (?:mañana|tarde|noche)|ahora|(?<!la\s)mañana(?=\s*(?:[?¿!.,]|$|por la|a las|temprano))|"
    r"pasado mañana|heute(?: abend| morgen| nachmittag)?|jetzt|(?<!guten\s)morgen|übermorgen|"
    r"aujourd'hui|ce soir|maintenant|demain)(?!\w)", re.I)


#: The week in the languages the sites are written in, Monday first; a day's short forms are
#: the first letters of its name ("Tue", "Thurs", "mié").
_WEEKS = (
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
    ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
    ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
)
#: A day's name or its short form in any of those languages, spelled out so that the search skips
#: text without one at regex speed (every unit of every page is read for ranges).
_DAY_NAME = (r"((?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?|lunes|martes|mi[eé]rcoles|mi[eé]|jueves|"
             r"viernes|s[aá]bado|s[aá]b|domingo|dom|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|"
             r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche)\.?")
_DAY_RANGE = re.compile(
    rf"\b{_DAY_NAME}\s*(?:to|through|thru|until|a|al|bis|au|[-–—])\s*{_DAY_NAME}(?!\w)", re.I)


def _weekday(word: str) -> tuple[int, int] | None:
    """(language, day) of a day's name or short form ("Thu", "mié"), None for any other word."""
    word = word.lower()
    for language, week in enumerate(_WEEKS):
        for day, name in enumerate(week):
            if name == word or (len(word) >= 3 and name.startswith(word)):
                return language, day
    return None


@functools.lru_cache(maxsize=8192)
def days_spanned(text: str) -> frozenset[str]:
    """The days inside the day ranges a text writes, in its language ("Tuesday to Friday",
    "Tue–Fri", "de martes a viernes"): "are you open on Thursday?" is answered by a range that
    never names Thursday."""
    days: set[str] = set()
    for found in _DAY_RANGE.finditer(text):
        first, last = _weekday(found.group(1)), _weekday(found.group(2))
        if first is None or last is None or first[0] != last[0]:
            continue
        week = _WEEKS[first[0]]
        span = range(first[1], last[1] + 1) if first[1] <= last[1] else [*range(first[1], 7), *range(last[1] + 1)]
        days.update(week[i] for i in span)
    return frozenset(days)


#: The days of the week written out, singular or plural (en, es, de, fr), for the patterns here and in
#: app/carries.py.
WEEKDAY_NAMES = (r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|lunes|martes|mi[eé]rcoles|jueves|viernes|"
                 r"s[aá]bados?|domingos?|montags?|dienstags?|mittwochs?|donnerstags?|freitags?|samstags?|sonntags?|"
                 r"lundis?|mardis?|mercredis?|jeudis?|vendredis?|samedis?|dimanches?)")
#: A day of the week asked about, written out ("Thursday", "los sábados"), or the weekend.
_ASKED_DAY = re.compile(
    rf"\b(?:{WEEKDAY_NAMES}|week-?ends?|fin(?:es)?\s+de\s+semana|finde|wochenenden?)\b", re.I)
#: The weekend, which an hours table writes as its two days.
_WEEKEND = re.compile(r"\b(?:week-?ends?|fin(?:es)?\s+de\s+semana|finde|wochenenden?)\b", re.I)
_WORKING_WEEK = re.compile(
    r"\b(?:week-?days?|during\s+the\s+week|entre\s*semana|d[ií]as\s+(?:laborables|de\s+diario)|"
    r"unter\s+der\s+woche|werktags?|wochentags?|en\s+semaine)\b", re.I)
#: The hours of a clock written in words, English and Spanish ("half three", "a las seis").
HOUR_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
HOUR_WORDS_ES = "una|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|once|doce"
#: When in the day a visitor means to come: a clock time ("4:45", "around 4", "til 7", "a las
#: seis", "half three"), a part of the day ("afternoon", "por la tarde"), or how late or early.
_TIME_OF_DAY = re.compile(
    r"\b\d{1,2}[:.]\d{2}\b(?![:./-]?\d)|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|h|uhr|o'?clock|ish)(?!\w)"
    rf"|\b(?:half|quarter)\s+(?:past\s+|to\s+)?(?:{HOUR_WORDS})\b"
    rf"|\b(?:at|around|about|by|til|till|until|before|after|gegen|um|vers)\s+(?:\d{{1,2}}|{HOUR_WORDS}|noon|midday)\b"
    # Not a count: "about ten times", "for 10 people", "by 2 days".
    r"(?![:./-]?\d|\s+(?:people|persons|of|percent|(?!pls\b|thanks\b)\w+s)\b)"
    rf"|\b(?:a|sobre|hacia|antes\s+de|despu[eé]s\s+de)\s+las\s+(?:{HOUR_WORDS_ES})(?:\s+y\s+(?:media|cuarto))?\b"
    r"|\b(?:por|de|a)\s+la\s+ma[nñ]ana\b"
    r"|\b(?:mornings?|afternoons?|evenings?|night|tonight|lunchtime|noon|midday|tarde|tardes|noche|mediod[ií]a|"
    r"morgens|vormittags?|nachmittags?|abends?|matin|après-midi|soir)\b"
    r"|\b(?:late|later|latest|early|earlier|earliest|temprano|pronto|spät|später|früh|tard|tôt)\b", re.I)
#: How a visitor says they will come ("swing by", "show up", "si paso"): words of the visit, not of
#: what it is about, which the site need not use.
_VISIT = re.compile(
    r"\b(?:show|turn)\s+up\b|\b(?:swing|drop|pop|stop|come|stay|head|get)\s+(?:by|in|over|round|around|there|open)\b"
    r"|\b(?:still|til|till|until|around|about|like|ish)\b"
    r"|\b(?:paso|pasar|pasarme|pasamos|llego|llegar|llegamos|ir|venir|vengo|todav[ií]a|sobre|hacia|quer[ií]a|"
    r"abr[ií]s|abr[ei]n?|abiert[oa]s?|estar[aá]s?|est[aá]is)\b"
    r"|\b(?:vorbeikommen|vorbeischauen|noch|gegen|passer|encore|vers)\b", re.I)


@functools.lru_cache(maxsize=1024)
def visit_words(question: str) -> frozenset[str]:
    """The words of a question that propose a time to visit on a day ("is it too late to show up
    at 4:45 on a Wednesday?", "¿el domingo por la tarde abrís? quería ir sobre las cuatro"): it
    asks the hours, in words an hours table never uses. Empty for any other question."""
    if not (_ASKED_DAY.search(question) or RELATIVE_DAY.search(question)):
        return frozenset()
    times = [m.group(0) for m in _TIME_OF_DAY.finditer(question)]
    if not times:
        return frozenset()
    said = " ".join([*times, *(m.group(0) for m in _VISIT.finditer(question))]).lower()
    return frozenset(re.findall(r"\w+", said))


#: The word hours are headed with in the question's language, searched with a question that
#: proposes a time to visit: "at 4:45 on a Wednesday" shares no word with "Tuesday to Friday".
_HOURS_WORDS = {"en": "opening hours", "es": "horario", "de": "Öffnungszeiten", "fr": "horaires"}


#: When the place itself opens or closes: "¿a qué hora abrís el jueves?", "are you open Monday?",
#: "habt ihr am Montag geöffnet?". Searched with the word hours are headed with: "abrís" shares no
#: word with "Horario / De martes a viernes: 7:30 – 17:00".
_ASKS_OWN_HOURS = re.compile(
    r"\b(?:are|r)\s+(?:you|u|y'?all)\s+(?:guys\s+)?(?:open|closed)\b|\byou(?:'re|\s+are)\s+(?:open|closed)\b"
    r"|\b(?:do|will|would)\s+(?:you|u)\s+(?:guys\s+)?(?:open|close|shut)\b"
    r"|\babr[ií]s\b|\bcerr[aá]is\b|\best[aá]is\s+(?:abiertos|cerrados)\b|\babr[ei]n\s+ustedes\b"
    r"|\b(?:habt|hat)\s+ihr\s+(?:\w+\s+){0,3}(?:offen|geöffnet|auf|zu|geschlossen)\b"
    r"|\b(?:öffnet|schließt)\s+ihr\b", re.I)


def when_to_visit(question: str, lang: str) -> tuple[str, frozenset[str]]:
    """For a question that proposes a time to visit (`visit_words`): the words to search it with
    and the question's own words that propose it. For one that asks when the place itself opens
    or closes, the words to search it with. ("", frozenset()) for any other question."""
    visiting = visit_words(question)
    if not visiting:
        if _ASKS_OWN_HOURS.search(question):
            return _HOURS_WORDS.get(primary_subtag(lang) or "en", "opening hours"), frozenset()
        return "", frozenset()
    return _HOURS_WORDS.get(primary_subtag(lang) or "en", "opening hours"), visiting


def period_days(question: str, lang: str) -> str:
    """The days of the weekend or of the working week, as `lang` writes them, when the question asks
    about one ("how early do you open on weekends?", "¿a qué hora abrís entre semana?"), which an
    hours table writes a row each (or a range); "" otherwise."""
    week = _WEEKS[{"es": 1, "de": 2, "fr": 3}.get(primary_subtag(lang) or "en", 0)]
    if _WEEKEND.search(question):
        return f"{week[5]} {week[6]}"
    if _WORKING_WEEK.search(question):
        return " ".join(week[:5])
    return ""
