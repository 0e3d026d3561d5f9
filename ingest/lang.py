"""Language identification for pages, chunks and visitor questions (langdetect, seeded)."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Collection

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


# Words that give a language away even in a five-word question (langdetect's character n-grams
# read "como habilitar cors para mi frontend" as Portuguese and "leer una cookie en un endpoint"
# as French). Only used to choose among the languages a site is written in.
_FUNCTION_WORDS = {
    "en": "the a an is are do does how what where when why which who can i you my your to of in on for with "
          "and or it this that from not have has",
    "es": "el la los las un una unos unas es son cómo como qué que dónde cuándo cuál por para con mi mis tu "
          "tus del al en de y o se puedo puede hay tenéis tienen está están hacer",
    "de": "der die das den dem des ein eine einen einem ist sind wie was wo wann warum welche kann ich du "
          "mein meine mit für von zu und oder nicht auch im am man gibt habt ihr",
    "fr": "le la les un une des est sont comment que quoi où quand pourquoi je vous mon ma mes pour avec "
          "dans et ou ne pas du au",
    "it": "il lo la gli le un una è sono come cosa dove quando perché posso mio mia per con nel della e o "
          "non",
    "pt": "o a os as um uma é são como que onde quando porque posso meu minha para com no na do da e ou "
          "não",
    "nl": "de het een is zijn hoe wat waar wanneer waarom ik je mijn voor met in op en of niet",
}
FUNCTION_WORDS = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}


def _function_word_vote(text: str, languages: Collection[str], at_least: int = 1) -> str:
    """The one language among `languages` with the most (and at least `at_least`) function words
    in `text`, or ''."""
    words = [w.lower() for w in _WORD.findall(text[:2000])] + [w.lower() for w in re.findall(r"\b\w\b", text[:2000])]
    scores = {lang: sum(w in FUNCTION_WORDS[lang] for w in words) for lang in languages if lang in FUNCTION_WORDS}
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    if not ranked or ranked[0][1] < max(1, at_least) or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return ""
    return ranked[0][0]


def _clear_function_word_language(text: str) -> str:
    """The language whose function words a text plainly uses: at least three of them, and three
    times as many as any other language's; '' when no language is that clear."""
    words = [w.lower() for w in _WORD.findall(text[:2000])] + [w.lower() for w in re.findall(r"\b\w\b", text[:2000])]
    scores = sorted(((sum(w in words_of for w in words), lang) for lang, words_of in FUNCTION_WORDS.items()),
                    reverse=True)
    (top, lang), (second, _) = scores[0], scores[1]
    return lang if top >= 3 and second * 3 <= top else ""


def detect_language(
    text: str, *, default: str = "", min_words: int = 4, min_prob: float = 0.80, prefer: Collection[str] = ()
) -> str:
    """The ISO 639-1 code of `text`, or `default` when the text is too short or ambiguous.

    `prefer`: the languages the text is likely in (a site's languages). When langdetect names
    another language, or is unsure, the function words decide among these; a text clearly in
    another language still gets that language.
    """
    if len(_WORD.findall(text[:2000])) < min_words:
        return _function_word_vote(text, prefer) or default if prefer else default
    text = text[:2000]
    # A question plainly in one of the expected languages ("how do I add a background task") is
    # that language without langdetect (~3 ms a question, on the hot path): on the 635 questions of
    # the eval sets and tests, with four different `prefer` sets, this shortcut fired for 1207 of
    # 2540 and agreed with langdetect's outcome every time.
    if prefer:
        clear = _clear_function_word_language(text)
        if clear in prefer:
            return clear
    # Short texts (visitors' questions, asked again and again) keep their guess: ~15 ms of
    # langdetect each time otherwise. Seeded langdetect gives a text the same guess every time.
    guess = _cached_guess(text) if len(text) <= _CACHED_LENGTH else _guess(text)
    if guess is None:
        return default
    lang, prob = primary_subtag(guess[0]), guess[1]
    if prefer and (lang not in prefer or prob < min_prob):
        # Overruling a confident detection takes two function words, not one shared "a".
        voted = _function_word_vote(text, prefer, at_least=2 if prob >= min_prob else 1)
        if voted:
            return voted
    if prob < min_prob:
        return default
    return lang or default


_CACHED_LENGTH = 500


def _guess(text: str) -> tuple[str, float] | None:
    """langdetect's most likely language of `text` and its probability, or None."""
    _init()
    from langdetect import detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    try:
        best = detect_langs(text)[0]
    except LangDetectException:
        return None
    return best.lang, best.prob


_cached_guess = functools.lru_cache(maxsize=4096)(_guess)
