"""The extractive answer: which pieces of the top sources answer *this* question.

A source is cut into units that may be quoted whole (app/units.py: a prose sentence, an FAQ
answer, a structured fact, a table row read with its header, a code block), and each unit is
scored by how well it answers the question: the question's terms it uses, weighted by how rare
they are on the site; what it is about (its heading path, FAQ question,
table header); a number when the question asks how much / when; the fact kind for price, date
and hours questions; and, for the few best, its semantic similarity to the question with the
tenant's own embedder. The answer leads with the best unit and adds a second or third only when
it adds to the answer and comes from a source that itself answers.

`support` — how much of the question's weight the best unit covers, with its context — is the
answer-level evidence the refusal check reads: a near miss in the site's own vocabulary finds
passages that share a word, never one that addresses the question's key terms together.

Pure apart from the `embed` callable; a few milliseconds per question.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence

import msgspec
import numpy as np

from app.asks import (
    ASK_WORD,
    ASK_WORD_FACTOR,
    NOT_A_SUBJECT,
    Asks,
    asking_words,
    asks_of,
    asks_yes_or_no,
    evidence_bonus,
    lead_must_write,
    must_carry,
)
from app.carries import carries
from app.howto import code_example, imports_nothing_asked, page_api_sentence
from app.prompt import Source
from app.stems import stem, stems
from app.terminal import typed_commands
from app.units import LIST_MARK, Unit, is_prose_sentence, units_of
from app.visits import days_spanned
from store.pages import PagePassage
from store.words import content_terms

Embed = Callable[[Sequence[str]], np.ndarray]

#: Set to a list to collect, per question, the units with their FEATURES and scores (the
#: calibration scripts in docs/eval.md read it); None in production.
TRACE: list | None = None
MAX_QUOTES = 3
#: The weight, against a word as rare, of a word that names no subject (`NOT_A_SUBJECT`: "get",
#: "make", "want", "nach"): "made way too much of the tortilla soup, will it survive in the
#: freezer?" is about the freezer more than about making. 0.25 on the calibration sets: contains
#: 0.639 → 0.657 (0.5: 0.652; 0: 0.652 and honest refusal 0.820 → 0.811).
LIGHT_FACTOR = 0.25
#: How far below the best a unit that writes what the question must be answered with (a price, a
#: temperature, a count) may score and still lead: 1.25 rather than NEIGHBOUR_MARGIN's 1.0 answered
#: two more calibration questions ("¿Cuánto cuesta enviar una bolsa de café…?" had been refused at a
#: gap of 1.01) and none wrong; 1.5 changed nothing more (docs/eval.md, twenty-first session).
REQUIRED_MARGIN = 1.25
MAX_ANSWER_CHARS = 600
#: Units whose own similarity to the question is measured with the model (one batch per
#: question). Off: on the calibration sets the best few units ranked by their own embedding put
#: the answer first no more often than the cheap features (top-1 0.58 either way, top-3 0.75 →
#: 0.79) and cost ~4.5 ms a unit on two cores (docs/eval.md, "Choosing what to quote").
SEMANTIC_UNITS = 0
#: A unit of another source is added when it scores within this much of the lead (scores are
#: the logits of UNIT_WEIGHTS) and says something the lead does not.
FOLLOW_MARGIN = 0.5
#: How far below a code block the best sentence of a how-do-I or what-to-install answer may score and
#: still lead, when it uses more of the question's words (a how-do-I answer's code example then
#: follows it). 1.5 to 9 answered the same calibration questions; 0.5 and 1.0 fewer (docs/eval.md,
#: the twenty-second session).
HOWTO_SENTENCE_MARGIN = 2.0
#: A neighbour of the lead in its own passage, within this much.
NEIGHBOUR_MARGIN = 1.0
#: How much longer than its leading sentence a whole FAQ answer may be to be quoted instead: a short
#: answer ("Yes, on Tuesdays from 10 am to noon." before the sentence that led), not a long one.
FAQ_MORE_CHARS = 160
#: A sentence this short right after the lead in its paragraph finishes the lead's thought.
SHORT_SENTENCE = 40
#: How much of the lead unit `Selection.lead` carries for the embedding that may decide whether to
#: answer (app/answer.py): an embedding's cost grows with its tokens (~5 ms at 8 words, ~19 ms at
#: 100 on two cores). On the 592 calibration and never-fitted items, 280 instead of 400 changed no
#: verdict (200: 2; 120: 5); the lead is embedded for about one question in ten.
LEAD_CHARS = 280
#: A sentence that opens with one of these leans on the one before it.
_CONTINUES = re.compile(
    r"\s*(?:but|however|so|this|that|these|those|it|they|then|otherwise|instead|also|"
    r"pero|sin embargo|as[ií] que|esto|eso|entonces|tambi[eé]n|aber|jedoch|das|dies|dann|sonst|stattdessen|auch)\b",
    re.I)

#: A heading that names a term rather than a section ("archived", "quarantined", `max_age`): a
#: word or two that does not open with a capital. "Ingredients", "Notes" or "Returns and refunds"
#: name sections, and read as noise before an item.
_TERM_HEADING = re.compile(r"^(?![A-ZÀ-Ý])[\w.()`'-]+(?: [\w.()`'-]+)?$")


#: An FAQ answer's opening "Yes." answers the FAQ's own question ("Do you make custom cakes?"): left
#: out of the answer to a question that asks how long or how much ("Yes. Whole cakes need 72 hours'
#: notice" answered "how far in advance do I order a cake"), kept for one that asks yes or no.
_BARE_REPLY = re.compile(r"^(?:yes|no|sí|si|ja|nein)[.!]\s+(?=\S)", re.I)


def _names_a_term(heading: str) -> bool:
    return bool(heading) and bool(_TERM_HEADING.match(heading.strip()))


class Quote(msgspec.Struct, kw_only=True):
    source: int
    text: str
    kind: str
    score: float


class Selection(msgspec.Struct, kw_only=True):
    quotes: list[Quote]
    support: float = 0.0
    """Share of the question's term weight the lead's passage covers (its text and what it is about)."""
    similarity: float | None = None
    """The lead's semantic similarity to the question (None when not measured)."""
    lead: str = ""
    """The lead unit's text, as the model should read it, at most LEAD_CHARS characters."""
    lead_score: float = 0.0
    """The lead unit's score (a logit of UNIT_WEIGHTS)."""
    lead_features: dict[str, float] = msgspec.field(default_factory=dict)
    """The lead unit's FEATURES by name."""
    missing_subject: float = 0.0
    """Share of the question's subject weight that no unit of the top two sources mentions (in its
    text or what it is about): a key word the best pages never use."""


