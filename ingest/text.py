"""Whitespace collapsing for text read out of HTML (page text, titles, form labels, actions).

Indexing-time normalisation, which keeps line breaks and folds Unicode, is ``ingest/clean.py``.
"""

from __future__ import annotations


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace (line breaks included) as one space, ends stripped."""
    return " ".join(text.split())
