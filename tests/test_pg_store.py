"""Curated answers and conversations on both backends (store/curated.py and store/conversations.py
against their PostgreSQL twins in store/pg/), on a real PostgreSQL 18 (tests/pg.py) and a real
tenant file: each behaviour through one parametrised fixture, and the same calls on both giving
equal results. Small hand-made vectors of the tenants' dimension stand in for the model's: these
modules only store vectors and take dot products of them.

Each side reads the time from its own clock, one second further at each call, from the same
start: the same calls then give the same times on both, so results compare whole, times and
orderings by time included."""

from __future__ import annotations

import json
import time

import msgspec
import numpy as np
import pytest

from store import conversations as sqlite_conversations
from store import curated as sqlite_curated
from store.conversations import CitationRow, Turn
from store.curated import Curated
from store.errors import InvalidInput, NotFound
from store.pg import conversations as pg_conversations
from store.pg import curated as pg_curated
from tests import pgsides
from tests.pgsides import DIM, START, side_fixtures

pytestmark = pytest.mark.slow


class SqliteSide(pgsides.SqliteSide):
    curated = sqlite_curated
    conversations = sqlite_conversations
    clocked = (sqlite_curated, sqlite_conversations)


class PgSide(pgsides.PgSide):
    curated = pg_curated
    conversations = pg_conversations
    clocked = (pg_curated, pg_conversations)


Side = SqliteSide | PgSide
side, sides = side_fixtures(SqliteSide, PgSide)


def unit(*weights: float, dim: int = DIM) -> np.ndarray:
    """A unit float32 vector with these first components (the rest 0)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


def no_nul(value):
    """`value` with U+0000 taken out of every string in it: what PostgreSQL holds of it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list | tuple):
        return type(value)(no_nul(v) for v in value)
    if isinstance(value, dict):
        return {no_nul(k): no_nul(v) for k, v in value.items()}
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **{f: no_nul(getattr(value, f)) for f in value.__struct_fields__})
    return value


# -- curated answers ---------------------------------------------------------------------------


def add(side: Side, conn, question: str, vector: np.ndarray | None = None, **kw) -> int:
    values = {"normalized": question.lower().strip("?"), "answer": f"answer to {question}", "urls": [],
              "lang": "en", **kw}
    return side.curated.add(conn, question=question, vector=vector, **values)


def test_curated_answers_are_added_read_updated_and_deleted(side):
    with side.write() as conn:
        first = side.curated.add(conn, question="Opening hours?", normalized="opening hours", answer="9 to 5",
                                 urls=["https://acme.test/hours"], lang="en", vector=unit(1))
        second = add(side, conn, "Parking?")
    assert (first, second) == (1, 2)
    with side.read() as conn:
        assert side.curated.get(conn, first) == Curated(
            id=1, question="Opening hours?", answer="9 to 5", urls=["https://acme.test/hours"], lang="en",
            created_at=START + 1, updated_at=START + 1)
        assert [c.question for c in side.curated.all_curated(conn)] == ["Opening hours?", "Parking?"]
    with side.write() as conn:
        side.curated.update(conn, first, question="When are you open?", normalized="when are you open",
                            answer="9 to 6", urls=[], lang="de", vector=None)
    with side.write() as conn:
        side.curated.delete(conn, second)
    with side.read() as conn:
        assert side.curated.all_curated(conn) == [Curated(
            id=1, question="When are you open?", answer="9 to 6", urls=[], lang="de", created_at=START + 1,
            updated_at=START + 3)]
        assert list(side.curated.curated_vectors(conn)) == []  # the update took the vector away
        with pytest.raises(NotFound):
            side.curated.get(conn, second)
    for missing in (second, 99):
        with pytest.raises(NotFound), side.write() as conn:
            side.curated.update(conn, missing, question="q", normalized="q", answer="a", urls=[], lang="",
                                vector=None)
        with pytest.raises(NotFound), side.write() as conn:
            side.curated.delete(conn, missing)


def test_curated_ids_follow_the_largest_kept_one(side):
    with side.write() as conn:
        ids = [add(side, conn, q) for q in ("a", "b", "c")]
        side.curated.delete(conn, ids[1])
        assert add(side, conn, "d") == 4


def test_a_deleted_newest_curated_id_is_given_again_by_sqlite_only(side):
    # SQLite's INTEGER PRIMARY KEY (no AUTOINCREMENT) numbers a row max(id) + 1; PostgreSQL's
    # identity never gives an id twice, as for every other table of store/pg. Kept: a gap resolved
    # by a deleted answer (gaps.curated_id) then names no answer rather than a new one.
    with side.write() as conn:
        add(side, conn, "a")
        newest = add(side, conn, "b")
        side.curated.delete(conn, newest)
        assert add(side, conn, "c") == (2 if side.name == "sqlite" else 3)


