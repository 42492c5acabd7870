"""Is a sentence a durable statement about the speaker, and what kind of memory?

A small learned classifier: logistic regression over the bundled MiniLM (always MiniLM,
whatever model search uses: the weights were fitted to its vectors) sentence embedding
plus a few language cues (first person, question,
request, hypothetical, a date, contact details), trained on the labelled
utterances in memories/extraction_data/ (English and Chinese) by
`manage.py train_durable_classifier` and shipped as DURABLE_MODEL_PATH
(a few kilobytes). The rules extractor asks it about every sentence that no
slot rule recognised. Without the local model it is off, and the rules
alone decide.
"""

from __future__ import annotations

import csv
import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from memories.embedding import EmbedderSpec, MiniLMEmbedder, build_embedder
from memories.process_state import forgotten_on_reset

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "extraction_data"
DURABLE_MODEL_PATH = DATA_DIR / "durable_classifier.npz"
TYPES = ("fact", "profile", "episodic", "task")
RULE_VETO = 0.2  # below this, even a slot rule's match is dropped (e.g. "I'm typing this on my phone")

_FIRST_PERSON_EN = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|mine|myself|we|our|us)\b", re.I)
_QUESTION = re.compile(r"[?？]\s*$|^(what|how|why|when|where|which|who|is|are|do|does|can|could|should|would|will)"
                       r"\b|吗[？?。]?$|什么|怎么|为什么|哪里|哪个|几点|多少", re.I)
_REQUEST = re.compile(r"^(please|can you|could you|would you|help me|give me|write|translate|summari[sz]e|explain|"
                      r"list|make|fix|set|draft|tell me|show me)\b|^(请|帮我|麻烦|给我|把|写|翻译|解释|列出|设)", re.I)
_HYPOTHETICAL = re.compile(r"^(if|imagine|suppose|pretend|let's say|what if)\b|\bin this story\b|"
                           r"如果|假如|假设|要是|假装|故事里", re.I)
_DATE = re.compile(r"\b(19|20)\d{2}\b|\b(january|february|march|april|may|june|july|august|september|october|"
                   r"november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|"
                   r"\d+(st|nd|rd|th)\b|[0-9一二三四五六七八九十]+月|[0-9一二三四五六七八九十]+[号日]|"
                   r"周[一二三四五六日]", re.I)
_CONTACT = re.compile(r"@|\d{3}[\s-]?\d{3,4}[\s-]?\d{3,4}|微信|邮箱|phone|email|address|地址")
_HABIT = re.compile(r"\b(every|always|usually|never|each|twice|most)\b|每天|每周|每个|平时|一般|经常|从来|总是", re.I)
_TRANSIENT = re.compile(r"\b(right now|at the moment|just now)\b|^i'?m (just |still |a bit )|现在|马上|刚|正在|还在",
                        re.I)


def cues(text: str) -> np.ndarray:
    """The hand-made features, each 0 or 1, beside the embedding."""
    stripped = text.strip()
    chinese = bool(re.search(r"[\u4e00-\u9fff]", stripped))
    first = bool(re.search("我", stripped)) if chinese else bool(_FIRST_PERSON_EN.search(stripped))
    return np.array([
        first, bool(_QUESTION.search(stripped)), bool(_REQUEST.search(stripped)),
        bool(_HYPOTHETICAL.search(stripped)), bool(_DATE.search(stripped)), bool(_CONTACT.search(stripped)),
        bool(_HABIT.search(stripped)), bool(_TRANSIENT.search(stripped)), chinese,
        min(len(stripped) / (20 if chinese else 60), 1.0),
    ], dtype=np.float32)


CUE_NAMES = ("first_person", "question", "request", "hypothetical", "date", "contact", "habit", "transient",
             "chinese", "length")


@dataclass
class Labelled:
    text: str
    keep: bool
    memory_type: str
    category: str
    language: str
    split: str  # tune | heldout


def labelled_utterances() -> list[Labelled]:
    """The labelled set: every third utterance of each language file is held out
    (scored only at the end); the rest tune the classifier and the rules."""
    out: list[Labelled] = []
    for language in ("en", "zh"):
        with (DATA_DIR / f"utterances_{language}.tsv").open(encoding="utf-8") as handle:
            for index, row in enumerate(csv.DictReader(handle, delimiter="\t")):
                out.append(Labelled(text=row["text"], keep=row["keep"] == "1",
                                    memory_type=row["type"] if row["keep"] == "1" else "",
                                    category=row["category"], language=language,
                                    split="heldout" if index % 3 == 2 else "tune"))
    return out


