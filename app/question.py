"""The visitor's question as the answer path takes it: cleaned and checked, the page it was asked on
(only a page of the tenant's own site counts, read as a source), and the language it is in."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from urllib.parse import urlsplit

from app.events import PageContext
from ingest.injection import strip_injections
from ingest.lang import detect_language, primary_subtag
from store.config import SiteConfig
from store.errors import EmptyQuestion, QuestionTooLong

log = logging.getLogger(__name__)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def check_question(question: str, max_chars: int) -> str:
    """Clean the visitor's text; refuse what cannot be a question."""
    question = _CONTROL.sub(" ", question).strip()
    if not _INVISIBLE.sub("", question).strip():  # nothing but zero-width or format characters
        raise EmptyQuestion("the question is empty")
    if len(question) > max_chars:
        raise QuestionTooLong(f"the question is longer than {max_chars} characters; please shorten it")
    return question


def page_on_site(page: PageContext | None, config: SiteConfig) -> bool:
    """Only a page of this tenant's own site may boost results or act as a source."""
    if page is None or not page.url:
        return False
    host = (urlsplit(page.url).hostname or "").lower()
    return bool(host) and (host == config.host or host in {h.lower() for h in config.crawl.allowed_hosts})


def page_context_text(page: PageContext) -> str:
    """The visitor's page as a source: title, description, headings and its JSON-LD facts."""
    from ingest.facts import facts_from_jsonld

    parts = [page.title, page.description, *page.headings[:20]]
    try:
        facts = facts_from_jsonld(page.jsonld[:20])
    except Exception:  # hostile JSON-LD must never break an answer
        log.warning("page context JSON-LD could not be read", exc_info=True)
        facts = []
    parts += [f.text for f in facts]
    text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    # The page never went through ingestion: its injected instructions are taken out here.
    text, _ = strip_injections(re.sub(r"<[^>]*>", " ", text), "page context")
    return text[:3000]


def question_language(question: str, page: PageContext | None, config_lang: str = "",
                      site_langs: Collection[str] = (), previous: str = "") -> str:
    """The visitor's language: detected, with the site's languages (and the page's) preferred when
    the detector hesitates between close ones; when the text is too short, the language of the
    conversation so far (`previous`), else the page's."""
    page_lang = primary_subtag(page.lang if page else "")
    fallback = previous or page_lang or config_lang or "en"
    prefer = {*site_langs, page_lang} - {""}
    return detect_language(question, default=fallback, min_words=3, min_prob=0.9, prefer=prefer, sampled=False)