# ---------------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------------


_NOT_A_SUBJECT = frozenset(map(stem, NOT_A_SUBJECT))


def term_weights(question: str, document_counts: Mapping[str, int], total: int,
                 carried: str = "") -> dict[str, float]:
    """The question's content terms (stemmed) with inverse-document-frequency weights, so a rare
    word ("sourdough") outweighs a common one ("price"). Terms carried over from an earlier turn
    of the conversation count half."""
    weights: dict[str, float] = {}
    asking = asking_words(question)

    def add(terms: list[str], factor: float) -> None:
        for term in terms:
            count = document_counts.get(term, 0)
            if count == 0 and document_counts:
                # A word the site never uses (a typo, another topic) can be in no sentence; the
                # term-coverage check judges those.
                continue
            # "price", "open", "when": what kind of answer is wanted, which the evidence bonus
            # rewards; as words they would favour any price list over the item asked.
            factor_here = factor * ASK_WORD_FACTOR if ASK_WORD.fullmatch(term) or term in asking else factor
            if stem(term) in _NOT_A_SUBJECT:
                factor_here *= LIGHT_FACTOR
            # Square-rooted: on a small site every uncommon word is rare, and a plain idf lets
            # "know" or "inside" outweigh the words that name the topic.
            idf = math.sqrt(math.log(1.0 + (total + 1.0) / (count + 1.0)))
            key = stem(term)
            weights[key] = max(weights.get(key, 0.0), idf * factor_here)

    add(content_terms(carried), 0.5)
    add(content_terms(question), 1.0)
    return weights


