"""Language identification for pages, chunks and visitor questions (langdetect, seeded)."""

from __future__ import annotations

import re
import threading

_lock = threading.Lock()
_ready = False
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)


def _init() -> None:
    global _ready
    if not _ready:
        with _lock:
            if not _ready:
                from langdetect import DetectorFactory

                DetectorFactory.seed = 0  # langdetect is random unless seeded
                _ready = True


def primary_subtag(tag: str | None) -> str:
    """'en-US' → 'en', 'pt_BR' → 'pt', junk → ''."""
    if not tag:
        return ""
    head = re.split(r"[-_]", tag.strip().lower(), maxsplit=1)[0]
    return head if re.fullmatch(r"[a-z]{2,3}", head) else ""


def detect_language(
    text: str, *, default: str = "", min_words: int = 4, min_prob: float = 0.80
) -> str:
    """The ISO 639-1 code of `text`, or `default` when the text is too short or ambiguous."""
    if len(_WORD.findall(text[:2000])) < min_words:
        return default
    _init()
    from langdetect import detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    try:
        best = detect_langs(text[:2000])[0]
    except LangDetectException:
        return default
    if best.prob < min_prob:
        return default
    return primary_subtag(best.lang) or default
