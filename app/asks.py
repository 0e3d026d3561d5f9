"""What a question asks for — a price, a time, a date, a number, a length of time, a
temperature, a way to reach someone, how to do something, where the place is, when a visitor
means to come (read in app/visits.py) — and what an answer must write for it. Whether a text
carries it is app/carries.py's; the extractive answer rewards a unit that carries what its
question asks for (app/extractive.py). The patterns cover the languages the sites are written in.
"""

from __future__ import annotations

import functools
import re

import msgspec

from app.carries import SUBSTITUTE_WORDS, TIME_UNITS, carries
from app.visits import RELATIVE_DAY, visit_words
from ingest.lang import primary_subtag

# What a question asks for.
_ASKS_PRICE = re.compile(
    r"\b(how much|price|prices|cost|costs|fee|fees|pay|charge|cheap|expensive|"
    r"cu[aá]nto cuesta|cu[aá]nto vale|precio|precios|cuesta|coste|"
    r"wie ?viel|preis|preise|kostet|kosten|gebühr)\b", re.I)
_ASKS_TIME = re.compile(
    r"\b(when|what time|hours?|open|opens|opening|close|closes|closing|until|"
    r"cu[aá]ndo|horario|hora|abr[eií]s?|abren|abrimos|abiert[oa]s?|cierra|cierran|cerr[aá]is|cerramos|"
    r"wann|uhrzeit|öffnungszeiten|geöffnet|offen|schließt)\b", re.I)
#: A question that asks for a time of day ("what time…", "how late…", "¿a qué hora…?"), which only a
#: passage that writes one answers: "what time does the ferry leave?" is not answered by "he
#: skippered the ferry for twelve years".
_ASKS_CLOCK = re.compile(
    r"\b(?:what\s+time|which\s+time|how\s+(?:early|late)(?!\s+(?:do|does|should|must|would)\s+(?:i|we)\b)"
    r"|(?:till|until)\s+when|opening\s+hours|"
    r"a\s+qu[eé]\s+hora|hasta\s+qu[eé]\s+hora|um\s+wie\s*viel\s+uhr|[àa]\s+quelle\s+heure)\b", re.I)
#: A question that asks what something costs ("how much is the loaf?", "what does shipping cost?",
#: "¿cuánto cuesta?"), which only a passage that writes a price answers. Not "how much water goes
#: in?" (an amount) nor "does it cost extra?" (yes or no).
_ASKS_COST = re.compile(
    r"\bhow\s+much\s+(?:is|are|does|do|would|will|for|'s|should|did)\b|\b(?:how\s+much|what)\b.*\bcosts?\b"
    r"|\bwhat(?:'s|\s+is|\s+are|\s+does|\s+do)?\s+(?:the\s+|your\s+)?(?:price|cost)s?\b|\bprices?\s+(?:of|for)\b"
    r"|\bcu[aá]nto\s+(?:(?:me|nos|te|le|les)\s+)?(?:cuesta|vale|cuestan|valen|sale|cobr\w+)|\bprecios?\s+(?:de|del)\b"
    r"|\bwas\s+kostet|\bwie\s*viel\s+kostet|\bcombien\s+co[uû]t"
    # "What does BigQuery charge per terabyte?", "how much deposit do I get back?"
    r"|\bwhat\s+(?:does|do|will|would)\s+(?:[\w&'-]+\s+){0,3}charge\b"
    r"|\bhow\s+much\s+(?:of\s+an?\s+|of\s+the\s+)?(?:deposit|refund|fee|surcharge|credit)\b", re.I)
_ASKS_DATE = re.compile(r"\b(when|date|which day|what day|cu[aá]ndo|fecha|wann|datum)\b", re.I)
#: "Which days do you ship?", "¿qué días abrís?", "an welchen Tagen…?": a day of the week.
_ASKS_WEEKDAY = re.compile(
    r"\b(?:which|what|on\s+which|on\s+what)\s+days?\b|\bqu[eé]\s+d[ií]as?\b|\bwelche[nm]?\s+tag(?:e|en)?\b"
    r"|\bquels?\s+jours?\b", re.I)
_ASKS_COUNT = re.compile(r"\b(how many|how long|how big|how old|cu[aá]nt[oa]s|wie viele|wie lange)\b", re.I)
#: "How long does it bake?", "how long will it keep?": a length of time, which a number alone is
#: not (an ingredient list is full of numbers).
_ASKS_DURATION = re.compile(
    rf"\b(how long|how many {TIME_UNITS}|cu[aá]nto tiempo|cu[aá]nt[oa]s {TIME_UNITS}|wie lange|combien de temps"
    r"|hur länge"
    r"|how\s+far\s+(?:in\s+advance|ahead)|cu[aá]nta\s+antelaci[oó]n|wie\s+(?:lange|weit)\s+(?:vorher|im\s+voraus))\b",
    re.I)
