"""Whether a text carries what a question asks for: a price, a time of day, a date, a number, a
length of time, a temperature, a phone number or e-mail address, a street address, a place, an API
name, a command, a nutrition figure. app/asks.py reads what a question asks for; the extractive
answer rewards a unit that carries it (app/extractive.py). The patterns cover the languages the
sites are written in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from app.visits import HOUR_WORDS, HOUR_WORDS_ES, WEEKDAY_NAMES

_HAS_NUMBER = re.compile(r"[\d$€£¥]")
_TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|h|uhr)\b|\b\d{1,2}:\d{2}\b", re.I)
_CLOSED_ALL_DAY = re.compile(r"\b(?:closed|cerrado|geschlossen|ferm[ée]e?|geruht|ruhetag)\b", re.I)
_MONEY = re.compile(r"[$€£¥]\s?\d|\d\s?(?:€|eur|usd|dollars?|euros?)\b", re.I)
_DATE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b", re.I)
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d[\d\s().-]{6,}\d(?![\w.])")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
#: A street address: an "Address:" label (structured facts write one: ingest/facts/render.py), a house
#: number before a street's name ("14 Quay Street"), or a Spanish or German street with its number.
#: Case matters: "the IP address: 127.0.0.1" on documentation is not one.
_ADDRESS = re.compile(
    r"(?:^|[.;\n]\s*)(?:Address|Dirección|Direccion|Adresse|Anschrift)\s*:"
    r"|\b\d{1,5}[a-z]?,?\s+(?:[A-Z][\w'’.-]*\s+){1,3}(?:Street|St\.|Road|Rd\.|Avenue|Ave\.|Lane|Boulevard|Blvd\.|"
    r"Drive|Way|Place|Square|Quay|Court|Terrace|Highway|Parkway|Row|Wharf)\b"
    r"|\b(?:Calle|C/|Avenida|Avda\.|Plaza|Paseo|Carrer|Rua)\s+[^\W\d][^\n,]{1,40},?\s+(?:n[º°o]\.?\s*)?\d{1,4}\b"
    r"|\b[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|weg|platz|gasse|allee|ring|damm)\s+\d{1,4}[a-z]?\b")
_API_NAME = re.compile(r"`[^`]+`|\b[A-Z][a-z]+[A-Z]\w*|\b[a-z]+_[a-z_]+\b|\b\w+\.\w+\(")
#: A command to run: `code`, a prompt, a --flag, or a packaging or serving tool's name.
COMMAND_TEXT: re.Pattern[str] = re.compile(
    r"`|\$ |(?<![\w-])--?[a-z][\w-]+|\b(?:pip|python3?|pipx|twine|uv|fastapi|uvicorn)\s")
#: A time of day in words ("noon", "at four", "a las cinco"), beside the figures `_TIME` reads.
_CLOCK = re.compile(
    r"\b(?:noon|midday|midnight|o'?clock|mediod[ií]a|medianoche|mittags?|mitternacht|midi|minuit)\b"
    rf"|\b(?:at|a\s+las|um|à)\s+(?:\d{{1,2}}|{HOUR_WORDS}|{HOUR_WORDS_ES})\b", re.I)
#: The units a length of time is counted in (en, es, de, fr, sv), for the patterns here and in
#: app/asks.py.
#: The units shorter than an hour: a step's time, never how long food keeps (`_keeping_time`).
_SHORT_TIME_UNITS = r"min(?:ute)?s?|secs?|seconds?|minutos?|minuten?|minuter"
TIME_UNITS = (rf"(?:{_SHORT_TIME_UNITS}|hrs?|hours?|days?|nights?|weeks?|months?|years?|"
              r"horas?|d[ií]as?|semanas?|mes(?:es)?|años?|"
              r"stunden?|tage?n?|wochen?|monate?n?|jahre?n?|"
              r"heures?|jours?|semaines?|mois|ans?|timmar|timme|dagar|veckor)")
#: A length of time ("8 minutes", "3 to 4 months", "48 Stunden"), which a number alone is not.
_DURATION = re.compile(rf"\d\s*{TIME_UNITS}\b", re.I)
#: A length of time in words, or as code writes one ("a week", "overnight", "dos semanas",
#: "timedelta(minutes=15)", "ACCESS_TOKEN_EXPIRE_MINUTES = 30"), beside the figures `_DURATION` reads.
_DURATION_WORDS = re.compile(
    r"\b(?:an?|half\s+an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|forty-five|fifty|sixty|ninety|a\s+few|few|several|a\s+couple\s+of|"
    r"un|una|unos|unas|dos|tres|cuatro|cinco|seis|siete|ocho|diez|quince|veinte|treinta|media|"
    r"ein|eine|einen|einem|einer|zwei|drei|vier|fünf|sechs|sieben|acht|zehn|fünfzehn|zwanzig|dreißig|halbe|"
    r"einige|ein\s+paar|une?|deux|trois|quelques|demi)[\s-]+"
    rf"{TIME_UNITS}\b"
    r"|\b(?:overnight|fortnight|toda\s+la\s+noche|über\s+nacht|tagelang|am\s+vortag|la\s+veille"
    r"|the\s+(?:day|night|week)\s+before|el\s+d[ií]a\s+(?:antes|anterior)|(?:the\s+)?(?:next|same)\s+day"
    r"|al\s+d[ií]a\s+siguiente|am\s+n[äa]chsten\s+tag"
    r"|indefinitely|forever|para\s+siempre)\b"
    rf"|(?:\d|[½¼¾])[\s-]*(?:{TIME_UNITS}|h)\b"  # "36-hour", "1½ hours", "24h"
    r"|\d\s*(?:(?:business|working|calendar|full|whole)\s+(?:days|weeks|hours)|werktage?n?|arbeitstage?n?)\b"
    r"|\b(?:minutes|hours|days|weeks|seconds)\s*=\s*\d|_(?:MINUTES|HOURS|DAYS|SECONDS)\s*=\s*\d"
    # "max_age - Sets a maximum time in seconds for browsers to cache CORS responses. Defaults to 600."
    r"|\b(?:seconds|minutes|hours|days|segundos|minutos|horas|sekunden|minuten|stunden)\b[^\n]{0,80}\d", re.I)
#: A size or a weight: "900 g", "2 GB", "10 MiB", "8-inch", "1024 * 1024" bytes.
_SIZE = re.compile(
    r"\d[\d.,]*\s*-?\s*(?:[kmgt]i?b|bytes?|kilobytes?|megabytes?|gigabytes?|terabytes?|g|kg|grams?|gramos?|gramm|lbs?|"
    r"pounds?|oz|ounces?|inch(?:es)?|in\.|cm|mm|ml|l|litres?|liters?|litros?|quarts?|cups?)\b|\d+\s*\*\s*\d+", re.I)
#: How many a recipe serves or makes: "Serves 4", "Yield: 16 servings", "für 4 Personen", "12 muffins".
_SERVINGS = re.compile(
    r"\b(?:serves|servings?|portions?|raciones|porciones|personas|people|persons|yields?|makes|portionen|personen|"
    r"portioner|personnes|für|para)\b\s*:?\s*(?:about\s+|up\s+to\s+)?\d"
    r"|\d+\s*(?:-\s*\d+\s*)?(?:servings?|portions?|raciones|porciones|personas|people|persons|portionen|personen|"
    r"portioner|personnes|pancakes|muffins|cookies|bars|pieces|balls|bites|rolls|buns|slices)\b", re.I)
#: What to use instead: "you can use cream cheese instead", "substitute almond milk", "swap in…",
#: "if you don't have mascarpone", "or use…", "en lugar de", "statt".
SUBSTITUTE_WORDS = (r"substitut\w*|replace\w*|swap\w*|in\s+place\s+of|en\s+lugar\s+de|en\s+vez\s+de|sustitu\w+"
                    r"|reemplaz\w+|statt|anstelle|ersetz\w+|au\s+lieu\s+de|remplac\w+")
"""Words that say one thing stands for another, in a question (app/asks.py) and in an answer."""
_SUBSTITUTE = re.compile(
    rf"\b(?:instead|alternative\w*|(?:do\s*n[o’']t|dont)\s+have|or\s+use|works?\s+(?:just\s+)?as\s+well"
    rf"|{SUBSTITUTE_WORDS})\b", re.I)
#: A day of the week, or every day: "Parcels go out on Tuesdays and Thursdays", "a diario".
_WEEKDAY = re.compile(
    rf"\b{WEEKDAY_NAMES}\b|\b(?:daily|every\s+day|todos\s+los\s+d[ií]as|a\s+diario|t[äa]glich|jeden\s+tag"
    r"|tous\s+les\s+jours)\b", re.I)
_YEAR = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")
_DISTANCE = re.compile(r"\d\s*(?:km|kilomet(?:er|re)s?|miles?|mi|metres?|meters?|m)\b", re.I)
#: A place written out: a preposition with a name or a place noun ("from Gull Point", "on our harbor
#: terrace", "upstairs in the bookshop", "en la terraza", "in der Küche"), or upstairs / next door.
_PLACE_NOUN = (r"terrace|street|road|lane|floor|room|kitchen|building|door|corner|market|farm|garden|"
               r"harbou?r|car park|parking lot|lot|station|square|counter|shop|store|bookshop|café|cafe|"
               r"terraza|calle|planta|sala|cocina|puerta|esquina|mercado|tienda|librería|puerto")
_PLACE_TEXT = re.compile(
    r"\b(?:upstairs|downstairs|next door|arriba|abajo|oben|unten|nebenan)\b"
    r"|\b(?:in|at|on|from|near|behind|beside|inside|outside|opposite|en|desde|cerca de|junto a|frente a)\s+"
    r"(?:(?:the|our|your|a|la|el|los|las|nuestra|nuestro)\s+)?"
    # A name, not a day or a month ("on Monday", "in May").
    r"(?:(?!(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?\b|(?:January|February|March|April|May|June|July|August|"
    r"September|October|November|December)\b)"
    rf"[A-ZÀ-Ý][\w'’-]+|(?:\w+\s+)?(?:{_PLACE_NOUN})\b)"
    r"|\b(?:im|am|auf|aus|bei|beim|vom|von|in der|in den|an der)\s+(?:(?:der|die|das|dem|den|unserer|unserem)\s+)?"
    r"[A-ZÄÖÜ][\wäöüß-]+")
#: Degrees ("165 ºC", "350°F", "200 grados"), which a number alone is not.
_TEMPERATURE = re.compile(
    r"\d\s*(?:°|º|˚|o(?=[CF]\b))|\d\s*(?:degrees?|grados|grader|grad|degr[eé]s)\b|\b\d{2,3}\s?[FC]\b", re.I)
#: A length of time in units shorter than food keeps for: "process 1 minute", "bake 25 minutes".
_SHORT_UNIT = re.compile(rf"\b(?:{_SHORT_TIME_UNITS})\b", re.I)


def _keeping_time(text: str) -> bool:
    """A length of time food keeps for: hours or longer ("3 to 4 days", "up to 3 months", "24 hours",
    "overnight"), not minutes."""
    return any(not _SHORT_UNIT.search(found.group(0))
               for pattern in (_DURATION, _DURATION_WORDS) for found in pattern.finditer(text))


#: A nutrition figure ("200kcal", "Calories: 158", "Protein: 12 g"). Grams alone are not one: "a
#: 900 g loaf" answered "how many calories are in a slice?"; they are beside a nutrient's name.
_NUTRIENT = (r"(?:sodium|sodio|natrium|protein\w*|prote[ií]nas?|eiwei(?:ß|ss)|carbohydrates?|carbs|hidratos"
             r"|kohlenhydrate|glucides|fat|grasas?|fett|lipides|sugars?|az[uú]car(?:es)?|zucker|sucres?"
             r"|fib(?:re|er)|fibra|ballaststoffe|cholesterol|colesterol|saturated)")
_NUTRITION = re.compile(
    r"\d[\d.,]*\s*(?:kcal|k?cal(?:ories)?|calor[ií]as|kalorien|kalorier|kj)\b"
    rf"|\b(?:calories|calorías|kalorien|kalorier|{_NUTRIENT})\b[^.\n;]{{0,24}}\d"
    rf"|\d[\d.,]*\s*m?g\s+(?:of\s+|de\s+)?{_NUTRIENT}\b", re.I)
#: A count, in figures or in words ("up to eight people").
_COUNT = re.compile(
    rf"\d|\b(?:{HOUR_WORDS}|twenty|thirty|forty|fifty|hundred|"
    rf"dozen|single|couple|uno|{HOUR_WORDS_ES}|docena|veinte|cien|"
    r"eins|ein|eine|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|zwölf|zwanzig|hundert|dutzend|"
    r"un|deux|trois|quatre|cinq|sept|huit|neuf|dix|douze|en|ett|två|tre|fyra|fem|sex|sju|åtta|nio|tio)\b", re.I)


def names_api(text: str) -> bool:
    """Whether a sentence names an API: CamelCase, snake_case or dotted.names, or `code`."""
    return bool(_API_NAME.search(text))


@functools.lru_cache(maxsize=16384)
def carries(text: str, what: str) -> bool:
    """Whether a unit's text carries `what` (a key of `_CARRIED`: a price, a time, an API name…).
    Looked for only when a question asks for it, and remembered: the same texts come back
    question after question."""
    if what.startswith("version of "):  # "Pip 9.0", "pip >= 9", "Python 3.8 or newer"
        tool = re.escape(what.removeprefix("version of "))
        return re.search(rf"\b{tool}\b\W{{0,4}}(?:version\s+|v)?\d+(?:\.\d+)*", text, re.I) is not None
    return _CARRIED[what](text)


_CARRIED: dict[str, Callable[[str], bool]] = {
    "money": lambda text: bool(_MONEY.search(text)),
    # "Monday: Closed" answers "are you open on Monday?" as a time would.
    "time": lambda text: bool(_TIME.search(text) or _CLOSED_ALL_DAY.search(text)),
    "date": lambda text: bool(_DATE.search(text)),
    "clock": lambda text: carries(text, "time") or bool(_CLOCK.search(text)),
    "number": lambda text: bool(_HAS_NUMBER.search(text)),
    "duration": lambda text: bool(_DURATION.search(text)),
    "size": lambda text: bool(_SIZE.search(text)),
    "year": lambda text: bool(_YEAR.search(text)),
    "weekday": lambda text: bool(_WEEKDAY.search(text)),
    "substitute": lambda text: bool(_SUBSTITUTE.search(text)),
    "servings": lambda text: bool(_SERVINGS.search(text)),
    # From one time to another ("9:00 am to 12:00 noon") is how long something lasts too, and a
    # distance how long a walk is.
    "length_of_time": lambda text: bool(_DURATION.search(text) or _DURATION_WORDS.search(text)
                                        or _DISTANCE.search(text) or len(_TIME.findall(text)) >= 2),
    "keeping_time": _keeping_time,
    "temperature": lambda text: bool(_TEMPERATURE.search(text)),
    "contact": lambda text: bool(_PHONE.search(text) or _EMAIL.search(text)),
    "phone": lambda text: bool(_PHONE.search(text)),
    "email": lambda text: bool(_EMAIL.search(text)),
    "address": lambda text: bool(_ADDRESS.search(text)),
    "api": lambda text: names_api(text),
    "command": lambda text: bool(COMMAND_TEXT.search(text)),
    "nutrition": lambda text: bool(_NUTRITION.search(text)),
    "count": lambda text: bool(_COUNT.search(text)),
    "place": lambda text: bool(_PLACE_TEXT.search(text)),
}
