"""A source cut into units that may be quoted whole: a prose sentence, an FAQ answer, a
structured fact (a list's items one by one), a table row read with its header ("Sunday: 8:00 am –
3:00 pm"), a postal address, a code block. What each unit is about (its heading path, FAQ question,
table header) goes with it. app/extractive.py scores the units and chooses what to quote.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import msgspec

from app.carries import carries
from app.prompt import Source
from ingest.chunk import split_sentences
from ingest.document import IMAGE_PREFIX
from store.pages import PagePassage

#: A list item's mark ("- ", "2. ").
LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
#: A short line of words with no sentence's end: a tab's or an example's label above its code.
_TAB_LABEL = re.compile(r"^[\w *#+/.,()-]{1,40}(?<![.!?:;])$")
#: A structured fact's list as the fact renderer writes it (ingest/facts/render.py): a label, then
#: items separated by "; " ("Ingredients: 2/3 cup peanut butter; 1 cup oats; …"). A label is a
#: few words, never a sentence and more: an organisation's fact ("Harbor & Pine (local business).
#: Address: 14 Quay Street, …; Opening hours: Tue–Fri 07:30–17:00; Sat …") was cut into "items"
#: at its hours.
_LABELLED_LIST = re.compile(r"^(?P<label>[^\W\d](?:(?!\. )[^:\n]){1,38}):\s+(?P<items>[^\n]+)$")
_FAQ = re.compile(r"^\s*Q:\s*(?P<q>.+?)\s+A:\s*(?P<a>.+)$", re.S)
_CODE_LINE = re.compile(r"^\s{2,}\S|[=(){}\[\]]|^\s*(?:\$|>>>|\.\.\.|#|//|from |import |def |class |pip |python )")


class Unit(msgspec.Struct, kw_only=True):
    """A piece of a source that may be quoted whole."""

    source: int
    """Index of its source in the list the answerer was given."""
    position: int
    text: str
    kind: str
    """sentence | faq | fact | row | code"""
    about: str = ""
    """What it is about beyond its own words: FAQ question, table header, heading path, title."""
    passage_similarity: float = 0.0
    """Similarity of the stored passage it was cut from to the question (no embedding per unit)."""
    block: int = -1
    """Which paragraph (or list item, table, code block) of its source it belongs to: sentences of one
    paragraph share it."""
    heading: str = ""
    """The heading it sits under (the last of its passage's heading path), when known."""


def _table_rows(block: str) -> list[tuple[str, str]] | None:
    """A table block ("h1 | h2" header line, then rows) as (row as read, header) pairs."""
    if " | " not in block:  # most blocks: no cell separator, no table (and no list of lines to make)
        return None
    lines = [line for line in block.split("\n") if line.strip()]
    if len(lines) < 2 or sum(" | " in line for line in lines) < len(lines) - 1:
        return None
    caption = ""
    if lines[0].startswith("Table: "):
        caption, lines = lines[0][7:], lines[1:]
    header = [c.strip() for c in lines[0].split(" | ")]
    if not lines[0].strip(" |"):  # a table without a header row: one of empty cells (ingest/maincontent.py)
        header = [""] * (lines[1].count(" | ") + 1)
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(" | ")]
        if len(cells) != len(header):
            rows.append((", ".join(c for c in cells if c), f"{caption} {' '.join(header)}"))
            continue
        rows.append((row_text(header, cells), f"{caption} {' '.join(header)}"))
    return rows


def row_text(header: Sequence[str], cells: Sequence[str]) -> str:
    """A table row read with its header: "Sunday: 8:00 am – 3:00 pm" for two columns,
    "Chowder — Price: $12.50; Allergens: fish" for more."""
    first, rest = cells[0], list(zip(header[1:], cells[1:], strict=False))
    if len(rest) == 1:
        return f"{first}: {rest[0][1]}"
    described = "; ".join(f"{name}: {value}" if name else value for name, value in rest if value)
    return f"{first} — {described}" if described else first


