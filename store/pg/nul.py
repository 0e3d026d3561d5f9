"""U+0000 taken out of text on its way into PostgreSQL, whose `text` cannot hold it: psycopg
refuses such a value outright, so one NUL in a crawled page's title, a chunk or an imported
conversation would fail the whole page write or the whole tenant import. The SQLite files keep
NULs as they came (SQLite text may hold them); a PostgreSQL tenant holds the same text without
them, so export → import → export is byte-equal only for text that had none. JSON columns are
unaffected: json.dumps writes a NUL as the escape `\\u0000`, six ordinary characters."""

from __future__ import annotations

from collections.abc import Iterable


def strip_nul(text: str) -> str:
    return text.replace("\x00", "") if "\x00" in text else text


def without_nul(values: Iterable[object]) -> tuple[object, ...]:
    """A row of statement parameters with U+0000 taken out of each string (bytes, numbers and
    None as they are)."""
    return tuple(strip_nul(v) if isinstance(v, str) else v for v in values)
