"""The lexical side in memory (store/text_index.py): the same candidates and scores as FTS5's
`bm25()` on a real indexed site, never a stale answer after a page is written, and a bounded
memory budget."""

from __future__ import annotations

import numpy as np
import pytest

from app.answer import Answerer
from app.cache import AnswerCache
from app.metrics import Metrics
from app.warm import Warmer
from ingest.document import Document, Section
from ingest.indexer import PageIndexer
from store import text_index
from store.search import DEFAULT_FUSION, FusionParams, bm25_candidates
from store.words import fts_terms
from tests.test_search import PYPUG_QUESTIONS, cake_shop

DEFAULT_WEIGHTS = (DEFAULT_FUSION.title_weight, DEFAULT_FUSION.heading_weight, 1.0)


def fts5_ranking(conn, words: list[str], weights: tuple[float, float, float], limit: int) -> list[tuple[int, float]]:
    """FTS5 ranking every row the OR query matches, as the SQL path does without pruning."""
    query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    return [(int(r), float(s)) for r, s in conn.execute(
        "SELECT rowid, bm25(chunk_fts, ?, ?, ?) AS score FROM chunk_fts WHERE chunk_fts MATCH ? "
        "ORDER BY score, rowid LIMIT ?", [*weights, query, limit])]


def same_ranking(expected: list[tuple[int, float]], got: list[tuple[int, float]]) -> bool:
    """The same rows with the same scores (to rounding); rows tied at the cut may differ."""
    if len(expected) != len(got):
        return False
    want, have = dict(expected), dict(got)
    cut = expected[-1][1] if expected else 0.0
    for row in want.keys() ^ have.keys():
        if abs(want.get(row, have.get(row, 0.0)) - cut) > 1e-9:
            return False
    return all(abs(want[row] - have[row]) <= 1e-9 * max(1.0, abs(want[row])) for row in want.keys() & have.keys())


@pytest.mark.parametrize("weights", [(3.0, 2.0, 1.0), (1.0, 1.0, 1.0), (8.0, 0.5, 1.0)])
def test_in_memory_bm25_ranks_as_fts5_does(pypug_ctx, weights):
    """Every pypug question, a few with words FTS5 reads as phrases of two tokens
    ("install_requires", "setup.py"), ranked in memory and by FTS5: the same rows, the same scores."""
    conn = pypug_ctx.tenant("pypug").reader()
    index = text_index.index_for(conn)
    assert index is not None
    questions = [q for q, _ in PYPUG_QUESTIONS] + [
        "install_requires vs requirements.txt", "python setup.py sdist", "pip install -e .", "café crème"]
    for question in questions:
        words = fts_terms(question)
        for limit in (5, 60):
            expected = fts5_ranking(conn, words, weights, limit)
            found = index.top(conn, words, weights, limit)
            assert found is not None and found[0] == words
            assert same_ranking(expected, found[1]), (question, limit, expected[:3], found[1][:3])
    # and bm25_candidates serves exactly that
    params = FusionParams(title_weight=weights[0], heading_weight=weights[1])
    _, rows = bm25_candidates(conn, "how do I write my pyproject.toml", 60, None, params)
    assert same_ranking(fts5_ranking(conn, fts_terms("how do I write my pyproject.toml"), weights, 60), rows)


def _page(n: int, text: str) -> Document:
    return Document(url=f"https://deli.test/p{n}", canonical_url=f"https://deli.test/p{n}", title=f"Menu {n}",
                    lang="en", sections=[Section(heading_path=(f"Menu {n}",), text=text)])


@pytest.fixture
def deli(ctx):
    tenant, _ = ctx.create_tenant("deli", "https://deli.test/")
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    for n, food in enumerate(["pastrami on rye with mustard", "bagel with lox and capers", "knish and borscht"]):
        indexer.index(_page(n, f"Our {food} is served all day. Open late on Fridays."))
    yield tenant, indexer
    text_index.forget()