# ---------------------------------------------------------------------------------------------
# Scoring and choosing
# ---------------------------------------------------------------------------------------------


def _coverage(weights: Mapping[str, float], own: frozenset[str], about: frozenset[str],
              answered: frozenset[str] = frozenset(), total: float | None = None) -> float:
    """Share of the question's term weight a unit uses, words only in what it is about at half.
    `answered`: words that say what kind of answer is wanted ("price", "phone", "when") and that
    the unit answers with a price, a phone number or a time, though it does not repeat them.
    `total`: the weights' sum, when the caller has it (once a question, not once a unit)."""
    total = sum(weights.values()) if total is None else total
    hit = own.intersection(weights) | answered.intersection(weights)
    hit_about = about.intersection(weights) - hit
    if total <= 0 or not (hit or hit_about):
        return 0.0
    return (sum(weights[t] for t in hit) + 0.5 * sum(weights[t] for t in hit_about)) / total


#: What a unit is scored on. Each is cheap: words, kinds and the similarities retrieval already
#: measured; "similarity" (the unit's own embedding) only when SEMANTIC_UNITS > 0.
FEATURES = (
    "lexical",             # share of the question's rarity-weighted words it uses (its context at half)
    "passage_similarity",  # similarity of its stored passage to the question
    "source_similarity",   # similarity of its source's best passage
    "source_rank",         # 1 / (1 + the source's rank)
    "evidence",            # what the question asks for is there: a price, a time, a date, an API name
    "faq", "fact", "row", "code",
    "length",              # min(characters, 600) / 300
    "early",               # among the first three units of its page
    "command",             # a how-do-I / which-command question and a command in the unit
    "number",              # a how-much / how-many / when question and a number in the unit
    "visitor_page",        # from the page the visitor is on
    "answering_fact",      # a structured fact about the thing asked that carries the price/date/time asked for
    "similarity",          # the unit's own similarity to the question
    "label_extra",         # a row's or fact's label ("Chai latte") has words the question does not ("latte")
)
#: Weights of FEATURES: a listwise (softmax) logistic model fitted on the calibration golden sets
#: (tests/eval/*.jsonl and tests/eval/heldout/*.jsonl, never on tests/eval/report or unseen),
#: a unit being right when it contains the expected answer string (docs/eval.md, "Choosing
#: what to quote"). Set by hand: visitor_page (no calibration question carries a page),
#: answering_fact — structured facts (Product, Event, opening hours) win price, date and hours
#: questions about the thing they name ("Sea Salt Sourdough — $9.50", not a dish with sourdough) —
#: and label_extra: "how much is a latte?" is answered by the row "Latte", not "Chai latte".
UNIT_WEIGHTS = np.array([
    3.46,   # lexical
    2.14,   # passage_similarity
    0.45,   # source_similarity
    0.86,   # source_rank
    1.06,   # evidence
    0.0,    # faq
    -0.32,  # fact
    0.0,    # row
    0.40,   # code
    0.67,   # length
    0.20,   # early
    0.69,   # command
    0.51,   # number
    1.0,    # visitor_page
    1.5,    # answering_fact
    0.0,    # similarity
    -1.0,   # label_extra
])

_COMMAND_Q = re.compile(r"\b(command|run|cli|terminal|shell|install|flag|option)\b", re.I)
#: "Which library…?", "welche Bibliothek…?": a name, which a sentence says better than a listing.
_WHICH_NAME_Q = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+)?(?:library|libraries|package|packages|tool|tools|module|framework|server)\b"
    r"|\bwelche[rnms]?\s+(?:\w+\s+)?(?:bibliothek|paket|werkzeug|tool|modul|server)\w*\b"
    r"|\bqu[eé]\s+(?:\w+\s+)?(?:librer[ií]a|biblioteca|paquete|herramienta|m[oó]dulo|servidor)\b", re.I)