@pytest.mark.parametrize(("question", "answer", "field"), [
    ("", "an answer", "question"), ("   ", "an answer", "question"), ("a question", "", "answer"),
    ("a question", " \n", "answer"), ("q" * 2001, "an answer", None), ("a question", "a" * 10001, None),
])
def test_curated_texts_are_checked_before_anything_is_written(side, question, answer, field):
    with side.write() as conn:
        kept = add(side, conn, "Kept?")
    with pytest.raises(InvalidInput) as raised, side.write() as conn:
        side.curated.add(conn, question=question, normalized="x", answer=answer, urls=[], lang="", vector=None)
    assert raised.value.details.get("field") == field
    with pytest.raises(InvalidInput), side.write() as conn:
        side.curated.update(conn, kept, question=question, normalized="x", answer=answer, urls=[], lang="",
                            vector=None)
    with pytest.raises(InvalidInput), side.write() as conn:  # checked before the id is looked for
        side.curated.update(conn, 99, question=question, normalized="x", answer=answer, urls=[], lang="",
                            vector=None)
    with side.read() as conn:
        assert [(c.id, c.question) for c in side.curated.all_curated(conn)] == [(kept, "Kept?")]


def test_curated_match_is_exact_first_then_the_most_similar_vector(side):
    hours, parking = unit(1), unit(0, 1)
    with side.write() as conn:
        add(side, conn, "Opening hours?", hours)
        add(side, conn, "Parking?", parking)
        add(side, conn, "Refunds?")                                   # no vector
        add(side, conn, "Other model?", unit(1, dim=4))               # a vector of another dimension
        add(side, conn, "Delivery?", unit(0, 0, 1))
        add(side, conn, "Shipping?", unit(0, 0, 1))                   # as similar as "Delivery?"
        add(side, conn, "Parking again?", None, normalized="parking")  # a second exact text
    asked = unit(1, 0.3)
    similarity = float(np.frombuffer(hours.tobytes(), dtype=np.float32) @ asked)
    with side.read() as conn:
        match = side.curated.match
        exact = match(conn, "parking", unit(1), 0.8)
        assert exact is not None and (exact.curated.question, exact.similarity, exact.exact) == ("Parking?", 1.0, True)
        assert match(conn, "refunds", None, 0.99).curated.id == 3  # exact needs no vector
        near = match(conn, "when do you open", asked, 0.8)
        assert near is not None and (near.curated.question, near.exact) == ("Opening hours?", False)
        assert near.similarity == similarity
        assert match(conn, "when do you open", asked, similarity).curated.id == 1  # at the threshold
        assert match(conn, "when do you open", asked, float(np.nextafter(similarity, 2))) is None
        assert match(conn, "when do you open", None, 0.0) is None
        assert match(conn, "do you deliver", unit(0, 0, 1), 0.8).curated.question == "Shipping?"  # the last of equals
        other = match(conn, "x", unit(1, dim=4), 0.99)
        assert other is not None and (other.curated.question, other.similarity) == ("Other model?", 1.0)
        assert match(conn, "x", unit(0, 0, 0, 0, 0, 0, 0, 1), 0.1) is None


def test_curated_vectors_are_the_answers_that_have_one_in_id_order(side):
    vectors = {1: unit(1, 2), 3: unit(0, 0, 5)}
    with side.write() as conn:
        add(side, conn, "one", vectors[1])
        add(side, conn, "two")
        add(side, conn, "three", vectors[3])
    with side.read() as conn:
        found = list(side.curated.curated_vectors(conn))
    assert [(item.id, item.question) for item, _ in found] == [(1, "one"), (3, "three")]
    for item, vector in found:
        assert vector.dtype == np.float32 and vector.tobytes() == vectors[item.id].tobytes()


def test_curated_matches_are_equal_on_both_backends(sides):
    rng = np.random.default_rng(7)
    stored = [unit(*rng.normal(size=DIM)) for _ in range(40)]
    queries = [unit(*(stored[i] + rng.normal(scale=0.4, size=DIM))) for i in range(0, 40, 2)]
    found = []
    for one in sides:
        with one.write() as conn:
            for n, vector in enumerate(stored):
                add(one, conn, f"question {n}", vector if n % 7 else None)
        with one.read() as conn:
            found.append(([one.curated.match(conn, "none", q, threshold) for q in queries for threshold in (0.5, 0.8)],
                          one.curated.all_curated(conn),
                          [(item, vector.tobytes()) for item, vector in one.curated.curated_vectors(conn)]))
    assert found[0] == found[1]
    assert sum(m is not None for m in found[0][0]) > 10  # the comparison covers real matches


