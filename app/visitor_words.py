"""Everyday words visitors use for what sites write otherwise.

A visitor asks "my daughter is coeliac, is there anything she can eat?", "is there a way in for a
wheelchair?", "where do I leave the car?"; the sample site writes "gluten-free", "step-free
entrance", "car park". The answer's units are chosen by the words they share with the question
(app/extractive.py), so such a question found the site's introduction ("…a café, a bakery…").
A visitor's word is searched and weighed with the words sites write for it (`site_terms_for`),
in the question's language; only the ones a site uses count (the weights drop the others).
Where the visitor says they are ("I'm in Oregon", `visitor_place`) is the visitor's too: not a
name the site must know.
"""

from __future__ import annotations

import functools
import re

from ingest.lang import primary_subtag

#: (what a visitor writes, what sites write for it by language). Needs that shops, cafés and
#: venues answer on their pages: a diet, milk, getting in, parking, delivery, shipping, a
#: damaged order, a gift voucher, pets; and a kitchen's words in British and American English.
_CONCEPTS: tuple[tuple[str, dict[str, str]], ...] = (
    (r"co?eliacs?|c[oe]liac\s+disease|cel[ií]ac[oa]s?|cel[ií]aqu[ií]a|z[öo]liakie|c(?:œ|oe)liaques?|gluten\s+intoleran\w+",
     {"en": "gluten-free gluten", "es": "sin gluten gluten", "de": "glutenfrei gluten", "fr": "sans gluten gluten"}),
    (r"lactose|lactosa|laktose|dairy[- ]free|intolerante\s+a\s+la\s+lactosa|sin\s+lactosa|laktosefrei",
     {"en": "oat almond soy milk dairy", "es": "avena almendra soja leche", "de": "Hafer Mandel Soja Milch",
      "fr": "avoine amande soja lait"}),
    (r"wheel\s?chairs?|prams?|strollers?|buggy|buggies|mobility\s+scooters?|crutches|sillas?\s+de\s+ruedas|"
     r"carritos?|cochecitos?|rollstuhl|rollstühle|kinderwagen|rollator|fauteuils?\s+roulants?|poussettes?",
     {"en": "step-free accessible lift ramp", "es": "sin escalones accesible ascensor rampa",
      "de": "barrierefrei stufenlos Aufzug Rampe", "fr": "accessible ascenseur rampe"}),
    # "Allergic to sesame" where the page lists each bread's allergens.
    (r"allerg(?:ic|y|ies)|al[ée]rgic[oa]s?|alergias?|allergisch|allergien?|allergiques?|allergies?",
     {"en": "allergens allergen", "es": "alérgenos alérgeno", "de": "Allergene Allergen",
      "fr": "allergènes allergène"}),
    # Not "driving": "driving up from Boston, where are you?" asks the address.
    (r"cars?|coche|coches|aparcar|parken|voiture|garer",
     {"en": "parking car park", "es": "aparcamiento aparcar", "de": "Parkplatz parken", "fr": "parking stationnement"}),
    # Brought to the door: "bring a cake out to my house", "¿me lo lleváis a casa?".
    (r"to\s+(?:my|our)\s+(?:house|home|place|door|flat|apartment|office)|drop(?:ped)?\s+off|"
     r"a\s+domicilio|a\s+(?:mi|nuestra)?\s*casa|llev[aá]is|llevar(?:me|nos)?|nach\s+hause|[àa]\s+domicile",
     {"en": "delivery deliver", "es": "reparto domicilio", "de": "Lieferung liefern", "fr": "livraison"}),
    # Getting an order sent: "post" is left out (a blog post, a POST request).
    (r"mailed|mail\s+(?:it|them|one|me|us)|send\s+(?:it|them|one|me|us)\s+to|postage|mandar(?:me|nos)?|mand[aá]is|"
     r"enviar(?:me|nos)?|envi[aá]is|versenden|verschicken|schickt\s+ihr|exp[ée]dier|envoy(?:er|ez)",
     {"en": "ship shipping", "es": "envío envían", "de": "Versand versenden", "fr": "livraison expédition"}),
    # Not "broken": "a broken release", "a broken link" on documentation.
    (r"smashed|cracked|shattered|rot[oa]s?|dañad[oa]s?|rajad[oa]s?|kaputt|zerbrochen|"
     r"besch[äa]digt|cass[ée]e?s?|endommag[ée]e?s?",
     {"en": "damaged", "es": "dañado daña", "de": "beschädigt", "fr": "endommagé"}),
    # Reading to children: "any storytime for my 4 yr old?" where the page says "Story Hour".
    (r"story\s?times?|read[- ]?alouds?|cuentacuentos|lectura\s+de\s+cuentos|vorlese\w*|heure\s+du\s+conte",
     {"en": "story hour", "es": "hora del cuento cuentos", "de": "Vorlesestunde", "fr": "heure du conte"}),
    # "Vale" alone is Spanish for "okay".
    (r"vouchers?|gift\s+certificates?|vales?\s+(?:de\s+)?regalo|gutscheine?|bons?\s+(?:d['’])?cadeaux?|"
     r"ch[èe]ques?[\s-]cadeaux?",
     {"en": "gift card gift cards", "es": "tarjeta regalo tarjetas regalo", "de": "Geschenkkarte Gutschein",
      "fr": "carte cadeau"}),
    # British and American kitchens: "what size tin?" on a page that writes "8-inch pans", and back.
    (r"(?:cake\s+|baking\s+|loaf\s+)?tins?", {"en": "pan pans"}),
    (r"(?:cake\s+|baking\s+|loaf\s+)pans?", {"en": "tin tins"}),
    (r"courgettes?", {"en": "zucchini"}),
    (r"zucchinis?", {"en": "courgette courgettes"}),
    (r"aubergines?", {"en": "eggplant"}),
    (r"eggplants?", {"en": "aubergine"}),
    (r"icing\s+sugar", {"en": "powdered sugar confectioners"}),
    (r"powdered\s+sugar|confectioners['’]?\s+sugar", {"en": "icing sugar"}),
    (r"caster\s+sugar", {"en": "superfine sugar"}),
    (r"plain\s+flour", {"en": "all-purpose flour"}),
    (r"all[- ]purpose\s+flour", {"en": "plain flour"}),
    (r"double\s+cream", {"en": "heavy cream"}),
    (r"heavy\s+cream", {"en": "double cream"}),
    # A lesson in person: "do you run baking classes?" where the page lists a "Sourdough Basics
    # Workshop". Not "class" alone, which documentation uses for code.
    (r"(?:baking|bread|cooking|pastry|cake|pottery|kids['’]?|children['’]?s?)\s+(?:class|classes|lessons?|courses?)|"
     r"clases?\s+de\s+(?:cocina|panader[ií]a|reposter[ií]a)|cursos?\s+de\s+(?:cocina|panader[ií]a|reposter[ií]a)|"
     r"back(?:kurs|kurse|kursen)|koch(?:kurs|kurse|kursen)|cours\s+de\s+(?:cuisine|p[âa]tisserie|boulangerie)",
     {"en": "workshop workshops", "es": "taller talleres", "de": "Workshop Kurs", "fr": "atelier ateliers"}),
    # Eating it, where the page names the meal: "¿hasta qué hora se puede desayunar?" ("Los desayunos
    # se sirven hasta las 11:30").
    (r"desayun(?:ar|amos|áis|ais|an|o|os)|frühstücken|d[ée]jeuner",
     {"en": "breakfast", "es": "desayuno desayunos", "de": "Frühstück", "fr": "petit-déjeuner"}),
    (r"pup|pups|puppy|puppies|pooch|doggy|doggie|perrit[oa]s?|perr[oa]s?|mascotas?|hund|hunde|haustier\w*|chiens?",
     {"en": "dogs pets", "es": "perros mascotas", "de": "Hunde Haustiere", "fr": "chiens animaux"}),
)
_PATTERNS = tuple((re.compile(rf"(?<!\w)(?:{words})(?!\w)", re.I), site) for words, site in _CONCEPTS)


