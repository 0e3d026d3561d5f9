"""The lexical side in memory: FTS5's BM25 computed with numpy over postings read once from the
index, the same scores and candidates as `bm25(chunk_fts, …)` without asking FTS5 to rank.

Why: FTS5 computes `bm25()` for every row an OR query matches before `ORDER BY score LIMIT`
keeps the best: 5–12 ms a question at 10k chunks, 30–55 ms at 100k (44k rows for "wheel file
format"), most of a question's search. Here each phrase's postings (the rows and columns it
occurs in, with its hits) are read from FTS5's own index through `fts5vocab` the first time a
question uses it, kept for the tenant's content generation, and a question's ranking is a few
vector operations over the rows its phrases match.

The formula is FTS5's (ext/fts5/fts5_aux.c; apsw.fts5aux translates it): for each phrase,
idf = log((N - n + 0.5) / (n + 0.5)), at least 1e-6; a row's score is minus the sum over the
phrases of idf · f · (k1 + 1) / (f + k1 · (1 - b + b · |D| / avgdl)), f the phrase's hits in
the row weighted by column, |D| the row's tokens, avgdl the table's tokens per row; k1 = 1.2,
b = 0.75. Query words are cut into tokens by the table's own tokenizer (apsw's FTS5 tokenizer
API), so a word like "install requires" is the same two-token phrase FTS5 would match.

A word in half the rows or more (FTS5 weighs it 1e-6) is left out when the other words still match
enough rows, as the FTS5 path does (store/search.py `bm25_candidates`): scores then differ by
under 1e-5. A phrase's postings cost ~0.3 µs a place to read the first time (~10 ms for a word in
23k of 100k rows), then nothing until the content changes; a tenant's warm-up (`warm`) reads its
most frequent words' ahead.

Like the vector index (store/vector_index.py) it is built once per content generation of a tenant
and kept per process; while a crawl writes (a new generation every few pages) the questions in
between use FTS5 directly until a rebuild is due.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Sequence

import apsw
import numpy as np

from store.connect import Row, all_rows, one_row
from store.vector_index import content_version

K1 = 1.2
B = 0.75
#: A stale index is rebuilt at most this often (as the vector index is).
REBUILD_INTERVAL_S = 10.0
#: Bytes a row takes in a tenant's row lengths (rowid, tokens) and in a phrase's postings
#: (position, hits per column as uint16): what the memory budget (`configure`) is counted in.
ROW_BYTES = 16
POSTING_BYTES = 10
#: A column's hits in one row, at most (uint16): chunks are a few hundred tokens long, so FTS5's
#: count is never cut in practice.
MAX_HITS = np.iinfo(np.uint16).max
#: Query words whose tokens are remembered per tenant.
MAX_WORDS = 20_000
#: Tenants whose index is kept per process; least recently used out first.
MAX_TENANTS = 16
_COLUMNS = ("title", "heading", "text")
_VOCAB = "temp.frontdesk_fts_instances"
_VOCAB_ROWS = "temp.frontdesk_fts_terms"
#: The share of the memory budget one tenant's warm-up (`warm`) may fill, and the share beyond
#: which no warm-up adds more: with many tenants the first few are warmed (~1 s at 10k chunks
#: each, before `/readyz`), the rest read their words when asked.
WARM_SHARE = 0.25
WARM_TOTAL_SHARE = 0.5
#: Words in fewer of a tenant's rows than this share are not warmed: their postings take well
#: under a millisecond to read on first use (~0.3 µs a place).
WARM_MIN_SHARE = 0.01
#: fts5vocab names a place's column; its name's length modulo 5 (0, 2, 4: in the columns' order)
#: tells the three apart in SQLite without comparing strings (a CASE on the name made SQLite's part
#: of a read ~1.7x slower: ~490 against ~280 ns a place) and keeps a token's places in order.
_COLUMN_CODE = "(length(col) % 5)"
_COLUMN_OF_CODE = np.full(16, -1, dtype=np.int64)
_COLUMN_OF_CODE[[len(name) % 5 for name in _COLUMNS]] = np.arange(len(_COLUMNS))
assert [len(name) % 5 for name in _COLUMNS] == sorted({len(name) % 5 for name in _COLUMNS})
#: Row ids at or above this do not fit the packed places (row << 32 in 63 bits): FTS5 ranks.
MAX_ROWID = 1 << 30
_TOKENIZE = re.compile(r"tokenize\s*=\s*'([^']*)'", re.I)


class TextIndex:
    """One tenant's FTS5 statistics for one content generation, and its phrases' postings."""

    def __init__(self, generation: str, ids: np.ndarray, lengths: np.ndarray, avgdl: float,
                 tokenizer: tuple[str, list[str]]) -> None:
        self.generation = generation  # store/vector_index.py content_version
        self.ids = ids                # the index's rowids, ascending
        self.lengths = lengths        # each row's tokens over all columns (float64)
        self.avgdl = avgdl
        self.tokenizer = tokenizer
        self.words: dict[str, tuple[str, ...]] = {}
        self.postings: OrderedDict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.held = 0

    def tokens(self, conn: apsw.Connection, word: str) -> tuple[str, ...]:
        """A query word as the table's tokenizer cuts it ("installing" -> ("instal",))."""
        found = self.words.get(word)
        if found is None:
            name, args = self.tokenizer
            tokenize = conn.fts5_tokenizer(name, args)
            # A token comes as (start, end, token, *colocated) (or the token alone, by apsw's types).
            found = tuple(item if isinstance(item, str) else str(tuple(item)[2])
                          for item in tokenize(word.encode(), apsw.FTS5_TOKENIZE_QUERY, None))
            if len(self.words) >= MAX_WORDS:
                self.words.clear()
            self.words[word] = found
        return found

    def phrase(self, conn: apsw.Connection, tokens: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Rows (positions in `ids`) where the phrase occurs, and its hits there per column."""
        with _lock:
            cached = self.postings.get(tokens)
            if cached is not None:
                self.postings.move_to_end(tokens)
                return cached
        found = _read_phrase(conn, self, tokens)
        # Each statement reads its own snapshot: postings read after a write committed belong to
        # another generation than this index's row lengths (the generation only grows).
        if content_version(conn) != self.generation:
            raise _Stale
        with _lock:
            if tokens not in self.postings:
                self.postings[tokens] = found
                self.held += len(found[0])
                _make_room()
        return found

    def top(self, conn: apsw.Connection, words: Sequence[str], weights: Sequence[float], limit: int,
            common: Collection[str] = ()) -> tuple[list[str], list[tuple[int, float]]] | None:
        """The `limit` best rows for `words` OR-ed, as `bm25(chunk_fts, *weights)` scores them
        (lower is better; ties by rowid), and the words ranked. A word of `common` (in half the
        rows or more: FTS5 weighs it 1e-6) is left out when the others match `limit` rows, as
        store/search.py's FTS5 path does: its postings are the longest to read. None when the
        content changed while it read: FTS5 ranks."""
        try:
            return self._top(conn, words, weights, limit, common)
        except _Stale:
            return None

    def _top(self, conn: apsw.Connection, words: Sequence[str], weights: Sequence[float], limit: int,
             common: Collection[str]) -> tuple[list[str], list[tuple[int, float]]]:
        count = len(self.ids)
        column_weights = np.asarray(weights, dtype=np.float64)
        rows_of: list[np.ndarray] = []
        gains: list[np.ndarray] = []
        ranked = [w for w in words if w not in common] or list(words)
        self._score(conn, ranked, column_weights, rows_of, gains)
        if len(ranked) < len(words) and not _match_at_least(rows_of, count, limit):
            ranked, rows_of, gains = list(words), [], []  # too few without them: every word ranks
            self._score(conn, ranked, column_weights, rows_of, gains)
        if not rows_of:
            return ranked, []
        score = np.bincount(np.concatenate(rows_of), weights=np.concatenate(gains), minlength=count)
        matched = np.flatnonzero(score)
        if len(matched) > limit:
            best = matched[np.argpartition(-score[matched], limit - 1)[:limit]]
            matched = matched[score[matched] >= score[best].min()]  # and every row tied with the last kept
        order = matched[np.lexsort((self.ids[matched], -score[matched]))][:limit]
        return ranked, [(int(self.ids[i]), -float(score[i])) for i in order]

    def _score(self, conn: apsw.Connection, words: Sequence[str], column_weights: np.ndarray,
               rows_of: list[np.ndarray], gains: list[np.ndarray]) -> None:
        """Each word's rows and what it adds to their score (FTS5's BM25 term)."""
        count = len(self.ids)
        for word in words:
            tokens = self.tokens(conn, word)
            if not tokens:
                continue
            rows, hits = self.phrase(conn, tokens)
            if not len(rows):
                continue
            idf = max(1e-6, math.log((count - len(rows) + 0.5) / (len(rows) + 0.5)))
            freq = hits @ column_weights
            norm = K1 * (1 - B + B * self.lengths[rows] / self.avgdl)
            rows_of.append(rows)
            gains.append(idf * freq * (K1 + 1) / (freq + norm))


def _match_at_least(rows_of: list[np.ndarray], count: int, limit: int) -> bool:
    """Whether the words match `limit` rows together. Each word's rows are distinct, so the longest
    list often settles it; np.unique over them all took ~1 ms a question at 10k chunks."""
    if not rows_of:
        return False
    if max(len(rows) for rows in rows_of) >= limit:
        return True
    seen = np.zeros(count, dtype=bool)
    for rows in rows_of:
        seen[rows] = True
    return int(np.count_nonzero(seen)) >= limit


def _read_phrase(conn: apsw.Connection, index: TextIndex, tokens: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    _ensure_vocab(conn, _VOCAB, "instance")
    # One string of packed places (row << 32 | column code << 28 | offset) a token: SQLite
    # builds it in C, numpy parses it; a row object per place would take three times as long.
    keys: np.ndarray | None = None
    for step, token in enumerate(tokens):
        (packed,) = one_row(conn.execute(
            f"SELECT group_concat((doc << 32) | ({_COLUMN_CODE} << 28) | offset) FROM {_VOCAB} WHERE term = ?",
            (token,)))
        places = np.fromstring(packed, dtype=np.int64, sep=",") if packed else np.zeros(0, dtype=np.int64)
        # A phrase: the first token's places followed by the second's, the third's…
        keys = places if keys is None else _followed_by(keys, step, places)
    assert keys is not None
    # fts5vocab gives a token's places in order (row, column, offset), and a phrase keeps the
    # first token's order: runs of equal (row, column) are found without sorting (np.unique
    # sorts, and np.add.at is slow: together half the time of a first read).
    if len(keys) > 1 and not bool((keys[1:] >= keys[:-1]).all()):
        keys = np.sort(keys)
    cells = keys >> 28  # row << 4 | its column's code
    starts = np.flatnonzero(np.diff(cells, prepend=-1))
    pairs = cells[starts]
    counts = np.diff(starts, append=len(cells))  # (row, column) and its hits
    positions = np.searchsorted(index.ids, pairs >> 4)
    if len(positions) and (positions[-1] >= len(index.ids) or not np.array_equal(index.ids[positions], pairs >> 4)):
        raise _Stale  # a row this index does not know: written since it was built
    new_row = np.diff(positions, prepend=-1) != 0
    rows = positions[new_row]
    hits = np.zeros((len(rows), len(_COLUMNS)), dtype=np.uint16)
    hits[np.cumsum(new_row) - 1, _COLUMN_OF_CODE[pairs & 15]] = np.minimum(counts, MAX_HITS)  # each (row, column) once
    return rows.astype(np.int32), hits


def _followed_by(keys: np.ndarray, step: int, places: np.ndarray) -> np.ndarray:
    """The keys whose place `step` tokens on is one of `places`. A binary search in the places,
    which fts5vocab gives in order (sorted here if not): np.isin sorts both sides on every call,
    and its first call imported numpy.ma (~10 ms) on a visitor's request."""
    if not len(places) or not len(keys):
        return keys[:0]
    if not bool((places[1:] >= places[:-1]).all()):
        places = np.sort(places)
    wanted = keys + step
    at = np.minimum(np.searchsorted(places, wanted), len(places) - 1)
    return keys[places[at] == wanted]