def test_curated_text_loses_its_nuls_on_postgres_only(side):
    with side.write() as conn:
        curated_id = side.curated.add(conn, question="Opening\x00 hours?", normalized="opening\x00 hours",
                                      answer="9\x00 to 5", urls=["https://acme.test/\x00"], lang="en\x00",
                                      vector=unit(1))
    with side.read() as conn:
        stored = side.curated.get(conn, curated_id)
        # Asked again with the NUL, it is found exactly on both.
        found = side.curated.match(conn, "opening\x00 hours", None, 0.8)
    kept = side.name == "sqlite"
    assert found is not None and found.exact and found.curated == stored
    assert stored.question == ("Opening\x00 hours?" if kept else "Opening hours?")
    assert stored.answer == ("9\x00 to 5" if kept else "9 to 5")
    assert stored.lang == ("en\x00" if kept else "en")
    assert stored.urls == ["https://acme.test/\x00"]  # JSON: the NUL is an escape, kept by both
    # A question of NULs alone is empty on PostgreSQL: refused there, as an empty one is.
    if kept:
        with side.write() as conn:
            side.curated.add(conn, question="\x00", normalized="", answer="a", urls=[], lang="", vector=None)
    else:
        with pytest.raises(InvalidInput), side.write() as conn:
            side.curated.add(conn, question="\x00", normalized="", answer="a", urls=[], lang="", vector=None)


# -- conversations -----------------------------------------------------------------------------


def turn(conversation: str, message: str, question: str, *, answered: bool = True, **kw) -> Turn:
    values: dict = {"answer": f"answer to {question}" if answered else "", "confidence": 0.9 if answered else 0.1,
                    "lang": "en", "source": "llm" if answered else "not_found", "page_url": "https://acme.test/"}
    if not answered:
        values["gap_normalized"] = question.lower().strip("?")
    values.update(kw)
    return Turn(conversation_id=conversation, message_id=message, question=question, answered=answered, **values)


def save(side: Side, *turns: Turn) -> None:
    for one in turns:
        with side.write() as conn:
            side.conversations.save_turn(conn, one)


BIKES, BIKES_TOO, PARKING = unit(1), unit(1, 0.3), unit(0, 0, 1)
TURNS = [
    turn("c1", "m1", "Opening hours?", latency_ms=120.5, ttft_ms=40.0, page_url="https://acme.test/a",
         citations=[CitationRow(url="https://acme.test/hours", title="Hours", chunk_id=12, score=0.91),
                    CitationRow(url="https://acme.test/", title="Home")]),
    turn("c2", "m2", "Do you sell bikes?", answered=False, gap_vector=BIKES.tobytes(), best_score=0.2),
    turn("c1", "m3", "And on Sunday?", lang="de", source="curated", page_url="https://acme.test/b",
         citations=[CitationRow(url="https://acme.test/sunday", title="Sunday", chunk_id=None, score=0.5)]),
    turn("c3", "m4", "Do you sell bicycles?", answered=False, gap_vector=BIKES_TOO.tobytes()),
    turn("c2", "m5", "do you sell bikes", answered=False, gap_normalized="do you sell bikes",
         gap_vector=PARKING.tobytes(), best_score=0.3),
    turn("c4", "m6", "Is there parking?", answered=False),  # a cached refusal: no vector
    turn("c4", "m7", "Where is the entrance?", completed=False),
]


