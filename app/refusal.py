"""Whether the site answers a question, and if not, why: the checks in order, the most telling first.

A near miss in the site's own vocabulary finds passages that share its words, never a sentence that
addresses the question; an off-topic one, a page that uses a word once. Words the site never uses
say more than a low similarity; a name the site never mentions more than passages that share the
rest of the question's words; an answer that writes no price to "how much…?" is none. The
answerability model (app/answerability.py) reads the rest. app/answer.py gathers the evidence and
streams the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from app.answerability import (
    AnswerSignals,
    answerability,
    names_in_passing,
    unknown_names,
    unknown_timed_subject,
    unknown_wanted_thing,
    verdict_without_sentence,
)
from app.asks import asks_of, must_carry, only_a_price_answers_nothing
from app.carries import carries
from app.extractive import Selection
from app.prompt import Source
from app.sources import quoted_passages
from store.config import AnswerSettings
from store.words import TermCoverage, coverage_threshold

LEAD_STANDS_FOR_PASSAGE = 0.45
"""The lead sentence's similarity to the question at which it stands for a passage that is not
similar enough (a page about many things). On the calibration sets the answerable questions such a
gate refused scored 0.46–0.56 and the unanswerable ones under 0.34, but for one off-topic question
about a film a recipe blog names in passing (0.62)."""

WEAK_MATCH = 0.5
"""The confidence below which a question half of whose words the site never uses is refused (the
term-coverage rule refuses under half at any confidence short of a strong match). An off-topic
question that shares a word or two with the site ("how do I get pine sap off my car's paintwork?"
on a bakery with a car park and a pine-honey granola; "what causes spring tides and neap tides?" on
one that sells a tide guide) finds a passage that uses them, but not one close to it. Only in the
embedder's own languages: "Wie lange müssen Moms selbstgemachte Erdbeer-Preserves köcheln?" is far
from the English recipe that answers it. On the calibration sets: 5 more of 434 unanswerable
questions refused, 1 of 721 answerable ("my son is allergic to sesame, which of your breads should
he avoid", at 0.41 with "allergic" and "avoid" unknown; docs/eval.md, the twenty-fourth session)."""


class Evidence(msgspec.Struct, kw_only=True, frozen=True):
    """What the verdict reads, gathered by the answerer."""

    question: str
    lang: str
    confidence: float
    """The best passage's similarity on the embedder's calibrated 0..1 scale."""
    strong: float
    """The confidence above which the term-coverage check does not apply (a strong semantic match)."""
    native: bool
    """Whether the question is in a language the embedder was trained on, where its similarities
    say how close two texts are (MiniLM rates any two Spanish texts alike, and a German question
    far from the English page that answers it)."""
    similar_passages: int
    """How many passages reach the tenant's `min_confidence`."""
    coverage: TermCoverage
    counts: Mapping[str, int]
    """In how many chunks each of the question's words occurs."""
    chunks: int
    """How many chunks the tenant has."""
    known: str
    """Words the site uses without the index saying so (app/site_words.py)."""
    asking_where: str
    """The question's words that ask where the place itself is."""
    sources: Sequence[Source]
    selection: Selection


class Verdict(msgspec.Struct, kw_only=True):
    refused: str
    """Why the site does not answer ('' when it does)."""
    confidence: float
    """The confidence to report: raised where the lead sentence stands for its passage."""
    sentence_similarity: float | None
    signals: AnswerSignals | None = None


def verdict(evidence: Evidence, settings: AnswerSettings, lead_similarity: Callable[[], float],
            calibrated: Callable[[float], float]) -> Verdict:
    """Answer or refuse. `lead_similarity` embeds the lead sentence against the question (called at
    most once, and only where it can change the verdict); `calibrated` puts a similarity on the
    confidence scale."""
    question, selection = evidence.question, evidence.selection
    confidence, sentence_similarity = evidence.confidence, selection.similarity
    lexical = selection.lead_features.get("lexical", 0.0)
    # "Where can I find you?" answered with the street address, "what's your phone number?" with the
    # number: the question asks where the place itself is or how to reach it (app/asks.py), which an
    # address or a number answers whatever the similarities say.
    addressed = bool(selection.quotes) and (
        (bool(evidence.asking_where) and carries(selection.lead, "address"))
        or (bool(asks_of(question).own_contact) and carries(selection.lead, "contact")))
    # A passage that covers many things (the about page: its history, its team, the step-free
    # entrance) is little like any one question about it; the sentence the answer would lead with
    # can be. It then stands for the passage: "I use a wheelchair - where's the step-free way in?"
    # had been refused as no passage similar enough.
    too_few = evidence.similar_passages < max(1, settings.min_chunks)
    lead_stands = False
    if too_few and selection.quotes:
        sentence_similarity = lead_similarity()
        if lead_stands := sentence_similarity >= LEAD_STANDS_FOR_PASSAGE:
            confidence = max(confidence, calibrated(sentence_similarity))
    refused, signals = "", None
    if (settings.min_term_coverage > 0 and evidence.confidence < evidence.strong
            and evidence.coverage.share < settings.min_term_coverage):
        refused = "the site does not use most of the question's words"
    elif (settings.min_term_coverage > 0 and evidence.native and evidence.confidence < WEAK_MATCH
          and evidence.coverage.share <= settings.min_term_coverage):
        refused = "the site uses only half of the question's words, and no passage is close to it"
    elif settings.refuse_unknown_names and (
            names := unknown_names(question, evidence.counts, evidence.lang, known=evidence.known)):
        refused = "the site never mentions " + ", ".join(names)
    elif settings.refuse_unknown_names and (names := names_in_passing(
            question, evidence.counts, evidence.lang, coverage_threshold(evidence.chunks),
            quoted_passages(evidence.sources, [q.source for q in selection.quotes]), known=evidence.known)):
        refused = "the passages the answer would quote never mention " + ", ".join(names)
    elif settings.refuse_unknown_names and (
            subject := unknown_timed_subject(question, evidence.counts, known=evidence.known)):
        refused = "the site never mentions " + subject
    elif settings.refuse_unknown_names and (
            thing := unknown_wanted_thing(question, evidence.counts, known=evidence.known)):
        refused = "the site never mentions " + thing
    elif too_few and not (addressed or lead_stands):
        refused = "no passage is similar enough"
    elif not selection.quotes:
        refused = "nothing to quote"
    elif missing := [name for carried, name in must_carry(question)
                     if not any(carries(quote.text, carried) for quote in selection.quotes)]:
        refused = f"the passages give no {missing[0]}"
    elif only_a_price_answers_nothing(question) and all(
            quote.kind == "row" and carries(quote.text, "money") for quote in selection.quotes):
        refused = "the passages give only a price"
    else:
        if sentence_similarity is None and verdict_without_sentence(
                confidence, lexical, settings.min_answerability) is None:
            # One short embedding: the sentence the answer would lead with, against the question.
            sentence_similarity = lead_similarity()
        signals = answerability(confidence, evidence.coverage.share, sentence_similarity, lexical,
                                threshold=settings.min_answerability)
        if signals.probability < settings.min_answerability and not addressed:
            refused = "no sentence answers the question"
    return Verdict(refused=refused, confidence=confidence, sentence_similarity=sentence_similarity, signals=signals)