#: "What year was the building built?", "¿desde cuándo…?": a year, which another number is not.
_ASKS_YEAR = re.compile(
    r"\b(?:what|which|in\s+what|in\s+which)\s+year\b|\bsince\s+when\b|\ben\s+qu[eé]\s+a[nñ]o\b|\bdesde\s+cu[aá]ndo\b"
    r"|\bin\s+welchem\s+jahr\b|\bseit\s+wann\b|\ben\s+quelle\s+ann[ée]e\b|\bdepuis\s+quand\b", re.I)
#: "I have no mascarpone, what can I use?", "instead of the slow cooker", "¿puedo sustituir…?": a
#: substitute, which a unit that says what to use instead answers.
_ASKS_SUBSTITUTE = re.compile(
    rf"\b(?:instead\s+of|alternative\s+to|{SUBSTITUTE_WORDS})\b"
    # "my store has no mascarpone - what can I use…?": something missing, and what to use.
    r"|\b(?:(?:do\s*n[o']t|dont)\s+have|(?:has|have|got)\s+no|out\s+of|no\s+tengo|no\s+hay)\b"
    r"(?=.*\b(?:what|which)\s+(?:else\s+)?(?:can|could|should|do)\s+(?:i|we)\s+use|qu[eé]\s+(?:puedo|uso)|was\s+kann\s+ich)",
    re.I)
#: "Where does the walk start?", "¿dónde se recoge?": a place, any place (not only the site's own).
_ASKS_PLACE = re.compile(r"\b(where(?:abouts)?|d[oó]nde|ad[oó]nde|wo(?:her|hin)?|o[uù])\b", re.I)
#: "What temperature?", "how hot should the oven be?": degrees, which a number alone is not.
#: Not "how hot" beside a spice ("how hot is the sriracha mayo really?"), which asks how spicy it
#: is; a chili or a sauce is left alone ("how hot should the oven be for the chili?").
_ASKS_TEMPERATURE = re.compile(
    r"\b(temperatures?|how hot(?!.*\b(?:spic\w*|sriracha|jalape\w*|wasabi|horseradish|gochujang|harissa|kimchi|"
    r"salsas?|hot\s+sauces?)\b)|degrees|temperatura|grados|wie hei(?:ß|ss)|temperatur|grad|quelle température|"
    r"hur varm|grader)\b", re.I)
_ASKS_CONTACT = re.compile(
    r"\b(phone|telephone|call|number|e-?mail|contact|reach|tel[eé]fono|llamar|correo|telefon\w*|anrufen)\b", re.I)