def test_the_same_turns_read_back_equal_on_both_backends(sides):
    results = []
    for one in sides:
        save(one, *TURNS)
        store = one.conversations
        got: dict[str, object] = {}
        with one.write() as conn:
            store.set_feedback(conn, "m1", -1, "c1")
            store.set_feedback(conn, "m7", 1)
            store.set_feedback(conn, "m7", -1, None)  # rated again
        with one.read() as conn:
            got["history"] = [store.history(conn, c, limit) for c in ("c1", "c2", "c4", "none") for limit in (1, 3, -1)]
            got["conversations"] = [store.conversations(conn, limit=limit, offset=offset)
                                    for limit, offset in ((50, 0), (2, 1), (1, 3), (10, 10), (-1, -5))]
            got["views"] = [store.conversation_views(conn, unanswered=u, thumbs_down=d, limit=limit, offset=offset)
                            for u in (False, True) for d in (False, True) for limit, offset in ((25, 0), (1, 1))]
            got["message"] = [store.message_view(conn, m) for m in ("m1", "m3", "m7", "none")]
            got["gaps"] = [store.gaps(conn), store.gaps(conn, limit=1), store.gaps(conn, group_threshold=0.99)]
            got["open"] = store.open_gaps(conn)
            got["by_id"] = [store.gaps_by_id(conn, ids) for ids in ([1, 3, 99], [], ["2"])]
        with one.write() as conn:
            store.set_gap_vectors(conn, {3: BIKES.tobytes(), 1: PARKING.tobytes()})  # 1 has one already
        with one.read() as conn:
            got["vectors"] = [store.open_gaps(conn), store.gaps(conn)]
        with one.write() as conn:
            got["resolved"] = [store.resolve_gaps(conn, [1], curated_id=7), store.resolve_gaps(conn, [2, 99])]
        with one.read() as conn:
            got["after_resolving"] = store.open_gaps(conn, limit=10)
        save(one, turn("c5", "m8", "Do you sell bikes?", answered=False))  # asked again after resolved
        with one.read() as conn:
            got["asked_again"] = [store.open_gaps(conn), store.open_gaps(conn, limit=1), store.gaps(conn)]
            got["usage"] = json.dumps(store.usage(conn))  # as JSON: the counters' order too
        results.append(got)
    sqlite, postgres = results
    for key in sqlite:
        assert sqlite[key] == postgres[key], key

    # What both gave is what the calls mean.
    history, views, gaps, opened = sqlite["history"], sqlite["views"], sqlite["gaps"], sqlite["open"]
    assert [q for q, _ in history[1]] == ["Opening hours?", "And on Sunday?"]
    assert history[0] == [("And on Sunday?", "answer to And on Sunday?")]
    # All four; thumbs down: c1, c4; unanswered: c2, c3, c4; both: c4.
    assert [(len(v[0]), v[1]) for v in views[::2]] == [(4, 4), (2, 2), (3, 3), (1, 1)]
    latest_first = views[0][0]
    assert [c.id for c in latest_first] == ["c4", "c2", "c3", "c1"]
    c1 = latest_first[3]
    assert (c1.page_url, c1.lang, c1.created_at) == ("https://acme.test/b", "en", START + 1)
    assert [m.feedback for m in c1.messages] == ["down", None]
    assert c1.messages[0].citations == TURNS[0].citations
    conversation, message = sqlite["message"][0]
    assert conversation == "c1"
    assert message.citations == [CitationRow(url=c.url, title=c.title) for c in TURNS[0].citations]
    assert sqlite["message"][3] is None
    assert [(g.question, g.count, g.similar) for g in gaps[0]] == [
        ("do you sell bikes", 3, ["Do you sell bicycles?"]), ("Is there parking?", 1, [])]
    assert [(g.id, g.count, g.best_score) for g in opened] == [(1, 2, 0.3), (3, 1, None), (2, 1, None)]
    assert opened[0].vector == BIKES.tobytes()  # the first vector stays
    assert [g.id for g in sqlite["after_resolving"]] == [3]
    assert [g.id for g in sqlite["asked_again"][0]] == [1, 3]
    assert sqlite["resolved"] == [1, 2]


def test_a_conversation_keeps_its_start_and_language_and_takes_the_latest_page(side):
    save(side, turn("c1", "m1", "Hello?", page_url="https://acme.test/a", lang="en"),
         turn("c1", "m2", "Hallo?", page_url="https://acme.test/b", lang="de"))
    with side.read() as conn:
        (conversation,) = side.conversations.conversations(conn)
    assert {k: v for k, v in conversation.items() if k != "messages"} == {
        "id": "c1", "created_at": START + 1, "last_at": START + 2, "page_url": "https://acme.test/b", "lang": "en"}
    assert [(m["id"], m["created_at"], m["answered"]) for m in conversation["messages"]] == [
        ("m1", START + 1, True), ("m2", START + 2, True)]


def test_feedback_needs_the_message_in_its_conversation(side):
    save(side, turn("c1", "m1", "Hello?"), turn("c2", "m2", "Hi?"))
    with pytest.raises(NotFound), side.write() as conn:
        side.conversations.set_feedback(conn, "none", 1)
    with pytest.raises(NotFound), side.write() as conn:
        side.conversations.set_feedback(conn, "m1", -1, "c2")
    with side.write() as conn:
        side.conversations.set_feedback(conn, "m1", 1, "c1")
        side.conversations.set_feedback(conn, "m2", -1)
    with side.read() as conn:
        assert side.conversations.message_view(conn, "m1")[1].feedback == "up"
        assert side.conversations.message_view(conn, "m2")[1].feedback == "down"
        views, total = side.conversations.conversation_views(conn, thumbs_down=True)
    assert ([v.id for v in views], total) == (["c2"], 1)


