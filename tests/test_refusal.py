"""The order of the refusal checks (app/refusal.py), on evidence written out by hand: the logic of
the verdict, not the embedder (the lead sentence's similarity is given). The whole path on the
sample site is in tests/test_sample_site_answers.py."""

from __future__ import annotations

import msgspec

from app.extractive import Quote, Selection
from app.prompt import Source
from app.refusal import LEAD_STANDS_FOR_PASSAGE, WEAK_MATCH, Evidence, verdict
from store.config import AnswerSettings
from store.words import TermCoverage

ABOUT = Source(n=1, title="About", url="https://shop.example/about.html",
               text="The step-free entrance is the side door on Net Loft Lane.")


def evidence(question: str, quotes: list[Quote], *, similar_passages: int = 1, confidence: float = 0.6,
             native: bool = True) -> Evidence:
    lead = quotes[0].text if quotes else ""
    return Evidence(question=question, lang="en", confidence=confidence, strong=0.85, native=native,
                    similar_passages=similar_passages, coverage=TermCoverage(terms=[], unknown=[], share=1.0),
                    counts={}, chunks=100, known="", asking_where="", sources=[ABOUT],
                    selection=Selection(quotes=quotes, lead=lead, lead_features={"lexical": 0.8}))


def calibrated(similarity: float) -> float:
    return min(1.0, max(0.0, (similarity - 0.2) / 0.4))


def test_a_lead_sentence_like_the_question_stands_for_a_passage_that_is_not():
    quotes = [Quote(source=0, text=ABOUT.text, kind="sentence", score=5.0)]
    calls: list[int] = []

    def similar(value: float):
        def lead_similarity() -> float:
            calls.append(1)
            return value
        return lead_similarity

    question = "where's the step-free way in?"
    weak = verdict(evidence(question, quotes, similar_passages=0, confidence=0.1), AnswerSettings(),
                   similar(LEAD_STANDS_FOR_PASSAGE - 0.1), calibrated)
    assert weak.refused == "no passage is similar enough" and len(calls) == 1
    calls.clear()
    stands = verdict(evidence(question, quotes, similar_passages=0, confidence=0.1), AnswerSettings(),
                     similar(0.56), calibrated)
    assert stands.refused == "" and stands.confidence > 0.8 and stands.sentence_similarity == 0.56
    assert len(calls) == 1  # embedded once, and the answerability model read the same number


def test_a_price_alone_does_not_answer_how_and_the_term_coverage_check_comes_first():
    row = [Quote(source=0, text="Chai latte: $4.50", kind="row", score=5.0)]
    never = lambda: 0.9  # noqa: E731 — not needed before the model, which these never reach
    made = verdict(evidence("how do you make a chai latte at home?", row), AnswerSettings(), never, calibrated)
    assert made.refused == "the passages give only a price"
    priced = verdict(evidence("how much is a chai latte?", row, confidence=0.9), AnswerSettings(), never, calibrated)
    assert priced.refused == ""
    unknown = evidence("how do you make a chai latte at home?", row)
    unknown = Evidence(**{**{f: getattr(unknown, f) for f in unknown.__struct_fields__},
                          "coverage": TermCoverage(terms=["chai", "home"], unknown=["chai", "home"], share=0.0)})
    assert verdict(unknown, AnswerSettings(), never, calibrated).refused == \
        "the site does not use most of the question's words"


def test_half_the_words_unknown_refuses_only_a_question_no_passage_is_close_to():
    lead = [Quote(source=0, text="We have no car park of our own; the Harbor Lot is a two-minute walk away.",
                  kind="sentence", score=5.0)]
    question = "how do I get pine sap off my car's paintwork?"
    half = TermCoverage(terms=["pine", "sap", "car", "paintwork"], unknown=["sap", "paintwork"], share=0.5)
    somewhat = lambda: 0.35  # noqa: E731 — the lead sentence, as far from the question as measured

    def asked(confidence: float, native: bool = True, settings: AnswerSettings | None = None) -> str:
        found = msgspec.structs.replace(evidence(question, lead, confidence=confidence, native=native), coverage=half)
        return verdict(found, settings or AnswerSettings(), somewhat, calibrated).refused

    weak = "the site uses only half of the question's words, and no passage is close to it"
    assert asked(WEAK_MATCH - 0.1) == weak
    assert asked(WEAK_MATCH + 0.1) != weak  # a close passage: the answerability model decides
    # Outside the embedder's languages a low similarity may only mean another language.
    assert asked(WEAK_MATCH - 0.1, native=False) != weak
    # More than half the words known: not this rule's to refuse.
    found = msgspec.structs.replace(evidence(question, lead, confidence=WEAK_MATCH - 0.1), coverage=TermCoverage(
        terms=["pine", "sap", "car", "paintwork"], unknown=["paintwork"], share=0.75))
    assert verdict(found, AnswerSettings(), somewhat, calibrated).refused != weak
    # A tenant that turned the coverage check off turns this one off with it.
    assert asked(WEAK_MATCH - 0.1, settings=AnswerSettings(min_term_coverage=0)) != weak
