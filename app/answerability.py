"""Whether the site answers a question: the honest "not found" decision.

Retrieval always finds *something*; the question is whether it answers. A near miss in the
site's own vocabulary ("roll back the last Django migration" on a packaging guide) retrieves
passages that share its words; an off-topic question that shares one word finds a page that
uses it once. What separates them from answerable questions, measured on the calibration sets
(tests/eval/*.jsonl, tests/eval/heldout/ and tests/eval/report/ — never on unseen/ or fresh/):

- `confidence`: the best passage's similarity on the embedder's calibrated 0..1 scale;
- `sentence_similarity`: the similarity of the sentence the answer would lead with;
- `lexical`: the share of the question's rarity-weighted words that lead sentence uses;
- `coverage`: the share of the question's content words the site uses at all.

A logistic model over those four gives the probability that the site answers; below the
tenant's `answer.min_answerability` the visitor gets the honest answer with the best links.
It is fitted on the questions that pass the term-coverage check (app/answer.py), which refuses
first what the site has no words for (coverage under half) — above that, a site that knows
every word of the question still answers it more often than one that misses "Sentry".
docs/eval.md ("How a question is refused") has the fit and the numbers.
"""

from __future__ import annotations

import math

import msgspec

#: Logistic weights fitted (L2 0.01) on the calibration sets' questions that pass the coverage
#: check (306: 227 answerable, 79 not). The fitted bias was -2.77 and the operating point 0.55 (the
#: highest threshold refusing under 3% of the answerable ones); the bias is moved by
#: logit(0.45) - logit(0.55) so that the default `answer.min_answerability` stays 0.45 for tenants
#: that stored it. At 0.45 it refuses 2.6% of all the calibration sets' answerable questions and
#: 74% of their unanswerable ones, the coverage check included (the three-signal model it replaced:
#: 3.0% and 68% on the same questions); leaving one set out at a time, 78.5% and 5.9% (the three
#: signals: 71.8% and 4.2%). docs/eval.md, "Answers a visitor can trust", has the runs.
WEIGHTS = {"confidence": 2.50, "sentence_similarity": 1.00, "lexical": 0.83, "coverage": 1.74}
BIAS = -3.17


class AnswerSignals(msgspec.Struct, kw_only=True):
    """What the decision reads, kept with the answer for debugging and evaluation."""

    confidence: float
    coverage: float
    sentence_similarity: float
    lexical: float
    probability: float = 0.0


def answerability(confidence: float, coverage: float, sentence_similarity: float, lexical: float) -> AnswerSignals:
    """The probability that the site answers the question, with the signals behind it."""
    logit = BIAS + (WEIGHTS["confidence"] * confidence + WEIGHTS["sentence_similarity"] * sentence_similarity
                    + WEIGHTS["lexical"] * lexical + WEIGHTS["coverage"] * coverage)
    return AnswerSignals(confidence=confidence, coverage=coverage, sentence_similarity=sentence_similarity,
                         lexical=lexical, probability=1.0 / (1.0 + math.exp(-logit)))