def _ensure_vocab(conn: apsw.Connection, table: str, kind: str) -> None:
    """An fts5vocab table over the tenant's index in this connection's temp schema: `instance`
    lists every place of every term, `row` each term's rows and places."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5vocab(main, chunk_fts, {kind})")


def warm(conn: apsw.Connection, max_rows: int | None = None) -> int:
    """Read the postings of the tenant's most frequent words ahead of the questions that use them,
    most frequent first, until `max_rows` rows are held (default: `WARM_SHARE` of the budget, and
    no more than keeps what every tenant's index holds under `WARM_TOTAL_SHARE` of it).

    Why: a question's first use of a frequent word reads its postings on the request path, ~0.3 µs
    a place: 2–15 ms for a word in 5–50% of 100k rows, the slowest part of a first question. A
    word in half the rows or more is left out (the rankings leave it out when they can), and so
    is one in fewer than `WARM_MIN_SHARE` of them (cheap to read when asked). At 10k chunks every
    such word fits (~0.87M rows, ~9 MB, ~1 s); at 100k the most frequent ones do. Returns the rows
    read; 0 when the tenant's text index is not held."""
    index = index_for(conn)
    if index is None:
        return 0
    if max_rows is None:
        room = min(int(_budget_bytes * WARM_SHARE), int(_budget_bytes * WARM_TOTAL_SHARE) - held_bytes())
        max_rows = room // POSTING_BYTES
    count = len(index.ids)
    _ensure_vocab(conn, _VOCAB_ROWS, "row")
    terms: list[Row] = conn.execute(
        f"SELECT term, total FROM (SELECT term, sum(doc) OVER (ORDER BY doc DESC, term) AS total "
        f"FROM {_VOCAB_ROWS} WHERE doc < ? AND doc >= ?) WHERE total <= ?",
        (count / 2, max(2.0, count * WARM_MIN_SHARE), max_rows)).fetchall()
    read = 0
    for term, total in terms:
        try:
            index.phrase(conn, (str(term),))
        except _Stale:  # written to meanwhile: the next warm-up reads the new generation's
            break
        read = int(total)
    return read


class _Stale(Exception):
    """The tenant's content changed while the index read it."""


def _build(conn: apsw.Connection, generation: str) -> TextIndex | None:
    sql = all_rows(conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'"))
    spec = _TOKENIZE.search(str(sql[0][0])) if sql else None
    if spec is None:
        return None
    name, *args = spec.group(1).split()
    try:
        conn.fts5_tokenizer(name, args)
    except (apsw.Error, ValueError):
        return None
    rows: list[Row] = conn.execute("SELECT id, sz FROM chunk_fts_docsize ORDER BY id").fetchall()
    if not rows:
        return None
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if ids[-1] >= MAX_ROWID:
        return None
    lengths = np.fromiter((_total_size(r[1]) for r in rows), dtype=np.float64, count=len(rows))
    averages = all_rows(conn.execute("SELECT block FROM chunk_fts_data WHERE id = 1"))
    total = sum(_varints(bytes(averages[0][0]))[1:]) if averages else 0
    avgdl = total / len(ids) if total else float(lengths.mean())
    if content_version(conn) != generation:
        return None  # written to while read: the next question builds it
    return TextIndex(generation, ids, lengths, avgdl or 1.0, (name, args))


def _varints(blob: bytes) -> list[int]:
    """FTS5's varints (SQLite's: big-endian, 7 bits a byte, the 9th byte whole)."""
    values: list[int] = []
    value = length = 0
    for byte in blob:
        if length == 8:
            values.append((value << 8) | byte)
            value = length = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        length += 1
        if not byte & 0x80:
            values.append(value)
            value = length = 0
    return values


def _total_size(blob: bytes) -> int:
    if all(byte < 0x80 for byte in blob):
        return sum(blob)
    return sum(_varints(blob))


class _Entry:
    def __init__(self, generation: str, index: TextIndex | None, built_at: float) -> None:
        self.generation = generation
        self.index = index
        self.built_at = built_at


_lock = threading.RLock()
_cache: OrderedDict[str, _Entry] = OrderedDict()


_budget_bytes = 64 * 1024 * 1024  # the FRONTDESK_TEXT_MEMORY_MB default


def configure(memory_mb: float) -> None:
    """The memory this process may hold for tenants' text indexes (FRONTDESK_TEXT_MEMORY_MB); 0
    holds none (FTS5 ranks every query)."""
    global _budget_bytes
    with _lock:
        _budget_bytes = int(memory_mb * 1024 * 1024)
        if _budget_bytes <= 0:
            _cache.clear()
        _make_room()


def held_bytes() -> int:
    """Bytes the text indexes of this process hold now (row lengths and postings)."""
    return sum(_bytes_of(e.index) for e in _cache.values())


def _bytes_of(index: TextIndex | None) -> int:
    return 0 if index is None else len(index.ids) * ROW_BYTES + index.held * POSTING_BYTES


def _make_room() -> None:
    """Drop the least recently used postings, then tenants, until the budget holds (under _lock)."""
    held = held_bytes()
    for entry in _cache.values():
        index = entry.index
        while index is not None and held > _budget_bytes and index.postings:
            _, (dropped, _) = index.postings.popitem(last=False)
            index.held -= len(dropped)
            held -= len(dropped) * POSTING_BYTES
        if held <= _budget_bytes:
            return
    while _cache and held > _budget_bytes:
        _, entry = _cache.popitem(last=False)
        held -= _bytes_of(entry.index)


def holds_current(conn: apsw.Connection, version: str | None = None) -> bool:
    """Whether this process holds the tenant's statistics for its current content (`version`: its
    `content_version`, when the caller read it): `index_for` then builds nothing."""
    entry = _cache.get(conn.filename)
    return (entry is not None and entry.index is not None
            and entry.generation == (content_version(conn) if version is None else version))


def index_for(conn: apsw.Connection) -> TextIndex | None:
    """The tenant's index for its current content, or None when FTS5 should rank (a rebuild not
    due yet after a content change, or a table this module cannot read)."""
    if _budget_bytes <= 0:
        return None
    key = conn.filename
    generation = content_version(conn)
    now = time.monotonic()
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            if entry.generation == generation:
                _cache.move_to_end(key)
                return entry.index
            if now - entry.built_at < REBUILD_INTERVAL_S:
                return None
            del _cache[key]
    index = _build(conn, generation)
    if index is not None and len(index.ids) * ROW_BYTES > _budget_bytes // 2:
        index = None  # its row lengths alone would crowd out every question's postings: FTS5 ranks
    with _lock:
        _cache[key] = _Entry(generation, index, now)
        while len(_cache) > MAX_TENANTS:
            _cache.popitem(last=False)
        _make_room()
    return index


def forget() -> None:
    """Drop every tenant's index (tests)."""
    with _lock:
        _cache.clear()