#: Where the place itself is: "where are you located?", "what's your address?", "wo finde ich
#: euch?". Only about the site's own place (you, your, the shop): "where is the config file
#: located?" or "the client's IP address" on documentation ask something else.
_PLACE = r"(?:shop|store|caf[eé]|cafe|bakery|restaurant|office|studio|premises|showroom|venue|building|bookshop|bar)"
_LUGAR = r"(?:la\s+(?:tienda|cafeter[ií]a|panader[ií]a|librer[ií]a)|el\s+(?:local|caf[eé]|negocio))"
_ASKS_LOCATION = re.compile(
    # English
    r"\bwhere\s+(?:are|r)\s+(?:you|u|y'?all)\b"
    rf"|\bwhere(?:'s|\s+is|\s+(?:exactly|actually)\s+is)\s+(?:(?:exactly|actually)\s+)?(?:your|the)\s+{_PLACE}\b"
    r"|\bwhere\s+(?:can|do|should|would)\s+(?:i|we)\s+(?:find|visit|meet)\s+(?:you|your)\b"
    r"|\b(?:street|mailing|postal|physical|full|exact)\s+address\b"
    rf"|\b(?:your|the\s+{_PLACE}(?:'s)?)\s+(?:address|location)\b"
    rf"|\bthe\s+address(?:(?=\s*(?:[?.!,]|$|(?:pls|please)\b))"
    rf"|\s+for\s+(?:my\s+|the\s+)?(?:gps|sat\s?nav|navigation|maps?|google\s+maps|{_PLACE})\b)"
    r"|^\W*(?:address|location|directions)\b\W*(?:pls|please)?\W*$"
    rf"|\bhow\s+(?:do|can|would)\s+(?:i|we)\s+(?:get|find)\s+(?:to\s+)?(?:you|your\s+{_PLACE}|the\s+{_PLACE})\b"
    rf"|\b(?:zip|postal|post)\s*code\s+(?:for|of)\s+(?:you|your\s+{_PLACE}|the\s+{_PLACE})\b|\byour\s+(?:zip|postal|post)\s*code\b"
    rf"|\b(?:what|which)\s+(?:state|town|city|county|country|neighbou?rhood|street)\s+(?:are\s+you|is\s+(?:your|the)\s+{_PLACE}"
    r"|is\s+[\w&' ]{2,40}?\s+in\b|are\s+you\s+(?:guys\s+)?in\b)"
    # Spanish
    r"|\bd[oó]nde\s+(?:est[aá]is|est[aá]n|os\s+encuentro|les\s+encuentro|os\s+encontr[aá]is|se\s+encuentran)\b"
    rf"|\bd[oó]nde\s+(?:est[aá]|queda)\s+(?:exactamente\s+)?{_LUGAR}\b|\bc[oó]mo\s+(?:os|les)\s+encuentro\b"
    r"|\b(?:vuestra|su|tu)\s+direcci[oó]n\b"
    rf"|\bla\s+direcci[oó]n\s+(?:de\s+{_LUGAR}|del\s+(?:local|caf[eé]|negocio)|para\s+el\s+(?:gps|navegador)|exacta|postal)\b"
    r"|\b(?:cu[aá]l\s+es|necesito|me\s+(?:das|dais|dan))\s+la\s+direcci[oó]n(?:\s+para\s+el\s+(?:gps|navegador))?"
    r"(?!\s+(?:ip|de\s+(?:correo|email|e-mail)))\b"
    r"|\ben\s+qu[eé]\s+(?:pueblo|ciudad|calle|estado|zona)\s+(?:est[aá]|est[aá]is|est[aá]n)\b"
    r"|\bc[oó]mo\s+(?:llego|se\s+llega)\s+(?:a\s+vuestr|hasta\s+vosotr|a\s+la\s+tienda)"
    # German, French
    r"|\bwo\s+(?:seid\s+ihr|sind\s+sie|finde\s+ich\s+(?:euch|sie)|ist\s+(?:euer|ihr)\s+\w+|befindet\s+sich\s+(?:euer|ihr))\b"
    r"|\b(?:eure|ihre|deine)\s+(?:adresse|anschrift)\b|\bwie\s+komme\s+ich\s+zu\s+(?:euch|ihnen)\b"
    r"|\bo[uù]\s+(?:[eê]tes[- ]vous|se\s+trouve\s+(?:votre|la\s+boutique))\b|\bvotre\s+adresse\b", re.I)
#: How to reach the place itself: "what's your phone number?", "can I email you?", "¿cuál es vuestro
#: teléfono?", "wie kann ich euch erreichen?". Only the site's own (you, your, the shop): "the phone
#: number field" or "send an email after signup" on documentation ask something else.
_ASKS_OWN_CONTACT = re.compile(
    # English
    rf"\b(?:your|ur|the\s+{_PLACE}(?:'s)?)\s+(?:(?:(?:tele)?phone|cell|mobile|contact|whatsapp)(?:\s+(?:number|no|details))?"
    r"|e-?mail(?:\s+address)?|number|contact\s+details)\b"
    rf"|\b(?:call|phone|ring|text|e-?mail|contact|reach|message)\s+(?:you|u|y'?all|the\s+{_PLACE})\b"
    r"|\bget\s+(?:in\s+touch|hold\s+of\s+(?:you|someone))\b"
    r"|\b(?:what|which)\s+(?:e-?mail(?:\s+address)?|(?:phone\s+)?number)\s+(?:can|do|should|could)\s+(?:i|we)\s+"
    r"(?:write|call|ring|text|use|e-?mail|send)\b"
    # Spanish
    r"|\b(?:vuestro|su|tu)\s+(?:n[uú]mero\s+de\s+)?(?:tel[eé]fono|m[oó]vil|whatsapp|correo(?:\s+electr[oó]nico)?|e-?mail)\b"
    r"|\b(?:llamaros|llamarles|escribiros|escribirles|contactaros|contactarles|localizaros)\b"
    r"|\bcontactar\s+con\s+(?:vosotros|ustedes)\b"
    # German, French
    r"|\b(?:eure|ihre|deine)\s+(?:telefonnummer|nummer|handynummer|e-?mail(?:-adresse)?|kontaktdaten)\b"
    r"|\b(?:euch|sie)\s+(?:anrufen|erreichen|kontaktieren)\b"
    r"|\bvotre\s+(?:num[eé]ro(?:\s+de\s+t[eé]l[eé]phone)?|t[eé]l[eé]phone|e-?mail|courriel)\b|\bvous\s+(?:appeler|joindre|contacter)\b",
    re.I)
#: The word for an address in the question's language, searched with a question about where the
#: place is; structured facts label it "Address" whatever the page's language.
_ADDRESS_WORDS = {"en": "address", "es": "dirección address", "de": "Adresse address", "fr": "adresse address"}

