"""On documentation, what a how-do-I answer shows beside the sentence it leads with: the API the
page is about (a sentence that names it, when the chosen ones name none) and a code example that
uses it — never a listing of imports alone. app/extractive.py scores the units and calls these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from app.prompt import Source
from app.stems import stems
from app.units import Unit, is_prose_sentence

#: A listing of nothing but imports (Python's `from x import y`, `import x`, an ES module's `import
#: x from "y"`): the shortest block on a page that names its API, so it stood as the "code
#: example" of a how-do-I answer, showing nothing of how.
_ONLY_IMPORTS = re.compile(r"(?:[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import\b(?:[ \t]*\([^)]*\)|[^\n]*)\s*)+")


def bare_imports(unit: Unit) -> bool:
    return unit.kind == "code" and bool(_ONLY_IMPORTS.fullmatch(unit.text))


def imports_nothing_asked(unit: Unit, weights: Mapping[str, float]) -> bool:
    """Whether a unit is a listing of imports alone that names nothing the question asks about:
    never quoted (`FastAPI, Header` and `BaseModel` under "how do I test my API"); one that
    imports what was asked (`StaticFiles` for "serve static files") may stand."""
    return bare_imports(unit) and not any(t in stems(unit.text) for t in weights)


#: The API sentence of a how-do-I answer scores at most this much below the lead…
API_MARGIN = 2.0
#: …and uses at least this share of the lead's question words (its lexical feature).
API_LEXICAL = 0.5
_TOKEN = re.compile(r"\b[A-Za-z_]\w*")
_DEFINED = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w{4,})")


def _identifiers(text: str) -> set[str]:
    """The API names in a text: CamelCase (`APIRouter`, `BackgroundTasks`) or snake_case
    (`dependency_overrides`); not a file name (`main.py`) or a dunder (`__init__`)."""
    names = set()
    for word in _TOKEN.findall(text):
        camel = word[0].isupper() and any(c.islower() for c in word) and sum(c.isupper() for c in word) >= 2
        snake = "_" in word.strip("_") and not word.startswith("__")
        if (camel or snake) and len(word) >= 4:
            names.add(word)
    return names


def _page_identifiers(units: Sequence[Unit], source: int, sources: Sequence[Source]) -> frozenset[str]:
    """The API names a page's code uses that the other top sources' code does not, nor their titles:
    what the page is about (`BackgroundTasks` on the background-tasks page), not the framework's
    own name."""
    own: set[str] = set()
    other: set[str] = set()
    for unit in units:
        if unit.kind == "code":
            # Its API names and the functions and classes it defines (`async def lifespan(app)`).
            names = _identifiers(unit.text) | set(_DEFINED.findall(unit.text))
            (own if unit.source == source else other).update(names)
    # The site's own name ("Testing - FastAPI") is in the titles, where the other sources' code need not be.
    other.update(*(_identifiers(s.title) for s in sources))
    return frozenset(own - other)


def page_api_sentence(units: Sequence[Unit], lead: Unit, score: Sequence[float], chosen: Sequence[int],
                       lexical: np.ndarray, sources: Sequence[Source]) -> int | None:
    """For a how-do-I question whose chosen sentences name no API of the page: the best sentence of
    the lead's page that does ("Primero importa BackgroundTasks…" after "Puedes definir tareas en
    segundo plano…")."""
    page_api = _page_identifiers(units, lead.source, sources)
    if not page_api:
        return None

    def naming(unit: Unit) -> bool:
        return any(name in unit.text for name in page_api)

    if any(naming(units[i]) for i in chosen):
        return None
    lead_index = chosen[0]
    candidates = [i for i, unit in enumerate(units)
                  if unit.source == lead.source and i not in chosen and is_prose_sentence(unit) and naming(unit)
                  and score[lead_index] - score[i] <= API_MARGIN
                  and lexical[i] >= API_LEXICAL * lexical[lead_index]]
    return max(candidates, key=lambda i: score[i], default=None)


def code_example(units: Sequence[Unit], lead: Unit, weights: Mapping[str, float],
                 score: Sequence[float], length_weight: float, naming: str = "") -> int | None:
    """On documentation, a how-do-I answer shows the API the page names with a code example: a code
    block of the lead's source that uses an identifier the lead or the API sentence beside it
    (`naming`) mentions (or a question term), the
    one that scores best for the question — its length left out of the score, so of two equally
    good the shorter wins. (The shortest alone showed `write_notification` where the question
    wanted the example with `BackgroundTasks`.)"""
    identifiers = {w for w in re.findall(r"[A-Za-z_][\w.]*", f"{lead.text} {naming}")
                   if "_" in w or "." in w.strip(".") or (w[:1].isupper() and any(c.isupper() for c in w[1:]))}
    best: tuple[bool, float, int, int] | None = None
    for i, unit in enumerate(units):
        if unit.kind != "code" or unit.source != lead.source or len(unit.text) > 600:
            continue
        names = set(re.findall(r"[A-Za-z_][\w.]*", unit.text))
        asked = any(t in stems(unit.text) for t in weights)
        if (bare_imports(unit) and not asked) or not (identifiers & names or asked):
            continue  # imports naming nothing asked, or a block about something else
        # Imports alone are the last choice, though asked about.
        key = (bare_imports(unit), -score[i] + length_weight * min(len(unit.text), 600) / 300, len(unit.text), i)
        if best is None or key < best:
            best = key
    return best[3] if best else None
