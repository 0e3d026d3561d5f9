"""Words as the extractive answer compares them: a light, language-blind stem, the same for a
question's words and a page's ("sourdoughs" and "sourdough", "kept" and "keep").
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"\w+")

#: English irregular past forms, read as their verb: "how long will it keep?" is answered by "can be
#: kept … for up to 5 days", "can I freeze it?" by "frozen for up to 3 months".
_IRREGULAR = {"kept": "keep", "froze": "freeze", "frozen": "freeze", "made": "make", "took": "take", "taken": "take",
              "sold": "sell", "bought": "buy", "paid": "pay", "sent": "send", "spent": "spend",
              "held": "hold", "told": "tell", "found": "find", "brought": "bring", "wrote": "write",
              "written": "write", "chose": "choose", "chosen": "choose", "ate": "eat", "eaten": "eat"}


@functools.lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light, language-blind stem: plural endings off, then the first five letters. Remembered:
    a page's words recur in every unit's text and heading, question after question."""
    word = word.lower().removesuffix("'s")
    word = _IRREGULAR.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


@functools.lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """The stems of a text; remembered, since the same pages are read question after question.
    As many texts as `_segment_units` keeps passages: an entry (the text and its frozenset) takes
    0.5-2.6 KB, so 50,000 of them grew a busy worker by up to ~130 MB; at this size 600 distinct
    questions on a 10k-chunk tenant missed 43 times a question instead of 29 (a few microseconds
    a miss) and the worker stayed 25 MB smaller."""
    return frozenset(map(stem, set(_WORD.findall(text))))