_ASKS_HOWTO = re.compile(
    r"\b(how (?:do|can|should|to)|how would|what(?:'s| is) the (?:way|command)|example|"
    r"c[oó]mo (?:puedo|hago|se)|wie (?:kann|mache|erstelle))\b", re.I)
#: A question that opens with "how" / "cómo" / "wie" and a verb ("Wie lege ich fest…", "cómo le
#: devuelvo…") asks how to do something too; "how much", "wie lange" ask for a number.
_OPENS_WITH_HOW = re.compile(
    r"^\W*(?:how|c[oó]mo|wie)\s+(?!much\b|many\b|long\b|old\b|big\b|often\b|hot\b|warm\b|cold\b|far\b|viele?\b"
    r"|lange\b|alt\b|oft\b|hei(?:ß|ss)\b|gro)",
    re.I)

#: Where a question's clauses part: "Andere Frage: Wie …?" opens its second with "how".
_CLAUSE = re.compile(r"(?<=[.:;!?])\s+")

#: Weight of a word that says what kind of answer is wanted ("price", "open") against a subject word.
ASK_WORD_FACTOR = 0.3
ASK_WORD = re.compile(
    r"much|many|long|price|prices|cost|costs|fee|fees|pay|charge|when|time|hours?|open|opens|opening|"
    r"close|closes|closing|date|day|precio|precios|cuesta|cuesta|horario|hora|abre|abren|abiertos?|"
    r"cierra|fecha|preis|preise|kostet|kosten|wann|uhrzeit|öffnungszeiten|geöffnet|datum|"
    r"number|phone|telephone|e-?mail|tel[eé]fono|correo|telefon\w*|"
    r"lange|tiempo|temperatures?|temperatura|temperatur|degrees|grados|grad", re.I)


_QUESTION_WORD = re.compile(
    r"\s*[¿¡]?\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|do|does|did|can|could|should|"
    r"would|will|was|were|has|have|qu[eé]|cu[aá]l|qui[eé]n|cu[aá]ndo|d[oó]nde|por qu[eé]|c[oó]mo|"
    r"cu[aá]nto|puedo|hay|es|son|was|welche[rsn]?|wer|wann|wo|warum|wie|kann|ist|sind|gibt)\b", re.I)


#: A question that asks what, when, how much…: anywhere in English (and Spanish with its accents),
#: at a clause's start in German and in Spanish typed without accents ("cuanto cuesta", not "pan
#: que no lleve gluten"). "was" is left out: it is also English's "was it…?".
_ASKS_OPEN = re.compile(
    r"\b(?:what|which|who|whom|whose|when|where|why|how|qué|cuál|cuáles|quién|quiénes|cuándo|dónde|cómo|"
    r"cuánt[oa]s?)\b|(?:^|[¿¡,;:–—-])\s*(?:que|cual|quien|cuando|donde|como|cuant[oa]s?|welche[rsnm]?|wer|wen|"
    r"wem|wann|wo|woher|wohin|warum|wieso|weshalb|wie|wieviel)\b",
    re.I)


#: Words that never say what a question is about, beyond the search's stopwords: prepositions,
#: conjunctions, pronouns, modal and light verbs ("wie kann ich nach der Antwort…", "¿hacen
#: reparto?", "where can i leave the car when i come…"). The answer adds a unit for a subject word
#: the lead lacks (app/extractive.py `select`); for one of these it added "Refunds are made within
#: five days" to "do you deliver?". The term-coverage check does not count them either: "quiero
#: saber cuánto tarda…" was refused as using words the site never uses. Left out: words whose
#: first five letters begin a content word ("unter" → "Unternehmen", "hinter" → "Hintergrund",
#: "entre" → "entrega", "combien" → "combine"; "basically" → "basic auth", "actually" →
#: "actualizar", "quick" → "quickstart", "pregunta" → "preguntas frecuentes"). With them, the words
#: a visitor talks with ("ok", "hey", "kinda", "just curious", "oye", "jaja", "hallo"), and the
#: Spanish and German forms of opening and closing ("abren", "cierran", "öffnet"), which ask when
#: as "open" and "close" do.
NOT_A_SUBJECT = frozenset("""
    also just still even ever else instead really maybe please like without within via per much many
    get gets got getting make makes making want wants need needs come comes go goes going use using take takes
    nach wenn aus damit dass daß nur dann soll sollte sollen kann können muss müssen darf dürfen will
    welche welcher welches welchen welchem noch schon sich mich mir dich dir uns euch ob weil aber
    doch bis seit über vor ohne beim vom zum zur ins hier dort etwas sehr man habe hat
    haben wird werden bin bist war meine meinen meinem meiner deine deinen unser unsere ihre ihren
    dieser diese dieses diesen jetzt immer gibt geht mache machen
    hacen hace hacer hago desde hasta hacia según tras cuando cuál cuáles cuánto cuánta
    cuántos cuántas puedo puede pueden podemos debo debe quiero quieres tengo tiene tienen hay está
    están estoy me te le nos les mis tus muy ya también solo sólo algo así asi todo todos otro otra ahora
    tenéis teneis tenemos tenés
    siempre donde quien cuanto cuanta cuantos cuantas cual cuales viel viele wieviel
    quel quelle quels quelles
    ok okay hey hi hello hiya yeah yep nope thanks thank cheers lol btw pls plz um uh hmm kinda sorta
    wondering curious oye hola bueno pues jaja jeje gracias porfa hallo danke bitte salut bonjour merci alors
    abren abrís abris abrimos cierran cierra cerráis cerrais cerramos öffnet öffnen schließt schliesst schließen
    """.split())  # noqa: SIM905