_NUMBER_Q = re.compile(r"\b(how (?:much|many|long|old|big)|which year|what year|when|cu[aá]nt[oa]s?|wie viele?|wann)\b",
                       re.I)


def _label_extra(unit: Unit, question_stems: frozenset[str]) -> float:
    """Share of a row's or fact's label words ("Chai latte" of "Chai latte: $4.50") that the
    question does not use: the row about exactly the thing asked beats one about a variant."""
    if unit.kind not in ("row", "fact"):
        return 0.0
    label = re.split(r": | — ", unit.text, maxsplit=1)[0]
    words = stems(label)
    return len(words - question_stems) / len(words) if words and len(label) <= 80 else 0.0


@functools.lru_cache(maxsize=8192)
def _day_stems(text: str) -> frozenset[str]:
    """The stems of the days a text's day ranges span ("Tuesday to Friday" holds Thursday)."""
    return frozenset(map(stem, days_spanned(text)))


def _label_stems(unit: Unit) -> frozenset[str]:
    """The stems of what a fact or a table row is about: a fact's name ("Sea Salt Sourdough — $9.50"),
    a row's first cell ("Tuesday to Friday: 7:30 am – 5:00 pm", with the days it spans)."""
    label = unit.text.split(" — ", 1)[0] if unit.kind == "fact" else unit.text.split(": ", 1)[0]
    return stems(label) | _day_stems(label)


@functools.lru_cache(maxsize=1024)
def _ask_stems(question: str) -> frozenset[str]:
    """The stems of the question's words that say what kind of answer is wanted ("price", "when",
    "address"): a unit that carries that kind of answer uses them without repeating them."""
    asking = asking_words(question)
    return frozenset(stem(w) for w in re.findall(r"\w+", question.lower()) if ASK_WORD.fullmatch(w) or w in asking)


def unit_features(question: str, units: Sequence[Unit], sources: Sequence[Source], weights: Mapping[str, float],
                  asks: Asks, subject: frozenset[str], *, page_url: str = "") -> np.ndarray:
    """One row of FEATURES per unit."""
    rows: list[tuple[float, ...]] = []  # one array at the end: a row written into numpy per unit cost more
    total = sum(weights.values())
    command_question = asks.howto or bool(_COMMAND_Q.search(question))
    number_question = bool(_NUMBER_Q.search(question))
    question_stems = stems(question)
    ask_stems = _ask_stems(question)
    when = asks.time or asks.date  # a day inside a range ("Tuesday to Friday") counts for these only
    for unit in units:
        source = sources[unit.source]
        # A terminal session counts by what the reader types, not by what the program prints.
        typed = typed_commands(unit.text) if unit.kind == "code" else None
        text = unit.text if typed is None else typed
        evidence = evidence_bonus(text, asks)
        answered = ask_stems if evidence > 0 else frozenset()  # before the API bonus: not an answer kind
        if asks.howto and unit.kind == "sentence" and carries(text, "api"):
            evidence += 0.1  # on documentation, a how-do-I question is answered with the API the page names
        rows.append((
            _coverage(weights, (stems(text) | _day_stems(text)) if when else stems(text), stems(unit.about),
                      answered, total),
            max(0.0, unit.passage_similarity),
            max(0.0, source.similarity),
            1.0 / (1 + unit.source),
            evidence,
            unit.kind == "faq", unit.kind == "fact", unit.kind == "row", unit.kind == "code",
            min(len(text), 600) / 300,
            unit.position < 3,
            command_question and ((unit.kind == "code" and typed != "") or carries(text, "command")),
            number_question and carries(text, "number"),
            bool(page_url) and source.url == page_url,
            evidence > 0 and bool(subject & _label_stems(unit)) and (
                (unit.kind == "fact" and (asks.price or asks.time or asks.date))
                # An hours table's row for the day asked ("Tuesday to Friday: 7:30 am – 5:00 pm" for
                # Thursday); not a menu's row for a price: "Chowder of the day with sourdough: $12.50"
                # would beat the product "Sea Salt Sourdough — $9.50".
                or (unit.kind == "row" and (asks.time or asks.date))),
            0.0,  # similarity: measured later, for the best units only
            _label_extra(unit, question_stems),
        ))
    features = np.array(rows, dtype=np.float64).reshape(len(units), len(FEATURES))
    if asks.howto:
        # "You can do this by running twine check on your package files:" + the command.
        for i, unit in enumerate(units[:-1]):
            following = units[i + 1]
            if unit.text.rstrip().endswith(":") and following.kind == "code" and following.source == unit.source:
                features[i, 4] += 0.15
    return features


