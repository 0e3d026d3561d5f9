"""Language of pages and of visitors' questions (langdetect, helped where it is weak)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.events import PageContext
from app.question import question_language
from ingest.document import Document, Section
from ingest.indexer import content_language, prose_sample
from ingest.lang import detect_language

CODE = """from typing import Annotated

from fastapi import FastAPI, Form

app = FastAPI()


@app.post("/login/")
async def login(username: Annotated[str, Form()], password: Annotated[str, Form()]):
    return {"username": username}"""


def test_a_code_heavy_page_is_labelled_by_its_sentences_not_its_code():
    spanish = ("Cuando necesitas recibir campos de formulario en lugar de JSON, puedes usar Form. "
               "Crea parámetros de formulario de la misma manera que lo harías para Body o Query.")
    doc = Document(url="https://x.test/es/forms/", canonical_url="https://x.test/es/forms/", title="Formularios",
                   lang="es", sections=[Section(heading_path=("Formularios",), text=f"{CODE}\n\n{CODE}\n\n{spanish}")])
    assert prose_sample(doc).startswith("Cuando necesitas")
    # The first 1,500 characters are mostly Python, which langdetect reads as English.
    assert detect_language(" ".join(s.text for s in doc.sections)[:1500], min_prob=0.5) == "en"
    assert content_language(doc) == "es"
    # An untranslated page of a translated site is still found out, and code alone keeps <html lang>.
    english = Document(url="https://x.test/es/ref/", canonical_url="https://x.test/es/ref/", title="Reference",
                       lang="es", sections=[Section(heading_path=(), text=(
                           "This page documents every parameter of the class, with its default value and the "
                           "version that added it. Read the tutorial first if you are new to the framework, "
                           "then come back here when you need the details of one argument."))])
    assert content_language(english) == "en"
    only_code = Document(url="https://x.test/es/c/", canonical_url="https://x.test/es/c/", title="c", lang="es",
                         sections=[Section(heading_path=(), text=CODE)])
    assert content_language(only_code) == "es"


def test_a_page_plainly_in_its_html_lang_skips_langdetect(monkeypatch):
    """Text that plainly uses <html lang>'s function words keeps that language without langdetect
    (~10 ms a page; on all 609 fixture pages the same outcome); other text is still checked."""
    import ingest.lang

    english = ("This page documents every parameter of the class, with its default value and the version "
               "that added it. Read the tutorial first if you are new to the framework, then come back here.")
    page = Document(url="https://x.test/ref/", canonical_url="https://x.test/ref/", title="Reference", lang="en",
                    sections=[Section(heading_path=(), text=english)])
    calls = []
    guess = ingest.lang._guess
    for name in ("_guess", "_cached_guess"):  # langdetect, asked directly or through the question cache
        monkeypatch.setattr(ingest.lang, name, lambda text: calls.append(text) or guess(text))
    assert content_language(page) == "en" and calls == []
    mislabelled = Document(url="https://x.test/es/ref/", canonical_url="https://x.test/es/ref/", title="Reference",
                           lang="es", sections=[Section(heading_path=(), text=english)])
    assert content_language(mislabelled) == "en" and len(calls) == 1


@pytest.mark.parametrize("question, site, expected", [
    # langdetect alone: pt, fr, fr, fr, hr — the site's languages decide between close ones.
    ("como habilitar cors para mi frontend", {"en", "es", "de"}, "es"),
    ("leer una cookie en un endpoint", {"en", "es", "de"}, "es"),
    ("qué horario tenéis en nochebuena", {"en", "es"}, "es"),
    ("do you sell croissants", {"en", "es"}, "en"),
    ("tenéis zumo de naranja natural", {"en", "es"}, "es"),
    # A question clearly in a language the site does not have keeps that language.
    ("¿cuál es la receta de la paella valenciana?", {"en"}, "es"),
    ("comment installer un paquet python", {"en"}, "fr"),
    ("wie installiere ich ein paket", {"en"}, "de"),
])
def test_question_language_prefers_the_sites_languages(question, site, expected):
    assert question_language(question, None, "", site) == expected


def test_short_questions_fall_back_to_the_page_language():
    page = PageContext(url="https://x.test/es/", lang="es-ES")
    assert question_language("horario", page) == "es"
    assert question_language("hola", None, "", {"en", "es"}) == "en"  # too short, nothing to go on


def test_a_question_asked_again_gets_the_same_language_from_the_cache():
    from ingest import lang

    questions = ["comment installer un paquet python", "tenéis zumo de naranja natural",
                 "how do I upload my package to test pypi"]
    first = [detect_language(q, default="en", min_words=3, min_prob=0.9) for q in questions]
    hits = lang._cached_guess.cache_info().hits
    again = [detect_language(q, default="en", min_words=3, min_prob=0.9) for q in questions]
    assert again == first and first[0] == "fr" and first[2] == "en"
    assert lang._cached_guess.cache_info().hits >= hits + len(questions)
    assert [lang._guess(q) for q in questions] == [lang._cached_guess(q) for q in questions]


def test_the_compact_profiles_give_langdetects_own_probabilities():
    """ingest.lang holds langdetect's profiles sparsely (~15 MB instead of ~63 MB a process): every
    n-gram's row and every detection must be langdetect's own, float for float."""
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    from ingest.lang import CompactDetector, profiles

    stock = DetectorFactory()
    stock.load_profile(PROFILES_DIRECTORY)
    compact = profiles()
    assert compact.langlist == stock.langlist
    assert compact.word_lang_prob_map.keys() == stock.word_lang_prob_map.keys()
    assert all(compact.row(word) == row for word, row in stock.word_lang_prob_map.items())

    stock.seed = 0
    texts = ["How do I add a background task to my endpoint?", "Cómo habilitar CORS para mi frontend",
             "Wie kann ich eine Datei hochladen und speichern?", "Comment lire un cookie dans un endpoint",
             "Привет, как дела?", "これは日本語の文です", "ok", "pip install -e . --no-deps",
             "Cuando necesitas recibir campos de formulario en lugar de JSON, puedes usar Form. " * 5]
    texts += [q for q, _ in _eval_questions()]  # and every question of the eval sets, in four languages
    for text in filter(None, texts):
        ours, theirs = CompactDetector(compact), stock.create()
        ours.append(text)
        theirs.append(text)
        assert [(p.lang, p.prob) for p in ours.get_probabilities()] == \
               [(p.lang, p.prob) for p in theirs.get_probabilities()], text


def _eval_questions() -> list[tuple[str, str]]:
    """Every question of the eval sets with its site's name: (question, site)."""
    questions = []
    for path in sorted((Path(__file__).parent / "eval").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line) if line.strip() else {}
            texts = [item["q"]] if item.get("q") else [t if isinstance(t, str) else t.get("q", "")
                                                         for t in item.get("turns", [])]
            questions += [(text, path.stem) for text in texts if text]
    return questions