#: A list item in words ("- Added a document on migrating uploads. (PR #339)"): prose, though a
#: parenthesis in it looks like code to _CODE_LINE.
_PROSE_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+[^\W\d_][\w’'-]*\s+[^\W\d_]+\s+\S"
                         # Words only, perhaps a spaced aside: "- Markdown (GitHub Flavored Markdown by
                         # default, or CommonMark)", "- Python 2.7.13 (distutils update)", "- plain text";
                         # not indented ("    - black" under "package black 24.2.0" in a terminal).
                         r"|^(?:[-*•]|\d+[.)])\s+[^\W\d_][^=(){}\[\]`$<>:/@]*(?:\s\([^()=`]*\)[^=(){}\[\]`$<>:/@]*)?$"
                         # An ingredient: "- 2 1/2 cups (12 1/2 oz./390 g) all-purpose flour".
                         r"|^(?:[-*•]|\d+[.)])\s+[\d¼½¾⅓⅔⅛]+(?:[ /.,-]\d+)*\s*[^\W\d_]+\.?"
                         r"(?:\s+\([^()=`]*\))?(?:\s+[^\W\d_][^=(){}\[\]`$<>:/@]*)?$")


def is_code(block: str) -> bool:
    """A block kept as written (a `<pre>`): several lines, most of which look like code."""
    lines = [line for line in block.split("\n") if line.strip()]
    if len(lines) < 2 and not (lines and _CODE_LINE.search(lines[0]) and not lines[0].rstrip().endswith(".")):
        return False
    # An image's alt text ("- Image: Basic Guacamole") is never code: a list of pictures is not a program.
    items = [bool(_PROSE_ITEM.match(line)) or LIST_MARK.sub("", line).startswith(IMAGE_PREFIX) for line in lines]
    coded = sum(bool(_CODE_LINE.search(line)) and not item for line, item in zip(lines, items, strict=True))
    prose = sum(item or (line.rstrip().endswith((".", "!")) and len(line.split()) > 6)
                for line, item in zip(lines, items, strict=True))
    return coded >= max(1, len(lines) // 2) and prose <= len(lines) // 3


def units_of(source: Source, index: int, passages: Sequence[PagePassage] | None = None) -> list[Unit]:
    """The units of one source, in reading order: of its retrieved text, or of the whole page
    (`passages`, its chunks in page order) when the answer may look beyond what was retrieved."""
    if passages:
        segments = [(p.text, p.kind, " ".join(p.heading_path), p.heading_path[-1] if p.heading_path else "",
                     source.similarity if p.similarity is None else p.similarity) for p in passages]
    else:
        segments = [(source.text, source.kind, source.context, "", source.similarity)]
    units: list[Unit] = []
    blocks = 0
    for text, kind, heading, last_heading, similarity in segments:
        about_segment = f"{heading} {source.title}"
        pieces = _segment_units(text, kind)
        for piece, unit_kind, about, block in pieces:
            units.append(Unit(source=index, position=len(units), text=piece, kind=unit_kind,
                              about=f"{about} {about_segment}".strip(), passage_similarity=similarity,
                              block=blocks + block, heading=last_heading))
        blocks += 1000 + max((block for *_, block in pieces), default=0)
    return units


def _cut_inside_string(block: str) -> bool:
    """Whether a code block is a piece of a longer listing cut inside a docstring ("Read more about
    it in the [FastAPI docs…]\n    \"\"\"\n    return super()…", an API reference page's source):
    an odd number of triple quotes, none on its first line. Never quoted: a visitor reads it as
    broken code."""
    for quotes in ('"""', "'''"):
        if block.count(quotes) % 2 == 1 and quotes not in block.lstrip().split("\n", 1)[0]:
            return True
    return False


def _postal_address(block: str) -> str | None:
    """A block that is a postal address, a line each ("Harbor & Pine\n14 Quay Street\nPort Wren,
    ME 04987"), as one line: read line by line, "where are you?" was answered "14 Quay Street"."""
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    if not 2 <= len(lines) <= 6 or any(len(line) > 60 or line.endswith((".", "?", "!", ":")) for line in lines):
        return None
    return ", ".join(lines) if carries(block, "address") else None


def _is_list_rest(block: str) -> bool:
    """Whether a paragraph is a list's items and nothing else: one line of at least four short
    pieces separated by "; "."""
    if "\n" in block or block.count("; ") < 3:
        return False
    items = block.split("; ")
    return sum(map(len, items)) / len(items) <= 100


@functools.lru_cache(maxsize=8192)
def _segment_units(text: str, kind: str) -> tuple[tuple[str, str, str, int], ...]:
    """(text, kind, about, block) of the units of one stored passage; remembered, since the same
    pages are read question after question. `block` numbers the paragraphs, and the lines of a list."""
    out: list[tuple[str, str, str, int]] = []
    number = 0

    def add(piece: str, unit_kind: str, about: str = "", line: int = 0) -> None:
        piece = piece.strip()
        if len(piece) > 2:
            out.append((piece, unit_kind, about, number * 1000 + min(line, 999)))

    blocks = text.split("\n\n")
    for number, block in enumerate(blocks):
        faq = _FAQ.match(block)
        if block.startswith(IMAGE_PREFIX):
            continue  # a shown image's alt text ("Image: Banana Cue Final") names a picture, answers nothing
        if _TAB_LABEL.match(block) and number + 1 < len(blocks) and is_code(blocks[number + 1]):
            # A code tab's label ("Python 3.10+", "Source code in fastapi/routing.py") is not a
            # sentence: quoted after "…you can write:", it stood where the code should have.
            continue
        if faq:
            add(faq.group("a"), "faq", faq.group("q"))
        elif kind == "fact" and (items := _LABELLED_LIST.match(block)) and items.group("items").count("; ") >= 2:
            # "Ingredients: 2/3 cup peanut butter; 1 cup oats; …": each item is a unit, so that
            # "how much sugar" quotes the sugar, and a long list cannot lead every question about
            # its dish on the strength of naming everything in it (also where a long fact's next
            # chunk opens with the list).
            for line, item in enumerate(items.group("items").rstrip(".").split("; ")):
                add(item, "sentence", items.group("label"), line=line)
        elif kind == "fact" and number == 0 and _is_list_rest(block):
            # The rest of a list a long fact's previous chunk began ("…; 8 oz cold mascarpone
            # cheese (if you don't have mascarpone cheese, you can use cream cheese); 1/3 cup
            # powdered sugar; …"): its items, as above, not one unit of all of them.
            for line, item in enumerate(block.rstrip(".").split("; ")):
                add(item, "sentence", line=line)
        elif number == 0 and kind in ("fact", "form", "action"):
            add(block, "fact")
        elif (rows := _table_rows(block)) is not None:
            for row, header in rows:
                add(row, "row", header)
        elif "\n" in block.strip() and (address := _postal_address(block)):
            add(address, "sentence")
        elif "\n" in block.strip() and is_code(block):
            if not _cut_inside_string(block):
                add(block, "code")
        else:
            cursor = 0
            for sentence in split_sentences(block):
                found = block.find(sentence[:40], cursor)
                cursor = found if found >= 0 else cursor
                # A question is never an answer (a heading like "Do you deliver?"), nor is an
                # image's alt text in a list ("- Image: Chicken Avocado Nachos").
                asked = sentence.rstrip().endswith(("?", "？"))
                if not (asked or LIST_MARK.sub("", sentence).startswith(IMAGE_PREFIX)):
                    add(sentence, "sentence", line=block.count("\n", 0, cursor))
    return tuple(out)


def is_prose_sentence(unit: Unit) -> bool:
    """A sentence of prose, ended as one ("… conexiones a la base de datos."), not a list item or an
    ingredient ("1/4 cup honey") that the unit kinds also call a sentence."""
    return unit.kind == "sentence" and unit.text.rstrip().endswith((".", "!", "?", "…"))