def _timed_on_lead_page(question: str, units: Sequence[Unit], sources: Sequence[Source], order: Sequence[int],
                        weights: Mapping[str, float], kind: str) -> int | None:
    """For a question that asks how long, when the lead writes no length of time: the best unit of the
    lead's page that writes one and uses a word of the question besides the page's subject and the
    asking words ("This soup should freeze nicely for 3 to 4 months" for "will it survive in the
    freezer and for how long?"). Not the page's cooking times, nor "blend for five minutes" for "how
    many days does the salmorejo keep in the fridge?" (a word of the title is not enough). `kind`:
    "length_of_time", or "keeping_time" for how long something keeps (`must_carry`)."""
    lead = units[order[0]]
    if carries(lead.text, kind):
        return None
    besides = stems(sources[lead.source].title) | _ask_stems(question) | _NOT_A_SUBJECT
    own = {term for term in weights if term not in besides}
    return next((i for i in order[1:] if units[i].source == lead.source
                 and carries(units[i].text, kind) and own & stems(units[i].text)), None)


def _lead_first(question: str, asks: Asks, units: Sequence[Unit], sources: Sequence[Source],
                weights: Mapping[str, float], features: np.ndarray, score: Sequence[float]) -> list[int]:
    """The units ranked to lead the answer: by score, then the rules that put a unit that answers
    (writes the price asked for, says how, is the whole FAQ answer) before one that only matches."""
    order = sorted(range(len(units)), key=lambda i: -score[i])

    def lead_with(i: int) -> None:
        order.remove(i)
        order.insert(0, i)

    # "How much is the loaf?": a unit without a price does not answer, however well its words
    # match. The best one with a price leads when it is nearly as good; a price far down the list
    # is another item's (the answer is then refused). So for a temperature ("¿a qué temperatura
    # pongo la airfryer…?" led with what to drink beside the cake), a count, and the date something
    # is back ("the next batch is expected in early January 2027"; `lead_must_write`).
    required = lead_must_write(question)
    if required:
        answering = next((i for i in order if all(carries(units[i].text, carried) for carried in required)), None)
        # A recipe writes its oven's temperature once, in a step that may use none of the question's
        # words ("cocina a 165 ºC durante 40 minutos"): on the lead's page it answers however far down.
        same_page = (answering is not None and required == ("temperature",)
                     and units[answering].source == units[order[0]].source)
        if answering is not None and (same_page or score[order[0]] - score[answering] <= REQUIRED_MARGIN):
            lead_with(answering)
    # "How long will the soup keep in the freezer?": the length of time on the lead's own page.
    elif ((timed_kind := next((kind for kind, _ in must_carry(question) if kind in ("length_of_time", "keeping_time")),
                              None)) is not None
          and (timed := _timed_on_lead_page(question, units, sources, order, weights, timed_kind)) is not None
          and score[order[0]] - score[timed] <= REQUIRED_MARGIN):
        lead_with(timed)
    # A how-do-I answer leads with the sentence that says how ("Using @lru_cache lets you avoid reading
    # the dotenv file again and again for each request") when it uses more of the question's words
    # than the code block that outscored it on its length; the code example follows it (below). So
    # does an answer to what to install or run ("To receive uploaded files, first install
    # python-multipart.", not the upload form's HTML) or which library ("…pwdlib…").
    if units[order[0]].kind == "code" and (
            asks.howto or _COMMAND_Q.search(question) or _WHICH_NAME_Q.search(question)):
        saying = next((i for i in order[1:] if units[i].kind in ("sentence", "faq")), None)
        if (saying is not None and features[saying, 0] > features[order[0], 0]
                and score[order[0]] - score[saying] <= HOWTO_SENTENCE_MARGIN):
            lead_with(saying)
    # An FAQ answer is quoted whole: a sentence of it that leads gives way to the whole answer when
    # that is nearly as good ("We offer store credit worth 40%…" without "Yes, on Tuesdays…").
    if units[order[0]].kind == "sentence":
        inner = units[order[0]].text.casefold()
        whole = next((i for i in order[1:] if units[i].kind == "faq" and units[i].source == units[order[0]].source
                      and inner in units[i].text.casefold() and len(units[i].text) <= len(inner) + FAQ_MORE_CHARS),
                     None)
        if whole is not None and score[order[0]] - score[whole] <= NEIGHBOUR_MARGIN:
            lead_with(whole)
    return order