def asks_yes_or_no(question: str) -> bool:
    """Whether `question` asks yes or no ("can I work on my laptop there?", "¿tenéis pan sin
    gluten?") rather than what, when or how much."""
    return not _ASKS_OPEN.search(question)


class Asks(msgspec.Struct, frozen=True):
    """What one question asks for (shared: `asks_of` remembers it)."""

    price: bool
    time: bool
    date: bool
    count: bool
    duration: bool
    temperature: bool
    howto: bool
    contact: bool
    location: bool = False
    substitute: bool = False
    """What to use instead of something: a unit that names a substitute answers."""
    weekday: bool = False
    """Which day of the week: a unit that names one ("on Tuesdays and Thursdays") answers."""
    place: bool = False
    """Where something is or comes from: any place written out answers. Not for where the place
    itself is (`location`), which its address answers."""
    own_contact: str = ""
    """How to reach the place itself (`contact_words`): "phone", "email", or "contact" for either."""


@functools.lru_cache(maxsize=1024)
def asks_of(question: str) -> Asks:
    """What `question` asks for. An imperative ("serve static files", "statische Dateien ausliefern") asks how
    to do it. Remembered: one answer asks it of the same question four times (the holiday dates, the
    weekend, the days a range spans, the units)."""
    # "Andere Frage: Wie verschicke ich…?", "I'm new here. How do I…?": a clause may open with "how".
    howto = (bool(_ASKS_HOWTO.search(question)
                  or any(_OPENS_WITH_HOW.match(clause) for clause in _CLAUSE.split(question)))
             or not (_QUESTION_WORD.match(question) or "?" in question))
    return Asks(price=bool(_ASKS_PRICE.search(question)),
                time=bool(_ASKS_TIME.search(question) or visit_words(question)),
                date=bool(_ASKS_DATE.search(question)), count=bool(_ASKS_COUNT.search(question)),
                duration=bool(_ASKS_DURATION.search(question)), temperature=bool(_ASKS_TEMPERATURE.search(question)),
                howto=howto, contact=bool(_ASKS_CONTACT.search(question)),
                location=bool(_asking_where(question)), own_contact=_contact_kind(question),
                place=bool(_ASKS_PLACE.search(question)) and not _asking_where(question),
                substitute=bool(_ASKS_SUBSTITUTE.search(question)), weekday=bool(_ASKS_WEEKDAY.search(question)))


@functools.lru_cache(maxsize=1024)
def _asking_where(question: str) -> str:
    """The parts of a question that ask where the place is ("where are you located"), read once
    per question: the answer path asks for them four times."""
    return " ".join(m.group(0) for m in _ASKS_LOCATION.finditer(question))


def where_words(question: str) -> frozenset[str]:
    """The words of a question that ask where the place is ("your address", "located"): like
    "price", they say what kind of answer is wanted, which an address gives without repeating
    them ("Email address (required)" uses the word and answers nothing)."""
    return frozenset(re.findall(r"\w+", _asking_where(question).lower()))


@functools.lru_cache(maxsize=1024)
def today_words(question: str) -> frozenset[str]:
    """The words of a question about when, or whether the place is open, that name the visitor's
    own day ("are you open today?"): no page names it ("today's bookshop" led). Empty for any
    other question ("compared to today, is that a known problem?")."""
    if not RELATIVE_DAY.search(question):
        return frozenset()
    asked = asks_of(question)
    if not (asked.time or asked.date):
        return frozenset()
    return frozenset(re.findall(r"\w+", " ".join(m.group(1) for m in RELATIVE_DAY.finditer(question)).lower()))