def test_a_repeated_gap_counts_once_more_without_using_up_an_id(side):
    save(side, turn("c1", "m1", "Bikes?", answered=False, gap_vector=BIKES.tobytes(), best_score=0.4,
                    page_url="https://acme.test/a", lang="en"),
         turn("c1", "m2", "BIKES?", answered=False, gap_normalized="bikes", gap_vector=None, best_score=None,
              page_url="https://acme.test/b", lang="de"),
         turn("c1", "m3", "Parking?", answered=False))
    with side.read() as conn:
        gaps = side.conversations.gaps_by_id(conn, [1, 2, 3])
    assert [(g.id, g.question, g.count, g.lang, g.page_url, g.first_at, g.last_at, g.best_score, g.vector)
            for g in gaps] == [
        (1, "BIKES?", 2, "en", "https://acme.test/a", START + 1, START + 2, None, BIKES.tobytes()),
        (2, "Parking?", 1, "en", "https://acme.test/", START + 3, START + 3, None, None)]


def test_usage_counts_each_day_within_the_window(side):
    for days_ago, one in ((40, turn("c1", "m1", "Old?")), (10, turn("c2", "m2", "Recent?", answered=False)),
                          (0, turn("c3", "m3", "Today?", source="curated")), (0, turn("c4", "m4", "Again?"))):
        side.clock.now = time.time() - days_ago * 86400
        save(side, one)

    def day(days_ago: int) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(time.time() - days_ago * 86400))

    side.clock.now = time.time()
    with side.read() as conn:
        recent = side.conversations.usage(conn)
        everything = side.conversations.usage(conn, days=60)
        assert side.conversations.usage(conn, days=-1) == {}
    assert recent == {
        day(10): {"questions": 1, "answered": 0, "unanswered": 1, "source_not_found": 1},
        day(0): {"questions": 2, "answered": 2, "unanswered": 0, "source_curated": 1, "source_llm": 1}}
    assert list(recent[day(0)]) == ["answered", "questions", "source_curated", "source_llm", "unanswered"]
    assert list(everything) == [day(40), day(10), day(0)]


def test_a_resolved_gap_is_open_again_when_asked_again(side):
    save(side, turn("c1", "m1", "Bikes?", answered=False), turn("c1", "m2", "Parking?", answered=False))
    with side.write() as conn:
        assert side.conversations.resolve_gaps(conn, [1], curated_id=5) == 1
        assert side.conversations.resolve_gaps(conn, []) == 0
    with side.read() as conn:
        assert [g.id for g in side.conversations.open_gaps(conn)] == [2]
    save(side, turn("c2", "m3", "Bikes?", answered=False))
    with side.read() as conn:
        assert [(g.id, g.count) for g in side.conversations.open_gaps(conn)] == [(1, 2), (2, 1)]


NUL_TURNS = [
    turn("c\x001", "m\x001", "Open\x00 hours?", answer="9\x00 to 5", lang="e\x00n", source="l\x00lm",
         page_url="https://acme.test/\x00a",
         citations=[CitationRow(url="https://acme.test/\x00h", title="Ho\x00urs", chunk_id=1, score=0.5)]),
    turn("c\x001", "m\x002", "Bi\x00kes?", answered=False, gap_vector=BIKES.tobytes()),
]


def test_nuls_are_taken_out_on_postgres_and_kept_on_sqlite(sides):
    results = []
    for one in sides:
        save(one, *NUL_TURNS)
        store = one.conversations
        with one.write() as conn:
            store.set_feedback(conn, "m\x001", -1, "c\x001")  # found by the ids it was saved with
        with one.read() as conn:
            results.append({
                "history": store.history(conn, "c\x001"), "conversations": store.conversations(conn),
                "views": store.conversation_views(conn), "message": store.message_view(conn, "m\x001"),
                "gaps": store.gaps(conn), "open": store.open_gaps(conn), "usage": store.usage(conn)})
    sqlite, postgres = results
    assert sqlite["message"][1].feedback == "down" and "\x00" in sqlite["message"][1].question
    assert no_nul(postgres) == postgres
    for key in sqlite:
        assert no_nul(sqlite[key]) == postgres[key], key