def _room_for(units: Sequence[Unit], chosen: Sequence[int], used: int, i: int) -> bool:
    """Whether unit `i` still fits in an answer that quotes `chosen` in `used` characters."""
    return len(chosen) < MAX_QUOTES and used + len(units[i].text) <= MAX_ANSWER_CHARS


def _read_on(units: list[Unit], score: list[float], index_of: Mapping[tuple[int, int], int], lead: int,
             chosen: list[int], used: int, weights: Mapping[str, float], subject: frozenset[str]) -> int:
    """Add to `chosen` the lead's neighbours that read on from it; returns the characters used.
    A list an introducing sentence brings is appended to `units` (and its score to `score`)."""
    lead_unit = units[lead]

    def room_for(i: int) -> bool:
        return _room_for(units, chosen, used, i)

    # The lead's own passage: a sentence that introduces what follows (ends with ':') brings it,
    # and neighbours that are nearly as good read on from it.
    # The sentence before is looked at even when the next one does not read on ("Un engine de
    # SQLModel … es lo que mantiene las conexiones" before "Tendrías un solo objeto engine…"); the
    # item before a list item or row is another item.
    reading_on = True
    for step in (1, 2, -1):
        if step == 2 and not reading_on:
            continue
        neighbour = index_of.get((lead_unit.source, lead_unit.position + step))
        if step < 0 and not reading_on and not (
                neighbour is not None and is_prose_sentence(lead_unit) and is_prose_sentence(units[neighbour])):
            break
        if neighbour is None or neighbour in chosen or not room_for(neighbour):
            continue
        if imports_nothing_asked(units[neighbour], weights):
            continue  # passed over: the listing it opens reads on from the sentence before it
        previous = index_of.get((lead_unit.source, lead_unit.position + step - 1), lead)
        if step == 2 and imports_nothing_asked(units[previous], weights):
            previous = lead
        before = units[neighbour if step < 0 else previous]
        introduced = step > 0 and before.text.rstrip().endswith(":")
        candidate = units[neighbour]
        # "But it is now deprecated.", "Standardmäßig 600.": the rest of the same thought.
        continues = (step > 0 and candidate.kind == before.kind == "sentence" and candidate.block == before.block
                     and (bool(_CONTINUES.match(candidate.text)) or len(candidate.text) <= SHORT_SENTENCE))
        folded = candidate.text.casefold()
        if any(folded in units[j].text.casefold() or units[j].text.casefold() in folded for j in chosen):
            continue  # the same words again (an FAQ answer is also on its page as prose)
        on_subject = bool(subject & stems(candidate.text))
        if introduced and LIST_MARK.match(candidate.text):
            # "Formats supported by PyPI's README renderer are:" brings its whole list, not one item.
            units.append(_list_from(units, index_of, candidate, MAX_ANSWER_CHARS - used))
            score.append(score[neighbour])
            neighbour = len(units) - 1
        if introduced or continues or (on_subject and score[lead] - score[neighbour] <= NEIGHBOUR_MARGIN):
            chosen.append(neighbour)
            used += len(units[neighbour].text)
        elif step > 0:
            reading_on = False
    return used


