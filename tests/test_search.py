"""Hybrid search on real tenant files with the real model: pypug questions, escaping, filters,
bad queries and tenant isolation."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.document import Document, Fact, Section
from ingest.indexer import PageIndexer
from store import text_index
from store.errors import InvalidQuery
from store.search import (
    TEXT_INDEX_SEGMENTS,
    Filters,
    bm25_candidates,
    compact_text_index,
    document_counts,
    fuse,
    is_repeated,
    search,
    term_coverage,
    text_index_segments,
)
from store.words import coverage_from_counts, coverage_threshold, fts_query, fts_terms
from tests.conftest import PYPUG_ORIGIN

# Questions typed the way visitors type them, each with the pypug page(s) that answer it.
PYPUG_QUESTIONS = [
    ("how do I upload my package to test pypi first", "guides/using-testpypi/"),
    ("src layout or flat layout, which is better", "discussions/src-layout-vs-flat-layout/"),
    ("create a virtualenv and pip install packages into it",
     ("guides/installing-using-pip-and-virtual-environments/", "guides/installing-using-virtualenv/",
      "tutorials/installing-packages/")),
    ("publish to pypi automatically from github actions", "guides/publishing-package-distribution-releases-using-github-actions-ci-cd-workflows/"),
    ("what goes in the .pypirc file", "specifications/pypirc/"),
    ("what does the ~= compatible release operator mean", "specifications/version-specifiers/"),
    ("should I use install_requires or requirements.txt", "discussions/install-requires-vs-requirements/"),
    ("is running python setup.py install deprecated", "discussions/setup-py-deprecated/"),
    ("how to make a namespace package split across distributions", "guides/packaging-namespace-packages/"),
    ("declare dependencies inside a single-file script", "specifications/inline-script-metadata/"),
    ("how do I write my pyproject.toml", "guides/writing-pyproject-toml/"),
    ("which packaging tools are recommended", "guides/tool-recommendations/"),
    ("discover plugins installed by other packages", "guides/creating-and-discovering-plugins/"),
    ("stop supporting old python versions in my package", "guides/dropping-older-python-versions/"),
    ("install a command line app in isolation with pipx", "guides/installing-stand-alone-command-line-tools/"),
    ("build a C extension module for my package", "guides/packaging-binary-extensions/"),
    ("download statistics for my project with bigquery", "guides/analyzing-pypi-package-downloads/"),
    ("how are project names normalized", "specifications/name-normalization/"),
    ("what is inside a wheel file", "specifications/binary-distribution-format/"),
    ("host my own private package index", "guides/hosting-your-own-index/"),
    ("make my README render nicely on pypi", "guides/making-a-pypi-friendly-readme/"),
    ("what license expression syntax goes in metadata", "specifications/license-expression/"),
    ("what does yanking a release mean", "specifications/file-yanking/"),
    ("dependency groups for dev and test dependencies", "specifications/dependency-groups/"),
    ("pip says externally managed environment error", "specifications/externally-managed-environments/"),
    ("lock file format for reproducible installs", "specifications/pylock-toml/"),
    ("tutorial for packaging my first project", "tutorials/packaging-projects/"),
    ("include extra data files in my sdist with MANIFEST.in", "guides/using-manifest-in/"),
    ("what is the difference between a distribution package and an import package", "discussions/distribution-package-vs-import-package/"),
    ("keep the version number in one place",
     ("discussions/single-source-version/", "guides/single-sourcing-package-version/", "discussions/versioning/")),
]


def rank_of(hits, expected: str | tuple[str, ...]) -> int | None:
    wanted = {f"{PYPUG_ORIGIN}/{e}" for e in ((expected,) if isinstance(expected, str) else expected)}
    for i, hit in enumerate(hits, start=1):
        if hit.url in wanted:
            return i
    return None


@pytest.mark.slow
def test_known_questions_find_their_page_in_the_top_5(pypug_ctx):
    tenant = pypug_ctx.tenant("pypug")
    misses = []
    for question, expected in PYPUG_QUESTIONS:
        hits = pypug_ctx.search(tenant, question, k=5).hits
        if rank_of(hits, expected) is None:
            misses.append((question, expected, [h.url for h in hits]))
    # All but at most two of 30 questions; report the misses to make a regression readable.
    assert len(misses) <= 2, misses


@pytest.mark.slow
def test_hybrid_beats_bm25_only_and_dense_only(pypug_ctx):
    tenant = pypug_ctx.tenant("pypug")

    def mrr(mode: str) -> float:
        total = 0.0
        for question, expected in PYPUG_QUESTIONS:
            rank = rank_of(pypug_ctx.search(tenant, question, k=10, mode=mode).hits, expected)
            total += 1.0 / rank if rank else 0.0
        return total / len(PYPUG_QUESTIONS)

    scores = {mode: mrr(mode) for mode in ("hybrid", "bm25", "dense")}
    assert scores["hybrid"] > scores["bm25"], scores
    assert scores["hybrid"] > scores["dense"], scores


@pytest.mark.slow
def test_trace_shows_each_stage(pypug_ctx):
    tenant = pypug_ctx.tenant("pypug")
    result = pypug_ctx.search(tenant, "upload to test pypi", k=5, trace=True)
    trace = result.trace
    assert trace is not None and trace.mode == "hybrid"
    assert trace.fts_query == '"upload" OR "test" OR "pypi"'
    assert trace.dense and trace.bm25 and trace.fused
    assert {"dense", "bm25", "fuse"} <= set(trace.timings_ms)
    top = result.hits[0]
    assert top.dense_rank is not None or top.bm25_rank is not None


@pytest.mark.slow
def test_url_prefix_and_kind_filters(pypug_ctx):
    tenant = pypug_ctx.tenant("pypug")
    prefix = f"{PYPUG_ORIGIN}/specifications/"
    for mode in ("hybrid", "bm25", "dense"):
        hits = pypug_ctx.search(tenant, "how to install packages", k=10, mode=mode, filters=Filters(url_prefix=prefix)).hits
        assert hits and all(h.url.startswith(prefix) for h in hits), mode
        none = pypug_ctx.search(tenant, "how to install packages", mode=mode, filters=Filters(kinds=["faq"])).hits
        assert none == [], mode


@pytest.fixture
def small_tenants(ctx):
    """Two tenants with different content, indexed through the real pipeline pieces."""
    made = {}
    for tenant_id, topic in (("bakery", "sourdough bread and croissants"), ("garage", "brake pads and oil changes")):
        tenant, _ = ctx.create_tenant(tenant_id, f"https://{tenant_id}.test/")
        indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
        for n in range(4):
            doc = Document(
                url=f"https://{tenant_id}.test/p{n}", canonical_url=f"https://{tenant_id}.test/p{n}",
                title=f"{tenant_id} page {n}", lang="en",
                sections=[Section(heading_path=(f"{tenant_id} page {n}",),
                                  text=f"We sell {topic}. Page {n} explains our {topic} in detail, with prices.")],
                facts=[Fact(type="FAQPage", kind="faq", text=f"Q: Do you open on Sunday? A: The {tenant_id} opens at {n + 8} am.")],
            )
            indexer.index(doc)
        made[tenant_id] = tenant
    return ctx, made


def cake_shop(ctx):
    """24 one-chunk pages: "cake" in every one, six flavours, "tin" in every third."""
    tenant, _ = ctx.create_tenant("shop", "https://shop.test/")
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    flavours = ["lemon", "cherry", "walnut", "ginger", "hazelnut", "apricot"]
    for n in range(24):
        indexer.index(Document(
            url=f"https://shop.test/cake{n}", canonical_url=f"https://shop.test/cake{n}", title=f"Cake {n}",
            lang="en", sections=[Section(heading_path=(f"Cake {n}",), text=(
                f"Our {flavours[n % 6]} cake number {n} is baked daily. " + "Cake " * (n % 4)
                + ("It travels well in a tin." if n % 3 == 0 else "Slices keep for two days."))[:400])]))
    return tenant


@pytest.fixture
def fts5_ranks():
    """No text index held: FTS5 ranks (the in-memory ranking is tests/test_text_index.py's)."""
    text_index.configure(0)
    yield
    text_index.configure(64)


def test_a_term_in_half_the_chunks_is_left_out_of_the_lexical_query_without_changing_its_candidates(ctx, fts5_ranks):
    """FTS5 weighs a term in at least half the chunks 1e-6: the lexical side leaves it out when the
    other terms fill the candidates, with the same candidates and scores within 1e-5."""
    tenant = cake_shop(ctx)

    def full(text: str, limit: int) -> list[tuple[int, float]]:
        return tenant.reader().execute(
            "SELECT rowid, bm25(chunk_fts, 3.0, 2.0, 1.0) AS s FROM chunk_fts WHERE chunk_fts MATCH ? "
            "ORDER BY s LIMIT ?", (fts_query(text), limit)).fetchall()

    with tenant.reading() as conn:
        query, rows = bm25_candidates(conn, "lemon or walnut cake in a tin", 6, None)
        assert query == '"lemon" OR "walnut" OR "tin"'  # "cake" is in every chunk
        expected = full("lemon or walnut cake in a tin", 6)
        assert {r for r, _ in rows} == {r for r, _ in expected}
        assert max(abs(a - b) for (_, a), (_, b) in zip(sorted(rows), sorted(expected), strict=True)) < 1e-5
        # Too few chunks without the common term to fill the candidates: the whole query runs.
        query, rows = bm25_candidates(conn, "ginger cake", 10, None)
        assert query == '"ginger" OR "cake"' and len(rows) == 10
        # A query of common terms only is run as it is.
        assert bm25_candidates(conn, "cake", 5, None)[0] == '"cake"'


def test_compacting_the_text_index_merges_its_segments_and_changes_no_result(ctx, fts5_ranks):
    """Each page written in its own transaction adds a segment to the FTS5 index; compacting
    merges them into one, and every lexical candidate, score and count stays the same."""
    tenant, _ = ctx.create_tenant("deli", "https://deli.test/")
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    foods = ["pastrami", "rye", "pickles", "mustard", "bagel", "lox", "knish", "borscht"]
    for n in range(12):  # FTS5 merges a level's segments itself once 16 pile up
        indexer.index(Document(
            url=f"https://deli.test/p{n}", canonical_url=f"https://deli.test/p{n}", title=f"Menu {n}",
            lang="en", sections=[Section(heading_path=(f"Menu {n}",), text=(
                f"Our {foods[n % 8]} plate {n} comes with {foods[(n * 3) % 8]} on the side. "
                + ("Open late on Fridays." if n % 2 else "Closed on Mondays."))[:400])]))
    queries = ["pastrami on rye", "mustard pickles", "open late friday", "bagel with lox", "closed mondays"]

    def read() -> tuple[list, dict]:
        with tenant.reading() as conn:
            return ([bm25_candidates(conn, q, 8, None) for q in queries],
                    document_counts(conn, foods + ["friday", "monday"]))

    before = read()
    with tenant.reading() as conn:
        assert text_index_segments(conn) > TEXT_INDEX_SEGMENTS
    with tenant.write() as conn:
        assert compact_text_index(conn)
    with tenant.reading() as conn:
        assert text_index_segments(conn) == 1
    assert read() == before
    with tenant.write() as conn:
        assert not compact_text_index(conn)  # nothing to merge


def test_tenants_never_see_each_others_chunks(small_tenants):
    ctx, tenants = small_tenants
    for tenant_id, tenant in tenants.items():
        for query in ("sourdough bread", "brake pads", "opening hours on sunday", "prices", "*", "page"):
            for mode in ("hybrid", "bm25", "dense"):
                for hit in ctx.search(tenant, query, k=20, mode=mode).hits:
                    assert hit.url.startswith(f"https://{tenant_id}.test/"), (tenant_id, query, hit.url)
                    assert tenant_id in hit.text or "opens" not in hit.text


def test_faq_kind_filter_and_language_filter(small_tenants):
    ctx, tenants = small_tenants
    hits = ctx.search(tenants["bakery"], "sunday opening", filters=Filters(kinds=["faq"])).hits
    assert hits and {h.kind for h in hits} == {"faq"}
    assert ctx.search(tenants["bakery"], "bread", filters=Filters(lang="de")).hits == []


HOSTILE_QUERIES = [
    "", "   ", "?!?!...;;;", '"', '""""', "'", "*", "**", "NEAR(", "NEAR(a b", "a NEAR b", "AND OR NOT",
    "title:bread", "bread*", "^bread", "(bread", "bread)", "{bread}", "-bread", "+bread", "bread -croissant",
    "x" * 10_000, "bread " * 2_000, "\x00\x01\x02", "🍞🥐", "¿Dónde está la panadería?", "Wo ist die Bäckerei?",
    "パンはありますか", "خبز", "SELECT * FROM chunks; --", "'; DROP TABLE chunks; --",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_give_results_or_nothing_never_an_error(small_tenants, query):
    ctx, tenants = small_tenants
    for mode in ("hybrid", "bm25", "dense"):
        result = ctx.search(tenants["bakery"], query, k=5, mode=mode)
        assert isinstance(result.hits, list)
        assert all(h.url.startswith("https://bakery.test/") for h in result.hits)
    coverage = term_coverage(tenants["bakery"].reader(), query, 3, also_known=query)
    assert 0.0 <= coverage.share <= 1.0 and set(coverage.unknown) <= set(coverage.terms)


def test_bad_search_arguments_are_invalid_query(small_tenants):
    ctx, tenants = small_tenants
    conn = tenants["bakery"].reader()
    with pytest.raises(InvalidQuery):
        search(conn, "bread", None, mode="hybrid")
    with pytest.raises(InvalidQuery):
        search(conn, "bread", None, mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidQuery):
        search(conn, "bread", None, mode="bm25", k=0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_fts_escaping_never_produces_syntax(small_tenants, text):
    ctx, tenants = small_tenants
    query = fts_query(text)
    if query:
        for term in query.split(" OR "):
            assert term.startswith('"') and term.endswith('"')
    result = search(tenants["bakery"].reader(), text, None, mode="bm25", k=5)
    assert isinstance(result.hits, list)
    coverage = term_coverage(tenants["bakery"].reader(), text, 2)
    assert 0.0 <= coverage.share <= 1.0 and set(coverage.unknown) <= set(coverage.terms)


def test_fts_terms_drop_stopwords_but_keep_something():
    assert fts_terms("how do I bake bread?") == ["bake", "bread"]
    assert fts_terms("who are you") == ["who", "are", "you"]
    assert fts_query("") == "" and fts_query("?!") == ""


def test_rrf_fusion_weights_and_ranks():
    from store.search import FusionParams

    params = FusionParams(rrf_k=10, bm25_weight=0.5, dense_weight=0.5)
    scores = fuse([(1, 0.1), (2, 0.2)], [(2, -5.0), (3, -4.0)], params, "hybrid")
    assert scores[2] == pytest.approx(0.5 / 12 + 0.5 / 11)
    assert max(scores, key=scores.get) == 2
    assert set(fuse([(1, 0.1)], [(3, -1.0)], params, "dense")) == {1}


def test_term_coverage_counts_the_words_the_site_uses(small_tenants):
    _, tenants = small_tenants
    conn = tenants["bakery"].reader()
    # Stemmed like the index: 'croissant' and 'loaves'-style inflections find the stored words.
    known = term_coverage(conn, "Do you sell croissant bread?")
    assert known.terms == ["sell", "croissant", "bread"] and known.unknown == [] and known.share == 1.0
    off_topic = term_coverage(conn, "how do I replace the brake pads")
    assert off_topic.unknown == ["replace", "brake", "pads"] and off_topic.share == 0.0
    half = term_coverage(conn, "sourdough recipe")
    assert half.unknown == ["recipe"] and half.share == 0.5
    # A word must occur in enough chunks: each bakery page has 'sourdough' (4 pages), 'opens' is
    # in each FAQ answer, 'sunday' too — but nothing occurs in 10 chunks.
    assert term_coverage(conn, "sourdough", min_chunks=4).share == 1.0
    assert term_coverage(conn, "sourdough", min_chunks=10).unknown == ["sourdough"]
    # Words of the visitor's page count as known; nothing to check is full coverage.
    assert term_coverage(conn, "brake pads", also_known="Our brake pads page").share == 1.0
    assert term_coverage(conn, "what is it").share == 1.0
    assert term_coverage(conn, "").share == 1.0 and term_coverage(conn, '"*"()').terms == []


def test_what_a_contraction_leaves_is_no_word_but_a_negation_is():
    """"How old is the building you're in?": "re" had counted as a word the site never uses."""
    from store.words import content_terms

    assert content_terms("how old is the building you're in? we've heard it's ancient") == [
        "old", "building", "heard", "ancient"]
    assert "doesn" in content_terms("so that it doesn't pop up a terminal")


def test_words_not_counted_leave_the_coverage_share():
    counts = {"quiero": 0, "cuánto": 0, "tarda": 0, "llegar": 4, "paquete": 6}
    counted = coverage_from_counts("quiero saber cuánto tarda en llegar el paquete", counts, 1)
    assert counted.unknown == ["quiero", "saber", "cuánto", "tarda"] and counted.share == pytest.approx(1 / 3)
    spared = coverage_from_counts("quiero saber cuánto tarda en llegar el paquete", counts, 1,
                                  not_counted=frozenset({"quiero", "cuánto"}))
    assert spared.terms == ["saber", "tarda", "llegar", "paquete"] and spared.share == 0.5


def test_coverage_threshold_grows_with_the_site_and_is_capped():
    assert [coverage_threshold(n) for n in (0, 100, 2500, 2501, 7000, 100_000)] == [1, 1, 1, 2, 3, 3]


def test_cli_search_prints_hits_trace_and_the_words_the_site_does_not_use(pypug_ctx, capsys):
    import json

    from app.__main__ import main

    args = ["search", "pypug", "how do I set up a postgres replica", "--k", "3", "--trace",
            "--data-dir", str(pypug_ctx.data_dir)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.count(" sim=") == 3 and 'trace: FTS "set" OR "postgres" OR "replica"' in text
    assert "words the site does not use: postgres, replica (coverage 0.33)" in text
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["hits"]) == 3 and out["coverage"]["unknown"] == ["postgres", "replica"]


def test_is_repeated_finds_text_the_site_repeats_on_many_pages(small_tenants):
    _, tenants = small_tenants
    conn = tenants["bakery"].reader()
    faq = "Q: Do you open on Sunday? A: The bakery opens at"  # the start of each page's FAQ fact
    assert is_repeated(conn, faq, 4) and not is_repeated(conn, faq, 5)
    assert not is_repeated(conn, "We sell sourdough bread and croissants. Page 2 explains our sourdough", 2)
    assert not is_repeated(conn, "sourdough bread", 1)  # too short to call boilerplate
    assert not is_repeated(conn, '"" NEAR( * ^', 1)


def test_the_search_time_limit_counts_cpu_not_waiting():
    """store/connect.py `time_limit`: a statement that burns its CPU budget is cut off; time spent
    waiting for a core or the GIL (a burst of visitors) does not count against it."""
    import time as clock

    import apsw

    from store.connect import time_limit

    conn = apsw.Connection(":memory:")
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    started = clock.monotonic()
    with pytest.raises(apsw.InterruptError), time_limit(conn, 0.2):
        conn.execute(endless).fetchall()
    assert clock.monotonic() - started < 5
    with time_limit(conn, 0.2):
        clock.sleep(0.4)  # waiting, as a starved thread does
        assert conn.execute(endless.replace("FROM c)", "FROM c LIMIT 1000)")).fetchone() == (1000,)
