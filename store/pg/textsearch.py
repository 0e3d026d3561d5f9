"""Which PostgreSQL text-search configuration stems a chunk: from its language, real stemming
(Snowball) for the languages PostgreSQL ships, `simple` (lower-casing only) for the rest. SQLite's
FTS5 has only the English Porter stemmer for every language."""

from __future__ import annotations

from store.words import fts_terms

#: ISO 639-1 code → configuration built into PostgreSQL (`\\dF` lists them).
CONFIGS: dict[str, str] = {
    "ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek", "en": "english",
    "es": "spanish", "et": "estonian", "eu": "basque", "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi",
    "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian", "lt": "lithuanian",
    "nb": "norwegian", "ne": "nepali", "nl": "dutch", "nn": "norwegian", "no": "norwegian",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
FALLBACK = "simple"


def config_for(lang: str) -> str:
    """The configuration of a chunk in `lang` ("en", "pt-BR", "" …)."""
    return CONFIGS.get(lang.split("-")[0].lower(), FALLBACK) if lang else FALLBACK


def query_words(text: str) -> list[str]:
    """The visitor's words to look up: the same terms as the SQLite side (stopwords dropped, at
    most 32). Each is word characters only, so no operator or quote of the tsquery syntax can
    come from the visitor; each is stemmed by every configuration the tenant's chunks use."""
    return list(dict.fromkeys(w for term in fts_terms(text) for w in term.split()))