def select(question: str, sources: Sequence[Source], weights: Mapping[str, float], *,
           qvec: np.ndarray | None = None, embed: Embed | None = None,
           passages: Mapping[int, Sequence[PagePassage]] | None = None,
           max_sources: int = 4, page_url: str = "") -> Selection:
    """Score every unit of the top sources for this question and choose what to quote.
    `passages` gives whole pages for some sources (by index), so the sentence that answers is
    found even when the retrieved chunk of its page was another."""
    asks = asks_of(question)
    passages = passages or {}
    units = [u for i, s in enumerate(sources[:max_sources]) for u in units_of(s, i, passages.get(i))]
    if not units:
        return Selection(quotes=[])
    # The words that name what the question is about (not "price" or "open", nor "nach", "come").
    named = {t: w for t, w in weights.items() if t not in _NOT_A_SUBJECT}
    heaviest = max(named.values(), default=0.0)
    subject = frozenset(t for t, w in named.items() if w >= 0.5 * heaviest)
    features = unit_features(question, units, sources, weights, asks, subject, page_url=page_url)
    similarity = [0.0] * len(units)
    measured: set[int] = set()
    if qvec is not None and embed is not None and SEMANTIC_UNITS > 0:
        base = features @ UNIT_WEIGHTS
        top = sorted(range(len(units)), key=lambda i: -base[i])[:SEMANTIC_UNITS]
        vectors = embed([model_text(units[i]) for i in top])
        for i, vector in zip(top, vectors, strict=True):
            similarity[i] = float(vector @ qvec)
        features[:, FEATURES.index("similarity")] = similarity
        measured.update(top)
    score = list(features @ UNIT_WEIGHTS)
    order = _lead_first(question, asks, units, sources, weights, features, score)
    if TRACE is not None:
        TRACE.append(dict(question=question, units=units, score=score, features=features,
                          sources=list(sources), weights=dict(weights)))
    lead = order[0]
    lead_unit = units[lead]
    chosen = [lead]
    used = len(lead_unit.text)
    index_of = {(u.source, u.position): i for i, u in enumerate(units)}
    used = _read_on(units, score, index_of, lead, chosen, used, weights, subject)

    def room_for(i: int) -> bool:
        return _room_for(units, chosen, used, i)

    # "What number do I call to order a cake?": the FAQ's "Order by phone or at the counter" leads,
    # and the number comes with it from the contact page, however far down it scores.
    if asks.own_contact and not any(carries(units[i].text, asks.own_contact) for i in chosen):
        reaching = next((i for i in order if carries(units[i].text, asks.own_contact)), None)
        if reaching is not None and room_for(reaching):
            chosen.append(reaching)
            used += len(units[reaching].text)
    covered = set().union(*(stems(units[i].text) | stems(units[i].about) for i in chosen))
    if evidence_bonus(lead_unit.text, asks) > 0:
        covered |= _ask_stems(question)  # "14 Quay Street" answers "your address?" without the word
    # A unit that says what the chosen ones do not (the latte's price beside "oat milk costs
    # nothing extra"): from the lead's source when it is good enough, from another only when it
    # is nearly as good as the lead.
    for i in order[1:]:
        unit = units[i]
        margin = NEIGHBOUR_MARGIN if unit.source == lead_unit.source else FOLLOW_MARGIN
        if score[lead] - score[i] > NEIGHBOUR_MARGIN:
            break
        if score[lead] - score[i] > margin or i in chosen or unit.kind == "code" or not room_for(i):
            continue
        folded = unit.text.casefold()
        if any(folded in units[j].text.casefold() or units[j].text.casefold() in folded for j in chosen):
            continue  # the same words again (an FAQ answer is also on its page as prose)
        own = stems(unit.text)
        if any(t in own and t not in covered for t in subject):
            chosen.append(i)
            used += len(unit.text)
            break

    # On documentation, a how-do-I answer names the API the page is about: when the chosen sentences
    # name none ("Puedes definir tareas en segundo plano…"), the best sentence of the lead's page that
    # does is added ("…usar BackgroundTasks"), and its names choose the code example.
    naming_api = page_api_sentence(units, lead_unit, score, chosen, features[:, 0], sources) if asks.howto else None
    if naming_api is not None and room_for(naming_api):
        chosen.append(naming_api)
        used += len(units[naming_api].text)
    else:
        naming_api = None
    if asks.howto and all(units[i].kind != "code" for i in chosen):
        code = code_example(units, lead_unit, weights, score, UNIT_WEIGHTS[FEATURES.index("length")],
                            units[naming_api].text if naming_api is not None else "")
        if code is not None:
            chosen.append(code)

    # Read in source order, each source's units in page order.
    chosen.sort(key=lambda i: (units[i].source != lead_unit.source, units[i].source, units[i].position))
    polar = asks_yes_or_no(question)
    headed: set[tuple[int, str]] = set()  # the headings already written before an item of theirs

    def as_quoted(unit: Unit) -> str:
        if unit.kind == "faq" and not polar:
            return _BARE_REPLY.sub("", unit.text)
        # A list item is read with the term its heading names ("archived: The index … MUST NOT allow
        # uploads…"), as a table row is with its header: the item alone does not say what it is of.
        if (unit.kind == "sentence" and _names_a_term(unit.heading) and LIST_MARK.match(unit.text)
                and unit.heading.casefold() not in unit.text.casefold() and (unit.source, unit.heading) not in headed):
            headed.add((unit.source, unit.heading))
            return f"{unit.heading}: {LIST_MARK.sub('', unit.text, count=1)}"
        return unit.text

    quotes = [Quote(source=units[i].source, kind=units[i].kind, score=round(score[i], 4), text=as_quoted(units[i]))
              for i in chosen]
    # Support reads the lead's own passage as quoted (the latte's price and "oat milk costs
    # nothing extra" answer together what neither does alone).
    # Not the API sentence added for a how-do-I question: it names the API, it does not answer more.
    passage = [units[i] for i in chosen if units[i].source == lead_unit.source and i != naming_api]
    support = _coverage(weights, frozenset().union(*(stems(u.text) for u in passage)),
                        frozenset().union(*(stems(u.about) for u in passage)))
    top_words = frozenset().union(*(stems(u.text) for u in units if u.source < 2),
                                  *(stems(u.about) for u in units if u.source < 2))
    subject_weight = sum(weights[t] for t in subject)
    missing = sum(weights[t] for t in subject if t not in top_words) / subject_weight if subject_weight else 0.0
    return Selection(quotes=quotes, support=support, similarity=similarity[lead] if lead in measured else None,
                     lead=model_text(lead_unit, LEAD_CHARS), lead_score=float(score[lead]),
                     lead_features=dict(zip(FEATURES, map(float, features[lead]), strict=True)),
                     missing_subject=missing)


def _list_from(units: Sequence[Unit], index_of: Mapping[tuple[int, int], int], first: Unit, room: int) -> Unit:
    """`first`, a list's item, with the items of its list that follow it, as far as `room` allows."""
    items = [first.text]
    length = len(first.text)
    position = first.position + 1
    while (following := index_of.get((first.source, position))) is not None:
        item = units[following]
        if (item.block // 1000 != first.block // 1000 or not LIST_MARK.match(item.text)
                or length + len(item.text) + 1 > room):
            break
        items.append(item.text)
        length += len(item.text) + 1
        position += 1
    return msgspec.structs.replace(first, text="\n".join(items))


def model_text(unit: Unit, limit: int = 400) -> str:
    """A unit as the embedder reads it, at most `limit` characters: a table row with its header,
    anything else as quoted."""
    return (f"{unit.about[:80]}: {unit.text[:300]}" if unit.kind == "row" else unit.text)[:limit]
