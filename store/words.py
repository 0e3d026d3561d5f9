"""The words of a visitor's text as search and the answerability checks read them: word tokens,
function words, the content words that carry a question's meaning, a safe FTS5 MATCH expression,
and how much of a question the site's own words cover. Pure functions, no SQL: both backends
(store/search.py, store/pg/search.py) and the answerer (app/) use them."""

from __future__ import annotations

import re

import msgspec

#: Longest query text searched; longer input is cut (not refused) — a pasted page is still a query.
MAX_QUERY_CHARS = 2000
MAX_FTS_TERMS = 32

TOKEN = re.compile(r"\w+", re.UNICODE)

# Function words in the languages frontdesk sites are written in (en, es, de, fr; the commonest of
# sv, it, pt and nl, leaving out those that are words elsewhere: "man", "men", "min", "den", "come",
# "vi", "di", "eu", "em", "com", Spanish "dos"), and what English contractions leave of a word
# ("you're", "we've", "I'll"): "re" had counted as a word the site never uses. Not "doesn", "isn": a
# negation is part of what is asked ("so it doesn't pop up a terminal").
# Dropping them from the FTS query keeps nDCG and makes bm25 ~3x faster (re-measure with
# docs/eval.md, "Commands").
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our ours out over own same she should so some such
    than that the their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    el la los las un una unos unas y o de del al en con por para es son que se su sus lo como
    más mas pero sin sobre este esta estos estas ese esa mi tu qué cómo cuál dónde cuándo
    der die das den dem des ein eine einer eines einem einen und oder ist sind zu mit von im
    auf für fur nicht auch als an bei wie was wer wo wann ich du er sie es wir ihr mein dein
    le les des du et ou est sont dans pour pas sur au aux ce cette ces qui quoi je tu il nous vous
    och att det som är på för med jag hur vad när ska vara till inte har ett mig sig hon han där
    här eller så också från över vid sedan bara då hos
    che è gli della delle nel nella sono perché cosa questo questa
    não onde quando é da das um uma você meu minha isso isto
    het een ik hoe wat waar wanneer zijn niet voor
    re ve ll""".split()  # noqa: SIM905
)


class TermCoverage(msgspec.Struct, kw_only=True):
    """How much of a question's wording the site's own text uses (an answerability signal)."""

    terms: list[str]
    """The question's content words that were checked."""
    unknown: list[str]
    """Those occurring in fewer than `min_chunks` chunks of the tenant."""
    share: float
    """Share of `terms` the site knows, 0..1 (1.0 when there was nothing to check)."""


def fts_terms(text: str) -> list[str]:
    """Word tokens of a visitor's text, stopwords dropped (unless nothing else is left)."""
    words = [w.lower() for w in TOKEN.findall(text[:MAX_QUERY_CHARS])]
    words = [w.replace("_", " ").strip() for w in words]
    words = [w for w in words if w]
    content = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(content or words))[:MAX_FTS_TERMS]


def fts_query(text: str) -> str:
    """A safe FTS5 MATCH expression: every term a quoted string, OR-ed. '' if nothing to match."""
    return or_query(fts_terms(text))


def coverage_threshold(chunk_count: int) -> int:
    """How many chunks a word must occur in to count as something the site talks about.

    One occurrence per 2,500 chunks, at least 1 and at most 3: on a large site a word seen in a
    chunk or two is usually incidental (an example, a name), on a small one it may be the topic.
    """
    return min(3, max(1, -(-chunk_count // 2500)))


def content_terms(text: str) -> list[str]:
    """The words of a question that carry its meaning: no function words, no one-letter tokens
    (the 's' of "what's"), numbers kept."""
    return [t for t in fts_terms(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


def coverage_from_counts(text: str, counts: dict[str, int], min_chunks: int, also_known: str = "",
                         not_counted: frozenset[str] = frozenset()) -> TermCoverage:
    """`term_coverage` from document counts already at hand (`document_counts`): no lookups.
    `not_counted`: words that say nothing of what the question is about ("much", "quiero")."""
    terms = [t for t in content_terms(text) if t not in not_counted]
    extra = words_of(also_known)
    unknown = [t for t in terms if t not in extra and counts.get(t, 0) < max(1, min_chunks)]
    share = 1.0 - len(unknown) / len(terms) if terms else 1.0
    return TermCoverage(terms=terms, unknown=unknown, share=share)


def words_of(text: str) -> set[str]:
    """The lowercased words of a text (the visitor's page, when it is not indexed yet): what a
    question's words are looked up in besides the index."""
    return {w.lower() for w in TOKEN.findall(text)} if text else set()


def boilerplate_words(block: str, max_words: int = 10) -> list[str]:
    """The words of `block` that `is_repeated` looks for as a phrase (its first `max_words`), or
    none when it has fewer than four: too short to tell boilerplate from a common phrase. Shared
    with store/pg/search.py."""
    words = TOKEN.findall(block)[:max_words]
    return words if len(words) >= 4 else []


def or_query(terms: list[str]) -> str:
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
