"""Chunking (pure, in real model tokens) and the real ONNX / USE embedders."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.chunk import chunk_document, split_sentences
from ingest.document import Document, Fact, Form, FormField, Section
from ingest.embed import MODELS, OnnxMiniLM, make_embedder, register_embedder
from store.errors import InvalidConfig


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return OnnxMiniLM(int8=False)


@pytest.fixture(scope="module")
def minilm_int8(tmp_path_factory):
    return OnnxMiniLM(int8=True, cache_dir=tmp_path_factory.mktemp("models"))


def long_document() -> Document:
    def para(n: int) -> str:
        return (f"Wheels are the standard built-distribution format number {n} for Python. They install "
                f"quickly because nothing needs to be compiled on target machine {n}. ")

    sections = [
        Section(heading_path=("Guide", "Intro"), text="\n\n".join(para(i) * 2 for i in range(6))),
        Section(heading_path=("Guide", "Details"), text="One short paragraph.\n\n" + "".join(para(i) for i in range(30))),
        Section(heading_path=("Guide", "Empty"), text="   "),
    ]
    return Document(
        url="https://x.test/a", canonical_url="https://x.test/a", title="Wheels", lang="en", sections=sections,
        facts=[Fact(type="FAQPage", kind="faq", text="Q: Are wheels fast? A: Yes, they install quickly.")],
        forms=[Form(action="https://x.test/contact", name="Contact form",
                    fields=(FormField(name="email", label="Email", type="email", required=True),))],
    )


def test_chunks_respect_the_token_budget_and_keep_heading_paths(minilm):
    doc = long_document()
    chunks = chunk_document(doc, minilm.count_tokens, target_tokens=128)
    prose = [c for c in chunks if c.kind == "prose"]
    assert len(prose) >= 5
    real = minilm.count_tokens([c.text for c in prose])
    assert max(real) <= 128 + 13  # target plus at most the ~10% overlap carried over
    assert all(c.heading_path[0] == "Guide" for c in prose)
    assert {c.heading_path for c in prose} == {("Guide", "Intro"), ("Guide", "Details")}
    assert [c.position for c in chunks] == list(range(len(chunks)))
    kinds = {c.kind for c in chunks}
    assert {"prose", "faq", "form"} <= kinds
    form = next(c for c in chunks if c.kind == "form")
    assert "Email (required, email)" in form.text


def test_chunk_ids_are_stable_and_hashes_follow_content(minilm):
    first = chunk_document(long_document(), minilm.count_tokens)
    second = chunk_document(long_document(), minilm.count_tokens)
    assert [c.uid for c in first] == [c.uid for c in second]
    assert len({c.uid for c in first}) == len(first)
    moved = long_document()
    moved.canonical_url = "https://x.test/b"
    third = chunk_document(moved, minilm.count_tokens)
    assert [c.hash for c in third] == [c.hash for c in first]  # same text → same content hash
    assert {c.uid for c in third}.isdisjoint({c.uid for c in first})  # other page → other ids


def test_a_sentence_goes_on_after_an_abbreviation():
    """"für ca. 10 Minuten", "z. B. wenn…", "e.g. Django": the answer had quoted "10 Minuten in den
    Ofen." and "B. wenn die virtuelle Maschine…" as sentences. A line break still ends one, and so
    does "etc." before a capital."""
    assert split_sentences("Stelle die Pfanne für ca. 10 Minuten in den Ofen. Dann servieren.") == [
        "Stelle die Pfanne für ca. 10 Minuten in den Ofen.", "Dann servieren."]
    assert split_sentences("Mehrere Prozesse (z. B. wenn die CPU vier Kerne hat) helfen. Gut.") == [
        "Mehrere Prozesse (z. B. wenn die CPU vier Kerne hat) helfen.", "Gut."]
    assert split_sentences("Use a framework, e.g. Django. Dr. Ellison bakes.") == [
        "Use a framework, e.g. Django.", "Dr. Ellison bakes."]
    assert split_sentences("Flour, sugar, etc. The rest is optional.") == ["Flour, sugar, etc.", "The rest is optional."]
    assert split_sentences("Bake for approx.\nThen cool.") == ["Bake for approx.", "Then cool."]


def test_overlap_carries_a_sentence_into_the_next_chunk(minilm):
    sentences = [f"Sentence number {i} talks about packaging topic {i}." for i in range(80)]
    doc = Document(url="u", canonical_url="u", sections=[Section(heading_path=("T",), text=" ".join(sentences))])
    chunks = chunk_document(doc, minilm.count_tokens, target_tokens=64, overlap=0.2)
    assert len(chunks) > 3
    shared = sum(1 for a, b in zip(chunks, chunks[1:], strict=False) if split_sentences(a.text)[-1] in b.text)
    assert shared >= len(chunks) // 2


def test_language_per_chunk_comes_from_the_detector(minilm):
    doc = Document(url="u", canonical_url="u", lang="es", sections=[
        Section(heading_path=("A",), text="Esta es una frase en español sobre cómo instalar paquetes."),
        Section(heading_path=("B",), text="This section was never translated and is still in English text."),
    ])
    from ingest.lang import detect_language

    chunks = chunk_document(doc, minilm.count_tokens, detect_language=lambda t, d: detect_language(t, default=d))
    assert [c.lang for c in chunks] == ["es", "en"]


def test_empty_document_gives_no_chunks(minilm):
    assert chunk_document(Document(url="u", canonical_url="u"), minilm.count_tokens) == []


def test_minilm_vectors_are_unit_length_and_order_preserving(minilm):
    texts = ["short", "a much longer text " * 40, "pip installs packages", "", "  "]
    batch = minilm.embed(texts)
    assert batch.shape == (5, 384) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)
    for i, text in enumerate(texts[:3]):
        assert np.allclose(minilm.embed_query(text), batch[i], atol=1e-4)


def test_minilm_ranks_a_paraphrase_above_an_unrelated_text(minilm):
    q, near, far = minilm.embed(["how do I install a package", "Installing packages with pip", "Opening hours of the bakery"])
    assert q @ near > q @ far + 0.2


def test_int8_per_channel_stays_close_to_fp32(minilm, minilm_int8):
    texts = ["Packaging Python projects with pyproject.toml", "Wheels are a built distribution format.",
             "Virtual environments isolate dependencies."]
    cos = (minilm.embed(texts) * minilm_int8.embed(texts)).sum(axis=1)
    assert cos.min() > 0.98
    cached = list(minilm_int8.cache_dir.glob("*.onnx"))
    assert len(cached) == 1  # quantised once, then reused


def test_multilingual_use_is_cross_lingual():
    use = make_embedder("use-multilingual-v3")
    en, de, far = use.embed(["Where is the train station?", "Wo ist der Bahnhof?", "Python packaging metadata"])
    assert use.dim == 512 and abs(np.linalg.norm(en) - 1) < 1e-4
    assert en @ de > en @ far + 0.2
    assert use.count_tokens(["hola mundo"])[0] >= 2


def test_unknown_model_is_a_config_error():
    with pytest.raises(InvalidConfig, match="unknown embedding model"):
        make_embedder("gpt-embeddings-9000")


def test_a_registered_embedder_is_a_model_choice_and_a_taken_name_is_refused():
    from tests.fakes import FAKE_MODEL, HashWordsEmbedder

    assert {"minilm-l6-v2-int8", "minilm-l6-v2", "use-multilingual-v3", FAKE_MODEL} <= set(MODELS)
    assert isinstance(make_embedder(FAKE_MODEL), HashWordsEmbedder)
    with pytest.raises(ValueError, match="already registered"):
        register_embedder("minilm-l6-v2", lambda *, cache_dir, threads: HashWordsEmbedder())


def test_the_fake_embedder_is_deterministic_unit_length_and_follows_shared_words():
    from tests.fakes import HashWordsEmbedder

    fake = HashWordsEmbedder()
    texts = ["sourdough bread prices", "Prices of sourdough bread", "brake pads and oil", "  "]
    vectors = fake.embed(texts)
    assert vectors.shape == (4, fake.dim) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert all(np.array_equal(fake.embed_query(text), vector) for text, vector in zip(texts, vectors, strict=True))
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.5
    assert fake.count_tokens(texts) == [3, 4, 4, 0]


def test_the_embedding_batch_is_a_setting(tmp_path):
    """FRONTDESK_EMBED_BATCH reaches the model; 0 keeps the model's own (MiniLM: one text per run)."""
    from app.context import Context
    from app.settings import Settings

    small = Context(Settings.from_env({"FRONTDESK_EMBED_BATCH": "8"}, data_dir=str(tmp_path)))
    default = Context(Settings(data_dir=str(tmp_path)))
    assert small.embedder().batch_size == 8
    assert default.embedder().batch_size == 1
    vectors = small.embedder().embed([f"passage number {n} about packaging" for n in range(20)])
    assert vectors.shape == (20, 384)
    small.close()
    default.close()


def test_an_int8_vector_does_not_depend_on_the_texts_embedded_with_it(minilm_int8):
    """The int8 model quantizes activations per run; one text per run (MiniLM's default) keeps a
    chunk's vector the same whichever page, crawl or question it is embedded with."""
    texts = ["Wheels are a built distribution format.", "a much longer text about sdists and wheels " * 20,
             "Virtual environments isolate dependencies."]
    together = minilm_int8.embed(texts)
    assert all(np.array_equal(minilm_int8.embed([text])[0], together[i]) for i, text in enumerate(texts))
    batched = OnnxMiniLM(int8=True, cache_dir=minilm_int8.cache_dir)
    batched.batch_size = 32  # what the old default did: the same text comes out (slightly) different
    assert not np.array_equal(batched.embed(texts)[0], together[0])