def test_a_page_written_after_the_index_was_built_is_found_at_once(deli, monkeypatch):
    """While a rebuild is not due, a question after a write is ranked by FTS5 (which sees the new
    page); once due, the index is rebuilt for the new content."""
    tenant, indexer = deli
    conn = tenant.reader()
    assert [r for r, _ in bm25_candidates(conn, "pastrami", 5, None)[1]]
    built = text_index.index_for(conn)
    assert built is not None
    indexer.index(_page(9, "Our zucchini fritters come with a lemon dip."))
    assert text_index.index_for(conn) is None  # stale, rebuilt a moment ago
    found = bm25_candidates(conn, "zucchini fritters", 5, None)[1]
    assert len(found) == 1
    monkeypatch.setattr(text_index, "REBUILD_INTERVAL_S", 0.0)
    rebuilt = text_index.index_for(conn)
    assert rebuilt is not None and rebuilt is not built
    assert same_ranking(found, bm25_candidates(conn, "zucchini fritters", 5, None)[1])


def test_postings_read_after_a_write_are_not_kept_for_the_older_content(deli):
    """The index's row lengths are one generation's; a phrase's postings read after a write are
    another's: the question goes to FTS5 and nothing is cached."""
    tenant, indexer = deli
    conn = tenant.reader()
    index = text_index.index_for(conn)
    assert index is not None
    indexer.index(_page(9, "Our zucchini fritters come with a lemon dip."))
    assert index.top(conn, ["zucchini"], (3.0, 2.0, 1.0), 5) is None
    assert not any("zucchini" in tokens[0] for tokens in index.postings)


def test_the_memory_budget_bounds_what_is_held(deli):
    tenant, _ = deli
    conn = tenant.reader()
    words = ["pastrami", "bagel", "lox", "knish", "borscht", "mustard", "open", "late", "fridays", "served"]
    try:
        text_index.configure(1)
        for word in words:
            bm25_candidates(conn, word, 5, None)
        assert text_index.held_bytes() <= 1024 * 1024
        index = text_index.index_for(conn)
        assert index is not None and len(index.postings) == len(words)
        # the row lengths and a few postings, twice
        room = 2 * (len(index.ids) * text_index.ROW_BYTES + 5 * text_index.POSTING_BYTES)
        text_index.configure(room / 1024 / 1024)
        assert text_index.held_bytes() <= room
        assert 0 < len(index.postings) < len(words)  # the least recently used went first
        text_index.configure(0)
        assert text_index.index_for(conn) is None
        assert [r for r, _ in bm25_candidates(conn, "bagel lox", 5, None)[1]]  # FTS5 ranks
    finally:
        text_index.configure(64)


def test_a_word_in_half_the_rows_is_left_out_only_when_the_others_fill_the_candidates(ctx):
    """As on FTS5's path: "cake" (every row) is not read when "lemon", "walnut" and "tin" match
    enough rows, and is when they do not; the candidates are FTS5's full ranking's either way."""
    conn = cake_shop(ctx).reader()
    try:
        query, rows = bm25_candidates(conn, "lemon or walnut cake in a tin", 6, None)
        assert query == '"lemon" OR "walnut" OR "tin"'
        index = text_index.index_for(conn)
        assert index is not None and ("cake",) not in index.postings
        expected = fts5_ranking(conn, ["lemon", "walnut", "cake", "tin"], DEFAULT_WEIGHTS, 6)
        assert {r for r, _ in rows} == {r for r, _ in expected}
        assert max(abs(a - b) for (_, a), (_, b) in zip(sorted(rows), sorted(expected), strict=True)) < 1e-5
        query, rows = bm25_candidates(conn, "ginger cake", 10, None)  # 4 ginger rows: "cake" ranks too
        assert query == '"ginger" OR "cake"'
        assert same_ranking(fts5_ranking(conn, ["ginger", "cake"], DEFAULT_WEIGHTS, 10), rows)
    finally:
        text_index.forget()