#: "Who does the baking?": the person doing it, as a page names them ("our head baker").
_WHO = re.compile(r"\bwho(?:'s|\s+is|\s+does|\s+do)?\b", re.I)
_GERUND = re.compile(r"\b([a-z]{3,})ing\b")


def agent_words(question: str) -> str:
    """For an English question about who does something ("who actually does the baking?", "who's
    in charge of the roasting?"): the words for the one who does it ("baker", "roaster", "cook"),
    searched and weighed beside the question's own; "" for any other question."""
    if not _WHO.search(question):
        return ""
    stems = _GERUND.findall(question.lower())
    return " ".join(word for stem in stems for word in (stem + "er", stem))


@functools.lru_cache(maxsize=1024)
def site_terms_for(question: str, lang: str) -> tuple[str, frozenset[str]]:
    """The words sites write for the everyday words of `question` ("coeliac" → "gluten-free
    gluten"), in `lang` (English for a language without its own), and the question's own words
    they stand for; ("", frozenset()) when it has none."""
    language = primary_subtag(lang) or "en"
    site_terms: list[str] = []
    own: set[str] = set()
    for pattern, site in _PATTERNS:
        found = [m.group(0).lower() for m in pattern.finditer(question)]
        if found:
            site_terms.append(site.get(language, site["en"]))
            own.update(word for text in found for word in re.findall(r"\w+", text))
    return " ".join(site_terms), frozenset(own)


#: Where the visitor is or comes from ("I'm in Oregon", "driving in from Bangor", "vivo en México"):
#: a place the site need not name to answer ("we ship anywhere in the US", "the Harbor Lot").
_VISITOR_PLACE = re.compile(
    r"\b(?i:i['’]?m|i\s+am|we['’]?re|we\s+are|i\s+live|we\s+live|to\s+me|to\s+us)\s+(?i:in|at)\s+"
    r"((?:[A-Z][\w'.-]*\s*){1,3})"
    r"|\b(?i:driving|coming|travel+ing|flying|heading)\s+(?i:in\s+|up\s+|down\s+|over\s+)?(?i:from)\s+"
    r"((?:[A-Z][\w'.-]*\s*){1,3})"
    r"|\b(?i:vivo|vivimos|estoy|estamos)\s+(?i:en)\s+((?:[A-ZÁÉÍÓÚ][\w'.-]*\s*){1,3})"
    r"|\b(?i:ich\s+wohne|wir\s+wohnen)\s+(?i:in)\s+((?:[A-ZÄÖÜ][\w'.-]*\s*){1,3})")


@functools.lru_cache(maxsize=1024)
def visitor_place(question: str) -> str:
    """The place the visitor says they are in or come from ("I'm in Oregon" → "Oregon"): the
    visitor's, not a name the site should know. "" when the question says none."""
    found = [next(g for g in m.groups() if g).strip() for m in _VISITOR_PLACE.finditer(question)]
    return " ".join(found)