@functools.lru_cache(maxsize=1024)
def contact_words(question: str) -> frozenset[str]:
    """The words of a question that ask how to reach the place itself ("your email address", "call
    you"): like "price", they say what kind of answer is wanted, which "Phone: (207) 555-0148" gives
    without repeating them ("Email address (required)", a form's label, uses them and gives none)."""
    return frozenset(re.findall(r"\w+", " ".join(m.group(0) for m in _ASKS_OWN_CONTACT.finditer(question)).lower()))


_BY_EMAIL = re.compile(r"e-?mail\w*|correo|courriel|write|escrib\w*|kontaktdaten", re.I)
_BY_PHONE = re.compile(r"(?:tele)?phone|cell|mobile|whatsapp|number|call|ring|text|tel[eé]fono|m[oó]vil|llamar\w*|"
                       r"\w*nummer|anrufen|num[eé]ro|t[eé]l[eé]phone|appeler", re.I)


def _contact_kind(question: str) -> str:
    """What a question about reaching the place asks for: "phone", "email", "contact" (either, or
    both: "how can I get in touch?"), "" when it asks nothing of the kind."""
    words = contact_words(question)
    if not words:
        return ""
    by_email = any(_BY_EMAIL.fullmatch(w) for w in words)
    by_phone = any(_BY_PHONE.fullmatch(w) for w in words)
    return "email" if by_email and not by_phone else "phone" if by_phone and not by_email else "contact"


def asking_words(question: str) -> frozenset[str]:
    """The words of a question that say what kind of answer is wanted beyond `ASK_WORD`: where
    the place is, how to reach it, when a visitor means to come, the visitor's own day."""
    return where_words(question) | contact_words(question) | visit_words(question) | today_words(question)


def where_the_place_is(question: str, lang: str) -> tuple[str, str]:
    """For a question about where the place itself is ("where are you located?"): the words to
    search it with (an address is written "Address: 14 Quay Street", never "located"), and the
    question's own words that ask it, which the site need not use. ("", "") for any other question."""
    asked = _asking_where(question)
    if not asked:
        return "", ""
    return _ADDRESS_WORDS.get(primary_subtag(lang) or "en", "address"), asked


#: A nutrition figure asked ("how many calories…", "¿cuántas calorías…?", "how much sodium…"):
#: only a passage that writes one answers; a recipe page without nutrition facts was answered with
#: its introduction. Not sugar, fat or salt: those are ingredients too ("how much sugar goes in?").
_ASKS_NUTRITION = re.compile(
    r"\b(?:calor[ií]\w*|kcal|kalori\w*|kilojoules?|sodium|sodio|natrium|prot[eé]in\w*|carbohydrates?|carbs"
    r"|kohlenhydrate|glucides|hidratos|fib(?:re|er)|ballaststoffe)\b", re.I)
#: "How many…?", "¿cuántos…?": a count, in figures or in words ("up to eight people").
_ASKS_HOW_MANY = re.compile(r"\b(?:how many|cu[aá]nt[oa]s|wie viele|combien|hur m[aå]nga"
                            r"|(?:maximum|minimum|max|min)\s+number\s+of|n[uú]mero\s+m[aá]ximo\s+de)\b", re.I)
#: "How many servings does it make?", "how many people does it feed?", "¿para cuántas personas…?":
#: a recipe's yield, which any number on its page is not ("published 25 April 2021").
_ASKS_SERVINGS = re.compile(
    r"\bhow\s+many\s+(?:servings|portions|people|persons)\b(?=.*\b(?:serves?|feeds?|makes?|yields?|recipe)\b)"
    r"|\bhow\s+many\s+(?:servings|portions)\b|\bhow\s+many\s+(?:does|will)\s+(?:it|this|the\s+[^?]{1,60}?)\s+(?:serve|feed)\b"
    r"|\b(?:para\s+)?cu[aá]nt[ao]s\s+(?:raciones|porciones|personas)\b|\bwie\s+viele\s+(?:portionen|personen)\b"
    r"|\bcombien\s+de\s+(?:portions|parts|personnes)\b|\bhur\s+m[aå]nga\s+(?:portioner|personer)\b", re.I)
#: "How much disk space…?", "is there a size limit…?", "¿a partir de qué tamaño exacto…?": a size in
#: figures. Not "what size…?" or "wie groß…?", which a size in words or a choice of sizes answers.
_ASKS_SIZE = re.compile(
    r"\bhow\s+much\s+(?:disk\s+|free\s+|storage\s+)?(?:space|storage|memory|ram)\b|\bsize\s+limit\b"
    r"|\b(?:maximum|minimum|max)\s+(?:file\s+|upload\s+)?size\b|\bhow\s+many\s+(?:kilo|mega|giga|tera)?bytes\b"
    r"|\btama[nñ]o\s+(?:exacto|m[aá]ximo|l[ií]mite)\b|\bmaximale\s+(?:datei)?gr(?:ö|oe)(?:ß|ss)e\b", re.I)