def test_a_question_whose_ngrams_plainly_belong_to_a_site_language_skips_langdetect(monkeypatch):
    """Without three function words, "dependency groups"-like questions went to langdetect (1.5-30 ms
    each); when all the n-grams at once name one of the site's languages by DECISIVE_MARGIN nats,
    that is the answer. Ambiguous ones are read the same way, all their n-grams at once
    (`likeliest_language`): a visitor's question never waits for langdetect's sampling."""
    import ingest.lang
    from ingest.lang import clear_function_word_language, decisive_language

    plain = "publish to pypi automatically from github actions"
    ambiguous = "dependency groups for dev and test dependencies"  # its n-grams lean French
    assert clear_function_word_language(plain) == "" and decisive_language(plain) == "en"
    assert decisive_language(ambiguous) == ""
    assert decisive_language("Testclient basierend auf HTTPX.") == "de"
    assert decisive_language("") == ""

    def sampled(text: str) -> None:
        raise AssertionError(f"langdetect sampled {text!r}")

    for name in ("_guess", "_cached_guess"):
        monkeypatch.setattr(ingest.lang, name, sampled)
    assert question_language(plain, None, "", {"en"}) == "en"
    assert question_language(ambiguous, None, "", {"en"}) == "en"
    # A question plainly in a language the site does not have keeps that language.
    assert question_language("comment puis-je publier mon paquet", None, "", {"en"}) == "fr"
    # Read at once, a short English question's n-grams lean to Tagalog: another language needs a
    # decisive lead or one of its own function words.
    assert question_language("anything I should bring along?", None, "", {"en", "es"}) == "en"
    # langdetect's draws made this one English on an English site.
    assert question_language("Unser Server hat keinen Internetzugang, deshalb lädt /docs die JavaScript- und "
                             "CSS-Dateien vom CDN nicht.", None, "", {"en"}) == "de"


def test_reading_every_ngram_names_the_question_s_language_at_least_as_often_as_sampling():
    """On every question of the eval sets, with its own language labelled, under four sets of site
    languages: the whole-text estimate is right at least as often as langdetect's sampling, and
    the two disagree on few questions."""
    from app.eval import load_golden
    from ingest.lang import detect_language

    labelled = [(text, item.lang or "en") for path in sorted((Path(__file__).parent / "eval").rglob("*.jsonl"))
                for item in load_golden(path) for text in ([item.q] if item.q else item.turns)]
    assert len(labelled) > 1000
    right = {True: 0, False: 0}
    differ = 0
    for question, lang in labelled:
        for site in ({"en"}, {"en", "es", "de"}, {"en", "es"}, set()):
            outcome = {sampled: detect_language(question, default="en", min_words=3, min_prob=0.9, prefer=site,
                                                sampled=sampled) for sampled in (True, False)}
            differ += outcome[True] != outcome[False]
            for sampled, found in outcome.items():
                right[sampled] += found == lang
    assert right[False] >= right[True], right
    assert differ <= 0.02 * 4 * len(labelled), differ


def test_the_ngram_shortcut_changes_no_eval_questions_language(monkeypatch):
    """On every question of the eval sets (~820, in English, Spanish and German), with its site's languages
    preferred, the outcome is the same with the shortcut as without it."""
    import ingest.lang

    site_languages = {"pypug": {"en"}, "fastapi": {"en", "es", "de"}, "demo": {"en", "es"}}
    questions = [(q, site_languages[site]) for q, site in _eval_questions() if site in site_languages]
    assert len(questions) > 600
    with_shortcut = [question_language(q, None, "", langs) for q, langs in questions]
    monkeypatch.setattr(ingest.lang, "decisive_language", lambda text: "")
    ingest.lang._cached_guess.cache_clear()
    assert [question_language(q, None, "", langs) for q, langs in questions] == with_shortcut