def test_warming_reads_the_frequent_words_postings_ahead_and_ranks_the_same(pypug_ctx):
    """`warm` holds the postings of the words in 1–50% of the rows, most frequent first, within the
    rows it is given; a question then finds them held, and ranks as FTS5 does."""
    conn = pypug_ctx.tenant("pypug").reader()
    text_index.forget()
    index = text_index.index_for(conn)
    assert index is not None
    count = len(index.ids)
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_terms USING fts5vocab(main, chunk_fts, row)")
    docs = {str(term): int(doc) for term, doc in conn.execute("SELECT term, doc FROM temp.test_terms")}
    eligible = sorted((t for t, d in docs.items() if count * text_index.WARM_MIN_SHARE <= d < count / 2),
                      key=lambda t: (-docs[t], t))
    assert len(eligible) > 20
    # A budget for the ten most frequent: exactly those are read, nothing below 1% or above half.
    budget = sum(docs[t] for t in eligible[:10])
    assert text_index.warm(conn, budget) == budget
    assert set(index.postings) == {(t,) for t in eligible[:10]}
    assert index.held == budget
    # Unbounded but for the default share: every eligible word, none of the others.
    text_index.forget()
    read = text_index.warm(conn)
    index = text_index.index_for(conn)
    assert index is not None and read == sum(docs[t] for t in eligible) == index.held
    assert set(index.postings) == {(t,) for t in eligible}
    held = dict(index.postings)
    question = "how do I " + " ".join(eligible[:3])
    words = fts_terms(question)
    found = index.top(conn, words, DEFAULT_WEIGHTS, 20)
    assert found is not None and same_ranking(fts5_ranking(conn, words, DEFAULT_WEIGHTS, 20), found[1])
    assert all(index.postings[(t,)] is held[(t,)] for t in eligible[:3])  # read ahead, not again
    # Once what the indexes hold is half the budget, a warm-up adds nothing (many tenants: the
    # first few are warmed).
    try:
        text_index.configure(count * 2 * text_index.ROW_BYTES / 1024 / 1024)  # the row lengths are half
        text_index.forget()
        assert text_index.warm(conn) == 0
        index = text_index.index_for(conn)
        assert index is not None and not index.postings
    finally:
        text_index.configure(64)
        text_index.forget()


def test_warming_a_tenant_reads_its_frequent_words_ahead(pypug_ctx):
    """The wiring: `serve`'s warm-up of a tenant (app/warm.py) leaves its most frequent eligible
    words' postings held, as `warm` reads them."""
    conn = pypug_ctx.tenant("pypug").reader()
    text_index.forget()
    warmer = Warmer(pypug_ctx, Answerer(pypug_ctx, None, AnswerCache(8), Metrics()))
    try:
        warmer.warm_tenant("pypug")
    finally:
        warmer.close()
    index = text_index.index_for(conn)
    assert index is not None
    count = len(index.ids)
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_terms USING fts5vocab(main, chunk_fts, row)")
    eligible = {(str(term),) for term, doc in conn.execute("SELECT term, doc FROM temp.test_terms")
                if count * text_index.WARM_MIN_SHARE <= doc < count / 2}
    assert eligible and eligible <= set(index.postings)
    text_index.forget()



def test_a_phrase_keeps_the_places_followed_by_the_next_token_in_order_or_not():
    """The phrase step's membership test (a binary search, not np.isin): keys whose place `step`
    tokens on is among the next token's places, whether fts5vocab gave those in order or not."""
    keys = np.array([1, 5, 9, 20], dtype=np.int64)
    for places in ([2, 7, 10, 40], [40, 10, 2, 7]):
        assert text_index._followed_by(keys, 1, np.array(places, dtype=np.int64)).tolist() == [1, 9]
    assert text_index._followed_by(keys, 2, np.array([7, 22], dtype=np.int64)).tolist() == [5, 20]
    assert text_index._followed_by(keys, 1, np.zeros(0, dtype=np.int64)).tolist() == []