#: "Which pip version…?", "from which release…", "¿desde qué versión…?": a version number.
_ASKS_VERSION = re.compile(
    r"\b(?:which|what)\s+(?:[\w.-]+\s+){0,2}(?:version|release)\b(?!\s+(?:control|of\s+the\s+docs))"
    r"|\b(?:minimum|oldest|earliest|lowest)\s+(?:[\w.-]+\s+)?(?:version|release)\b|\bsince\s+which\b"
    r"|\b(?:desde\s+)?qu[eé]\s+versi[oó]n\b|\bversi[oó]n\s+m[ií]nima\b|\b(?:ab\s+)?welche[rnms]?\s+version\b"
    r"|\bmindestversion\b|\bquelle\s+version\b", re.I)
#: How long something keeps ("how long will the leftovers keep?", "do they freeze ok, and for how
#: long?", "¿cuánto aguanta en la nevera?", "wie lange ist es haltbar?"): a keeping time answers it.
#: Not "last" or "dura": a walk or a workshop lasts too ("9:00 to 12:00", "3 km"); nor the fridge
#: alone, where a dough may rest for "30 minutes" (the freezer is where food is kept).
_ASKS_KEEPING = re.compile(
    r"\b(?:keeps?|stored?|stay\s+(?:fresh|good)|(?:be\s+)?good\s+for|freeze|freezer|leftovers?|shelf[\s-]life|"
    r"conserva\w*|aguanta\w*|congel(?:ar\w*|a|an)|haltbar\w*|h[äa]lt|einfrieren|garder|conserver|"
    r"congeler|h[åa]ller)\b", re.I)
#: What a question asks for that an answer must write, and the name of it for a refusal's reason:
#: a time of day, a price, a nutrition figure, a temperature, a count, a version, a length of time,
#: a size, a recipe's yield, a year.
_MUST_CARRY = ((_ASKS_CLOCK, "clock", "time of day"), (_ASKS_COST, "money", "price"),
               (_ASKS_NUTRITION, "nutrition", "nutrition figure"), (_ASKS_TEMPERATURE, "temperature", "temperature"),
               (_ASKS_HOW_MANY, "count", "number"), (_ASKS_VERSION, "number", "version number"),
               (_ASKS_DURATION, "length_of_time", "length of time"), (_ASKS_SIZE, "size", "size"),
               (_ASKS_SERVINGS, "servings", "number of servings"), (_ASKS_YEAR, "year", "year"))


#: The kinds a question may ask beside another, the most particular first.
_GENERAL_KINDS = ("size", "length_of_time", "count", "number")


@functools.lru_cache(maxsize=1024)
def must_carry(question: str) -> tuple[tuple[str, str], ...]:
    """What `question` asks for that only a passage writing it answers: ("clock", "time of day")
    for "what time does the ferry leave?", ("money", "price") for "how much is the loaf?",
    ("temperature", "temperature") for "how hot should the oven be?", ("count", "number") for "how
    many people can take part?", ("number", "version number") for "which pip version…?",
    ("length_of_time", "length of time") for "how long will it keep?", ("size", "size") for "how much
    disk space…?", ("servings", …) for "how many does it serve?", ("year", "year") for "what year…?".
    A quoted unit that writes none is no answer: the best unit that writes one leads when it is
    nearly as good (app/extractive.py), else the question is refused."""
    asked = tuple((carried, name) for pattern, carried, name in _MUST_CARRY if pattern.search(question))
    if len(asked) > 1:
        # "How many calories…?" must write a nutrition figure, "how hot, and for how long?" the
        # temperature (the rest may follow); of the general kinds, the most particular: "how many
        # days…?" a length of time, not any count.
        specific = tuple(pair for pair in asked if pair[0] not in _GENERAL_KINDS)
        asked = specific or (min(asked, key=lambda pair: _GENERAL_KINDS.index(pair[0])),)
    if _ASKS_KEEPING.search(question):
        # How long food keeps is hours or longer: "process 1 minute" is a step's time.
        asked = tuple(("keeping_time", name) if carried == "length_of_time" else (carried, name)
                      for carried, name in asked)
    return asked


#: Whose version a question asks: "which pip version…?", "what version of twine…?", "¿qué versión de
#: Python…?" — a number beside that name answers, not any number ("Metadata 1.2+").
_VERSION_OF = re.compile(
    r"\b(?:which|what)\s+(?P<a>[A-Za-z][\w.-]*)\s+(?:version|release)\b"
    r"|\b(?:which|what)\s+(?:version|release)\s+of\s+(?P<b>[A-Za-z][\w.-]*)"
    r"|\b(?:qu[eé]|cu[aá]l)\s+versi[oó]n\s+de\s+(?P<c>[A-Za-z][\w.-]*)|\bwelche[rnms]?\s+(?P<d>[A-Za-z][\w.-]*)-?version\b",
    re.I)
