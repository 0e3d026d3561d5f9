"""Language identification for pages, chunks and visitor questions (langdetect, seeded, over its
profiles held compactly: `Profiles`)."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import struct
import threading
from collections.abc import Collection

import numpy as np
from langdetect.detector import Detector
from langdetect.detector_factory import PROFILES_DIRECTORY
from langdetect.lang_detect_exception import ErrorCode, LangDetectException

_lock = threading.Lock()
_profiles: Profiles | None = None
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)

#: One non-zero probability of an n-gram: the language's index and the probability, a float64
#: exactly as langdetect computes it.
_ENTRY = struct.Struct("<Bd")


class Profiles:
    """langdetect's 55 language profiles, with the n-gram probabilities its
    `DetectorFactory.load_profile` computes, held sparsely.

    langdetect keeps a list of 55 floats for each of its 87,598 n-grams (~63 MB in every process
    that detects a language: each server worker), though an n-gram has ~2 non-zero probabilities
    on average. Here an n-gram maps to its non-zero (language, probability) pairs packed in bytes
    (~15 MB in all), and `CompactDetector` expands a row into langdetect's list the first time a
    text uses the n-gram: the same floats in the same order, so the same arithmetic and
    byte-identical results (tests/test_lang.py compares them with langdetect's own)."""

    def __init__(self, directory: str = PROFILES_DIRECTORY) -> None:
        #: What langdetect's Detector reads from its factory.
        self.seed = 0  # langdetect is random unless seeded
        self.langlist: list[str] = []
        self.word_lang_prob_map: dict[str, bytes] = {}
        # The files in load_profile's (directory) order: a language's index is its position in
        # it, and a row is as long as the directory has entries.
        names = os.listdir(directory)
        self.row_length = len(names)
        packed = self.word_lang_prob_map
        for name in names:
            path = os.path.join(directory, name)
            if name.startswith(".") or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as handle:
                profile = json.load(handle)
            index = len(self.langlist)
            self.langlist.append(profile["name"])
            n_words = profile["n_words"]
            for word, count in profile["freq"].items():
                row = packed.setdefault(word, b"")
                if 1 <= len(word) <= 3:  # langdetect's rule; a longer n-gram keeps an all-zero row
                    packed[word] = row + _ENTRY.pack(index, 1.0 * count / n_words[len(word) - 1])

    def row(self, word: str) -> list[float]:
        """`word`'s probability in each language, the list langdetect would hold."""
        row = [0.0] * self.row_length
        for index, probability in _ENTRY.iter_unpack(self.word_lang_prob_map[word]):
            row[index] = probability
        return row


class CompactDetector(Detector):
    """langdetect's Detector over `Profiles`: its detection loop, with each n-gram's row expanded
    once per text (a detection draws thousands of n-grams from a few hundred distinct ones)."""

    def __init__(self, profiles: Profiles) -> None:
        super().__init__(profiles)
        self._profiles = profiles

    def _detect_block(self) -> None:
        """langdetect's own loop (the same seeded draws, trials and convergence test) with each
        step's multiplication of the 55 languages' probabilities done by numpy: the same float64
        operations on the same values — the normalising sum is still Python's, in order — so the
        same result (tests/test_lang.py), about a quarter faster (4.3 → 3.2 ms for a question
        langdetect has to read; issue 15)."""
        self.cleaning_text()
        ngrams = self._extract_ngrams()
        if not ngrams:
            raise LangDetectException(ErrorCode.CantDetectError, "No features in text.")
        size = len(self.langlist)
        # Each distinct n-gram's row once; the draws pick row numbers (`choice` consumes the seeded
        # generator the same way whatever the list holds).
        index: dict[str, int] = {}
        picks = [index.setdefault(word, len(index)) for word in ngrams]
        table = np.array([self._profiles.row(word)[:size] for word in index], dtype=np.float64)
        langprob = [0.0] * size
        stack = np.empty((6, size), dtype=np.float64)
        draw = self.random
        draw.seed(self.seed)
        for _ in range(self.n_trial):
            prob = np.array(self._init_probability(), dtype=np.float64)
            alpha = self.alpha + draw.gauss(0.0, 1.0) * self.ALPHA_WIDTH
            factors = (alpha / self.BASE_FREQ) + table  # langdetect's `weight + row` per n-gram
            step, batch = 0, 1
            while True:
                # The steps up to the next convergence test (after step 0, then every 5th),
                # multiplied in one row after another: the same products in the same order.
                stack[0] = prob
                np.take(factors, [draw.choice(picks) for _ in range(batch)], axis=0, out=stack[1:batch + 1])
                np.multiply.reduce(stack[:batch + 1], axis=0, out=prob)
                step += batch - 1
                total = sum(prob.tolist())
                if not total:  # langdetect would divide by zero
                    raise LangDetectException(ErrorCode.CantDetectError, "No probability left.")
                prob /= total
                if float(prob.max()) > self.CONV_THRESHOLD or step >= self.ITERATION_LIMIT:
                    break
                step += 1
                batch = 5
            for j, p in enumerate(prob.tolist()):
                langprob[j] += p / self.n_trial
        self.langprob = langprob


def profiles() -> Profiles:
    """The profiles, loaded once per process on first use (~0.8 s)."""
    global _profiles
    if _profiles is None:
        with _lock:
            if _profiles is None:
                _profiles = Profiles()
    return _profiles


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


def clear_function_word_language(text: str) -> str:
    """The language whose function words a text plainly uses: at least three of them, and three
    times as many as any other language's; '' when no language is that clear."""
    words = [w.lower() for w in _WORD.findall(text[:2000])] + [w.lower() for w in re.findall(r"\b\w\b", text[:2000])]
    scores = sorted(((sum(w in words_of for w in words), lang) for lang, words_of in FUNCTION_WORDS.items()),
                    reverse=True)
    (top, lang), (second, _) = scores[0], scores[1]
    return lang if top >= 3 and second * 3 <= top else ""


def detect_language(
    text: str, *, default: str = "", min_words: int = 4, min_prob: float = 0.80, prefer: Collection[str] = (),
    sampled: bool = True,
) -> str:
    """The ISO 639-1 code of `text`, or `default` when the text is too short or ambiguous.

    `prefer`: the languages the text is likely in (a site's languages). When langdetect names
    another language, or is unsure, the function words decide among these; a text clearly in
    another language still gets that language.
    `sampled`: langdetect's own estimate (pages and chunks, labelled as they always were). False
    reads every n-gram once instead (`likeliest_language`): ~0.1 ms where langdetect's sampling
    takes 1.5-30 ms, for a visitor's question on the answer path.
    """
    if len(_WORD.findall(text[:2000])) < min_words:
        return _function_word_vote(text, prefer) or default if prefer else default
    text = text[:2000]
    # A question plainly in one of the expected languages ("how do I add a background task") is
    # that language without langdetect (~3 ms a question, on the hot path): on the 635 questions of
    # the eval sets and tests, with four different `prefer` sets, this shortcut fired for 1207 of
    # 2540 and agreed with langdetect's outcome every time.
    decisive = ""
    if prefer:
        clear = clear_function_word_language(text)
        if clear in prefer:
            return clear
        # The same for a question whose n-grams plainly belong to one of the expected languages:
        # langdetect samples them a few at a time, 1.5-30 ms on a question that lacks three
        # function words ("dependency groups for dev and test dependencies"); summing them all
        # once takes ~0.1 ms (`decisive_language`).
        decisive = decisive_language(text)
        if decisive in prefer:
            return decisive
    # Short texts keep langdetect's guess (~15 ms each time otherwise; seeded, it gives a text the
    # same guess every time). Visitors' questions do not wait for it at all (`sampled=False`).
    if not sampled:
        guess = likeliest_language(text)
        likeliest = primary_subtag(guess[0]) if guess else ""
        if guess and prefer and likeliest not in prefer and not decisive and not _function_word_vote(text, [likeliest]):
            # Read at once, the n-grams of a short English question can lean to Tagalog
            # ("anything I should bring along?", where langdetect said English): a language the
            # site does not have needs a decisive lead or one of its own function words.
            guess = (guess[0], 0.0)
    else:
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

#: How many nats the likeliest language's n-grams must outscore the runner-up's by for
#: `decisive_language` to name it. Chosen on the eval sets' questions (tests/eval), checked against
#: their labelled languages and today's outcome; see README "Speed".
DECISIVE_MARGIN = 10.0
#: langdetect's smoothing of an n-gram's probability (`alpha / BASE_FREQ` in its Detector).
_SMOOTHING = 0.5 / 10_000


def decisive_language(text: str, margin: float = DECISIVE_MARGIN) -> str:
    """The language whose profile explains `text`'s n-grams better than any other's by `margin`
    nats, or '' when none does.

    langdetect draws a text's n-grams at random, a few per step, until one language's share
    passes 0.99999, seven times over, and on a short question that can take thousands of steps.
    Its estimate is a sample of this: the log-likelihood of all the n-grams at once (naive Bayes
    with langdetect's smoothing, over the same profiles and the same n-grams). When that is
    decisive, sampling cannot tell anything else."""
    found = _likelihoods(text)
    if found is None or found[2] < margin:
        return ""
    return primary_subtag(found[0])


def likeliest_language(text: str) -> tuple[str, float] | None:
    """The language whose profile explains all of `text`'s n-grams best and its posterior (equal
    priors), or None: what langdetect's sampling estimates, read once. Checked against langdetect
    as `detect_language` uses it, on 1,132 questions (the eval sets' 1,102 and the answer bench's
    30) under four sets of preferred languages: the same outcome 4,488 times in 4,528; of the 40
    others, the labelled language 23 more times ("Unser Server hat keinen Internetzugang…" is
    German where langdetect's draws made it English); with the FastAPI site's three languages
    preferred, 1,091 of the eval sets' 1,102 right, langdetect 1,090."""
    found = _likelihoods(text)
    return None if found is None else (found[0], found[1])


@functools.lru_cache(maxsize=4096)
def _likelihoods(text: str) -> tuple[str, float, float] | None:
    """(language, posterior, lead over the runner-up in nats) of naive Bayes over the text's
    n-grams with langdetect's profiles and smoothing, or None when it has no n-gram. Remembered:
    `decisive_language` and `likeliest_language` read the same question."""
    detector = CompactDetector(profiles())
    detector.append(text)
    detector.cleaning_text()
    grams = detector._extract_ngrams()
    if not grams:
        return None
    scores = [0.0] * len(detector.langlist)
    for gram in grams:
        for index, gain in _ngram_gains(gram):
            scores[index] += gain
    first, second = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:2]
    top = scores[first]
    posterior = 1.0 / sum(math.exp(score - top) for score in scores)
    return detector.langlist[first], posterior, top - scores[second]


@functools.lru_cache(maxsize=16_384)
def _ngram_gains(gram: str) -> tuple[tuple[int, float], ...]:
    """An n-gram's log-likelihood in each language where it occurs, above the smoothing floor
    every language gets (which cancels out between languages)."""
    return tuple((index, math.log1p(probability / _SMOOTHING))
                 for index, probability in _ENTRY.iter_unpack(profiles().word_lang_prob_map[gram]))


def _guess(text: str) -> tuple[str, float] | None:
    """langdetect's most likely language of `text` and its probability, or None."""
    detector = CompactDetector(profiles())
    detector.append(text)
    try:
        best = detector.get_probabilities()[0]
    except LangDetectException:
        return None
    return best.lang, best.prob


_cached_guess = functools.lru_cache(maxsize=4096)(_guess)