@dataclass
class DurableModel:
    keep_weights: np.ndarray  # (features,)
    keep_bias: float
    type_weights: np.ndarray  # (types, features)
    type_bias: np.ndarray  # (types,)
    threshold: float
    mean: np.ndarray  # feature standardisation
    scale: np.ndarray

    def scores(self, features: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """(probability of 'durable statement', the memory type) per row."""
        x = (features - self.mean) / self.scale
        keep = 1.0 / (1.0 + np.exp(-(x @ self.keep_weights + self.keep_bias)))
        types = [TYPES[i] for i in np.argmax(x @ self.type_weights.T + self.type_bias, axis=1)]
        return keep, types

    def save(self, path: Path) -> None:
        np.savez_compressed(path, keep_weights=self.keep_weights, keep_bias=np.array([self.keep_bias]),
                            type_weights=self.type_weights, type_bias=self.type_bias,
                            threshold=np.array([self.threshold]), mean=self.mean, scale=self.scale)

    @classmethod
    def load(cls, path: Path) -> DurableModel:
        with np.load(path) as data:
            return cls(keep_weights=data["keep_weights"], keep_bias=float(data["keep_bias"][0]),
                       type_weights=data["type_weights"], type_bias=data["type_bias"],
                       threshold=float(data["threshold"][0]), mean=data["mean"], scale=data["scale"])


def features(texts: list[str], embedder) -> np.ndarray:
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = embedder.embed_documents(texts)
    return np.hstack([vectors, np.vstack([cues(t) for t in texts])]).astype(np.float32)


def _logistic(x: np.ndarray, y: np.ndarray, *, l2: float, steps: int = 600, rate: float = 0.5
              ) -> tuple[np.ndarray, float]:
    """Binary logistic regression by gradient descent (numpy only: nothing to install)."""
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        error = p - y
        w -= rate * (x.T @ error / len(y) + l2 * w)
        b -= rate * float(error.mean())
    return w, b


def fit(x: np.ndarray, keep: np.ndarray, types: list[str], *, l2: float = 0.01, threshold: float = 0.5
        ) -> DurableModel:
    """Train both heads: 'durable?' on every row, the type one-vs-rest on the kept rows."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    keep_w, keep_b = _logistic(z, keep.astype(np.float64), l2=l2)
    kept = keep.astype(bool)
    type_w, type_b = [], []
    for name in TYPES:
        target = np.array([t == name for t, k in zip(types, kept, strict=True) if k], dtype=np.float64)
        w, b = _logistic(z[kept], target, l2=l2)
        type_w.append(w)
        type_b.append(b)
    return DurableModel(keep_weights=keep_w, keep_bias=keep_b, type_weights=np.vstack(type_w),
                        type_bias=np.array(type_b), threshold=threshold, mean=mean, scale=scale)


_load_lock = threading.Lock()


def shipped_model() -> tuple[DurableModel, object] | None:
    """The shipped classifier and the local model it reads, or None when either is missing.
    Loaded once per process: parallel first requests wait for one load instead of each
    loading the model (seconds apiece, holding their database connections meanwhile)."""
    with _load_lock:
        return _load_shipped_model()


@lru_cache(maxsize=1)
def _load_shipped_model() -> tuple[DurableModel, object] | None:
    if not DURABLE_MODEL_PATH.exists():
        logger.warning("no durable-statement classifier at %s: the rules alone decide", DURABLE_MODEL_PATH)
        return None
    try:
        embedder = build_embedder(EmbedderSpec("local", MiniLMEmbedder.name, MiniLMEmbedder.dimensions))
        embedder.embed_query("warm up")
    except Exception as exc:  # the local model is optional for the service; then the rules decide alone
        logger.warning("the local model is unavailable, the durable-statement classifier is off: %s", exc)
        return None
    return DurableModel.load(DURABLE_MODEL_PATH), embedder


forgotten_on_reset(_load_shipped_model.cache_clear)


def classify(texts: list[str]) -> list[tuple[float, str]] | None:
    """(probability of a durable statement, memory type) per sentence; None when the classifier is off."""
    loaded = shipped_model()
    if loaded is None or not texts:
        return None if loaded is None else []
    model, embedder = loaded
    keep, types = model.scores(features(texts, embedder))
    return [(float(p), t) for p, t in zip(keep, types, strict=True)]


def durable_threshold() -> float:
    loaded = shipped_model()
    return loaded[0].threshold if loaded else 1.0