#: Words in a tool's place that name none ("which minimum version…?").
_NOT_A_TOOL = frozenset({"the", "a", "an", "this", "that", "your", "my", "its", "minimum", "oldest", "newest",
                         "latest", "new", "old"})


#: When something is back or available again: "when it's coming back", "¿cuándo vuelve a estar
#: disponible?" — a date, which the unit an answer leads with should write.
_ASKS_BACK_WHEN = re.compile(
    r"\b(?:when|cu[aá]ndo|wann)\b.*\b(?:back|available|restock\w*|in stock|de vuelta|vuelve|disponible|"
    r"wieder|verfügbar|lieferbar)\b", re.I)


@functools.lru_cache(maxsize=1024)
def lead_must_write(question: str) -> tuple[str, ...]:
    """What the unit an answer leads with should write (keys of app/carries.py): the price,
    temperature, count, recipe yield or version number the question must be answered with
    (`must_carry`; not a nutrition figure, which led near misses about calories), a day
    of the week for "which days…?", or the date something is back ("any idea when it's coming
    back?"). A time of day is left out: a row's day already leads ("the pickup shelf from 9 am"
    would answer when the milk is delivered)."""
    required = tuple(carried for carried, _ in must_carry(question)
                     if carried in ("money", "temperature", "count", "number", "servings"))
    if required == ("number",) and (found := _VERSION_OF.search(question)):
        tool = next(name for name in found.groups() if name)
        if tool.casefold() not in _NOT_A_TOOL:
            return (f"version of {tool}",)
    if not required and _ASKS_WEEKDAY.search(question):
        return ("weekday",)  # "¿y qué días los mandáis?": "Los paquetes salen los martes y los jueves"
    return required or (("date",) if _ASKS_BACK_WHEN.search(question) else ())


#: A question about how, where, who or why: a price alone never answers it ("¿cómo se prepara un
#: chai latte en casa?" was answered "Chai latte: $4.50").
_ASKS_NO_PRICE = re.compile(
    r"\b(?:how\s+(?:do|does|did|can|could|should|would|to|is|are)|where|who|whom|why|c[oó]mo|d[oó]nde|"
    r"qui[eé]n(?:es)?|por\s+qu[eé]|wo(?:her|hin)?|wer|warum|wieso|wie(?!\s*viel)|o[uù]|qui|pourquoi|comment)\b", re.I)


def only_a_price_answers_nothing(question: str) -> bool:
    """Whether a question asks how, where, who or why and no price: a menu row or a price list
    quoted alone is then no answer."""
    return bool(_ASKS_NO_PRICE.search(question)) and not _ASKS_COST.search(question) \
        and not _ASKS_PRICE.search(question)


#: A place written out, for a question that asks where: between a time's bonus and an address's.
#: 0.25 was too little to lead with "starts on our harbor terrace"; 1.0 led with places on pages
#: that do not answer (docs/eval.md, the twenty-first session).
PLACE_BONUS = 0.5
#: A substitute named ("you can use cream cheese instead"), for "what can I use instead of…?": as
#: much as a place. 0.25 gained less on the calibration sets, 1.0 lost answers there.
SUBSTITUTE_BONUS = 0.5
#: A day of the week named, for "which days…?": as much as a time (0.5 changed nothing more on the
#: calibration sets; the unit that names one leads when nearly as good, `lead_must_write`).
WEEKDAY_BONUS = 0.25
#: (what a question asks for, what a text must carry for it, the bonus a unit that carries it gets)
_EVIDENCE = (("price", "money", 0.25), ("time", "time", 0.25), ("date", "date", 0.15), ("count", "number", 0.1),
             ("duration", "duration", 0.25), ("temperature", "temperature", 0.25), ("contact", "contact", 0.25),
             ("location", "address", 1.0), ("place", "place", PLACE_BONUS),
             ("substitute", "substitute", SUBSTITUTE_BONUS), ("weekday", "weekday", WEEKDAY_BONUS))
#: Beside "contact": the place's own number for "what's your phone number?", its address for
#: "what's your email?" — as much as an address for "where are you?".
OWN_CONTACT_BONUS = 0.75


def evidence_bonus(text: str, asks: Asks) -> float:
    """What the question asks for, present in the unit: a price, a time, a date, a number, a length
    of time, a temperature, a way to reach someone (the place's own number or address, above all)."""
    bonus = 0.0
    for asked, carried, value in _EVIDENCE:
        if getattr(asks, asked) and carries(text, carried):
            bonus += value
    if asks.own_contact and carries(text, asks.own_contact):
        bonus += OWN_CONTACT_BONUS
    return bonus
