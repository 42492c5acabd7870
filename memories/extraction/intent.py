"""What an utterance does, read by meaning: the intent model.

Every user clause is one of nine intents (INTENTS): a fact about the speaker, a fact about
another person, a habit, a standing wish about the answers, an update or correction, a forget
request, a plan or dated event, small talk, a question or task for the assistant. A second head
says what the clause is about (SLOTS: home, work, partner, diet, routine, ...), which is how an
update finds the memory it replaces and a forget request the memory it takes back.

The model is softmax regression over the bundled multilingual encoder (Universal Sentence
Encoder v3: Chinese, English and code-mixed text in one space) plus a handful of surface cues
(a question mark, who is spoken of). It is trained from the labelled corpus the repository owns
(memories/extraction_data/intents/*.jsonl, docs/extraction.md) by
`manage.py train_intent_model`, which writes INTENT_MODEL_PATH: the same corpus and command give
the same weights (full-batch gradient descent from zeros, no randomness).

Which third of the corpus is held out is fixed by a hash of each paraphrase family (`group`):
paraphrases of one idea never sit on both sides, so the held-out figures say how the model reads
sentences it has not seen, not how well it remembers their neighbours.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from memories.embedding import local_minilm, local_use
from memories.process_state import forgotten_on_reset
from memories.vocabulary import Slot

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent.parent / "extraction_data"
CORPUS_DIR = DATA_DIR / "intents"
INTENT_MODEL_PATH = DATA_DIR / "intent_model.npz"

FACT_SELF = "fact_self"
FACT_OTHER = "fact_other"
HABIT = "habit"
WISH = "wish"
UPDATE = "update"
FORGET = "forget"
PLAN = "plan"
SMALLTALK = "smalltalk"
REQUEST = "request"
INTENTS = (FACT_SELF, FACT_OTHER, HABIT, WISH, UPDATE, FORGET, PLAN, SMALLTALK, REQUEST)
COMPOUND = "compound"  # a corpus line whose clauses carry the intents
# What leaves a memory (forget leaves a deletion, the rest nothing).
REMEMBERED_INTENTS = frozenset({FACT_SELF, FACT_OTHER, HABIT, WISH, UPDATE, PLAN})

SLOTS = tuple(slot.value for slot in Slot)  # in the order the model's weights index them
NO_SLOT = Slot.NONE.value

HELD_OUT_SHARE = 3  # one family in three is held out


class SentenceEncoder(Protocol):
    def embed_documents(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LabelledClause:
    """One clause of the corpus: a simple utterance, or one clause of a compound one."""

    text: str
    intent: str
    slot: str
    language: str
    setting: str
    group: str
    utterance_id: str
    earlier: str = ""  # update/forget: what the user said before that this replaces or takes back
    compound: bool = False

    @property
    def held_out(self) -> bool:
        return held_out_family(self.group)


@dataclass(frozen=True)
class LabelledUtterance:
    """A whole corpus line: its text and the clauses it should be read as."""

    id: str
    text: str
    language: str
    group: str
    clauses: tuple[LabelledClause, ...]

    @property
    def held_out(self) -> bool:
        return held_out_family(self.group)


def held_out_family(group: str) -> bool:
    """A paraphrase family is held out when its stable hash falls in the last third."""
    digest = hashlib.sha1(group.encode("utf-8")).digest()
    return digest[0] % HELD_OUT_SHARE == 0


class CorpusError(ValueError):
    """A corpus line that cannot be read (the file and line are in the message)."""


def _clause(raw: dict, line: dict, compound: bool) -> LabelledClause:
    intent, slot = raw.get("intent"), raw.get("slot") or NO_SLOT
    if intent not in INTENTS:
        raise CorpusError(f"unknown intent {intent!r}")
    if slot not in SLOTS:
        slot = Slot.OTHER.value
    return LabelledClause(text=str(raw["text"]).strip(), intent=intent, slot=slot, language=line.get("lang", ""),
                          setting=line.get("setting", ""), group=str(line.get("group") or line["id"]),
                          utterance_id=str(line["id"]), earlier=str(raw.get("earlier") or ""), compound=compound)


def read_corpus(directory: Path = CORPUS_DIR) -> list[LabelledUtterance]:
    """Every labelled utterance of the corpus files, in file and line order."""
    out: list[LabelledUtterance] = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                compound = line.get("intent") == COMPOUND
                raws = line["clauses"] if compound else [line]
                clauses = tuple(_clause(raw, line, compound) for raw in raws)
            except (KeyError, TypeError, ValueError) as exc:
                raise CorpusError(f"{path.name}:{number}: {exc}") from exc
            out.append(LabelledUtterance(id=str(line["id"]), text=str(line["text"]).strip(),
                                         language=line.get("lang", ""), group=str(line.get("group") or line["id"]),
                                         clauses=clauses))
    return out


def corpus_clauses(utterances: Sequence[LabelledUtterance]) -> list[LabelledClause]:
    return [clause for utterance in utterances for clause in utterance.clauses]


# --------------------------------------------------------------------------- features

_QUESTION_END = re.compile(r"[?？]\s*[)）!！.。~]*\s*$|[吗呢么][？?。!！]?\s*$")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|myself)\b|我(?!们)", re.I)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|u|ur)\b|你|您", re.I)
_THIRD_PERSON = re.compile(r"\b(?:he|she|his|her|him|they|their|them)\b|他|她", re.I)
_HAN = re.compile(r"[\u4e00-\u9fff]")
# How often: the words a routine is said with. The encoder's sentence vector weighs them lightly beside
# what the sentence is about ("Another early morning run today, 6am as usual" read as a plan without it).
_FREQUENCY = re.compile(r"\b(?:always|usually|normally|often|every|each|daily|weekly|nightly|never|as usual|again|"
                        r"most (?:days|mornings|evenings|nights)|another)\b|每天|每周|每晚|每个|一般|通常|总是|"
                        r"经常|照常|照例|又|习惯|雷打不动|从不", re.I)
CUE_NAMES = ("question", "first_person", "second_person", "third_person", "chinese", "length", "frequency")


def cues(text: str) -> np.ndarray:
    """Surface facts the encoder's sentence vector blurs: how a clause ends and who it names."""
    stripped = text.strip()
    han = len(_HAN.findall(stripped))
    length = han / 25 if han else len(stripped.split()) / 15
    return np.array([bool(_QUESTION_END.search(stripped)), bool(_FIRST_PERSON.search(stripped)),
                     bool(_SECOND_PERSON.search(stripped)), bool(_THIRD_PERSON.search(stripped)),
                     han > 0, min(length, 1.5), bool(_FREQUENCY.search(stripped))], dtype=np.float32)


def features(texts: Sequence[str], encoders: Sequence[SentenceEncoder]) -> np.ndarray:
    """The multilingual encoder's vector, the bundled English one's beside it (on the held-out third,
    macro-F1 0.856 with the multilingual one alone, 0.872 with both: docs/extraction.md), and the cues."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = [_vectors(encoder, texts) for encoder in encoders]
    return np.hstack([*vectors, np.vstack([cues(t) for t in texts])]).astype(np.float32)


FEW = 16  # up to this many texts, MiniLM's own ONNX session one text at a time beats a batch through
# sentence-transformers (~3 ms a text against ~50 ms a call on these machines: bench-ingest's profile)


def _vectors(encoder: SentenceEncoder, texts: Sequence[str]) -> np.ndarray:
    """An encoder's vectors of `texts`: a few through its single-text path where it has a fast one (the
    same model and weights: MiniLMEmbedder.embed_query), a batch otherwise."""
    single = getattr(encoder, "_query_session", None)
    if single is not None and len(texts) <= FEW:
        return np.vstack([single.embed(text) for text in texts])
    return encoder.embed_documents(list(texts))


# --------------------------------------------------------------------------- the model


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def fit_softmax(x: np.ndarray, y: np.ndarray, classes: int, *, l2: float, steps: int = 400,
                weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by full-batch gradient descent with momentum, from zeros:
    deterministic, numpy only. `weights` weigh each row's loss (rarer or costlier classes)."""
    n, d = x.shape
    w, b = np.zeros((d, classes)), np.zeros(classes)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    target = np.eye(classes)[y]
    row_weight = (weights if weights is not None else np.ones(n))[:, None]
    total = float(row_weight.sum())
    rate, momentum = 0.5, 0.9
    for _ in range(steps):
        p = _softmax(x @ w + b)
        error = (p - target) * row_weight
        gw = x.T @ error / total + l2 * w
        gb = error.sum(axis=0) / total
        vw = momentum * vw - rate * gw
        vb = momentum * vb - rate * gb
        w += vw
        b += vb
    return w, b


@dataclass
class IntentModel:
    mean: np.ndarray
    scale: np.ndarray
    intent_weights: np.ndarray  # (features, intents)
    intent_bias: np.ndarray
    slot_weights: np.ndarray  # (features, slots)
    slot_bias: np.ndarray
    encoder: str

    def intent_probabilities(self, x: np.ndarray) -> np.ndarray:
        return _softmax(((x - self.mean) / self.scale) @ self.intent_weights + self.intent_bias)

    def slot_probabilities(self, x: np.ndarray) -> np.ndarray:
        return _softmax(((x - self.mean) / self.scale) @ self.slot_weights + self.slot_bias)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, mean=self.mean, scale=self.scale, intent_weights=self.intent_weights.astype(
            np.float32), intent_bias=self.intent_bias, slot_weights=self.slot_weights.astype(np.float32),
            slot_bias=self.slot_bias, encoder=np.array([self.encoder]), intents=np.array(INTENTS),
            slots=np.array(SLOTS))

    @classmethod
    def load(cls, path: Path) -> IntentModel:
        with np.load(path) as data:
            if tuple(data["intents"]) != INTENTS or tuple(data["slots"]) != SLOTS:
                raise ValueError(f"{path} was trained for other labels: run manage.py train_intent_model")
            return cls(mean=data["mean"], scale=data["scale"], intent_weights=data["intent_weights"],
                       intent_bias=data["intent_bias"], slot_weights=data["slot_weights"],
                       slot_bias=data["slot_bias"], encoder=str(data["encoder"][0]))


INTENT_L2 = 0.03  # chosen by cross-validation on the dev part (manage.py train_intent_model --sweep)
SLOT_L2 = 0.03
# Updates and forget requests cost most when missed (an old fact stays current, a forgotten one stays
# readable): their rows weigh more, which moves their recall up at a small cost in precision.
CLASS_WEIGHT = {UPDATE: 3.0, FORGET: 2.0}


def fit(x: np.ndarray, intents: Sequence[str], slots: Sequence[str], *, encoder: str,
        intent_l2: float = INTENT_L2, slot_l2: float = SLOT_L2) -> IntentModel:
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    y = np.array([INTENTS.index(i) for i in intents])
    weights = np.array([CLASS_WEIGHT.get(i, 1.0) for i in intents])
    intent_w, intent_b = fit_softmax(z, y, len(INTENTS), l2=intent_l2, weights=weights)
    with_slot = np.array([s != NO_SLOT for s in slots])
    slot_y = np.array([SLOTS.index(s) for s in slots])
    slot_w, slot_b = fit_softmax(z[with_slot], slot_y[with_slot], len(SLOTS), l2=slot_l2)
    return IntentModel(mean=mean, scale=scale, intent_weights=intent_w, intent_bias=intent_b, slot_weights=slot_w,
                       slot_bias=slot_b, encoder=encoder)


# --------------------------------------------------------------------------- scores


@dataclass(frozen=True)
class ClassScore:
    label: str
    precision: float
    recall: float
    f1: float
    support: int


def per_class_scores(truth: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> list[ClassScore]:
    out = []
    for label in labels:
        tp = sum(1 for t, p in zip(truth, predicted, strict=True) if t == label and p == label)
        fp = sum(1 for t, p in zip(truth, predicted, strict=True) if t != label and p == label)
        fn = sum(1 for t, p in zip(truth, predicted, strict=True) if t == label and p != label)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out.append(ClassScore(label, precision, recall, f1, tp + fn))
    return out


def macro_f1(scores: Sequence[ClassScore]) -> float:
    present = [s for s in scores if s.support]
    return sum(s.f1 for s in present) / len(present) if present else 0.0


# --------------------------------------------------------------------------- reading clauses


@dataclass(frozen=True)
class Reading:
    """What a clause does (its intent and how sure the model is) and what it is about."""

    intent: str
    confidence: float
    slot: str


_load_lock = threading.Lock()


def intent_encoder() -> SentenceEncoder:
    """The bundled multilingual encoder (loaded once per process): the model's main reading, and the
    space where updates and forget requests are matched to memories. Built under a lock: twenty
    requests arriving together after the embedders were reset must wait for one load, not start twenty
    (each of seconds, holding its database connection: the pool ran dry and answered 503)."""
    with _load_lock:
        return local_use()


def intent_encoders() -> tuple[SentenceEncoder, SentenceEncoder]:
    """What the model reads: the multilingual encoder, then the bundled English one."""
    use = intent_encoder()
    with _load_lock:
        return use, local_minilm()


@lru_cache(maxsize=1)
def _shipped() -> IntentModel | None:
    if not INTENT_MODEL_PATH.exists():
        logger.warning("no intent model at %s: run manage.py train_intent_model", INTENT_MODEL_PATH)
        return None
    return IntentModel.load(INTENT_MODEL_PATH)


forgotten_on_reset(_shipped.cache_clear)


def shipped_model() -> IntentModel | None:
    with _load_lock:
        return _shipped()


def read_texts(texts: Sequence[str], model: IntentModel | None = None,
               encoders: Sequence[SentenceEncoder] | None = None) -> list[Reading]:
    """Each text's intent and slot, in one encoder call. Raises IntentModelMissing when no model ships."""
    model = model or shipped_model()
    if model is None:
        raise IntentModelMissing(f"no intent model at {INTENT_MODEL_PATH}: run manage.py train_intent_model")
    if not texts:
        return []
    x = features(texts, encoders or intent_encoders())
    intents = model.intent_probabilities(x)
    slots = model.slot_probabilities(x)
    return [Reading(intent=INTENTS[int(np.argmax(row))], confidence=float(row.max()),
                    slot=SLOTS[int(np.argmax(slot_row))])
            for row, slot_row in zip(intents, slots, strict=True)]


class _Remembered:
    """A bounded per-process memo of what was computed for a text (stored memories come back job after
    job: their vectors and slots are read once)."""

    def __init__(self, size: int = 4096):
        self.size = size
        self.values: OrderedDict[str, object] = OrderedDict()
        self.lock = threading.Lock()

    def get_many(self, texts: Sequence[str], compute) -> list:
        with self.lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self.values))
        if missing:
            computed = compute(missing)
            with self.lock:
                for text, value in zip(missing, computed, strict=True):
                    self.values[text] = value
                while len(self.values) > self.size:
                    self.values.popitem(last=False)
        with self.lock:
            out = []
            for text in texts:
                value = self.values.get(text)
                if value is None:  # evicted meanwhile by another thread's batch
                    value = compute([text])[0]
                out.append(value)
            return out



_slots = _Remembered()
_meaning_vectors = _Remembered()


def read_slots(texts: Sequence[str]) -> list[str]:
    """What each text (a stored memory, say) is about, by the slot head alone (remembered per text)."""
    return _slots.get_many(texts, lambda missing: [reading.slot for reading in read_texts(missing)])


def meaning_vectors(texts: Sequence[str]) -> np.ndarray:
    """The multilingual encoder's vectors of these texts (remembered per text)."""
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    return np.vstack(_meaning_vectors.get_many(texts, lambda missing: list(
        intent_encoder().embed_documents(list(missing)))))



class IntentModelMissing(RuntimeError):
    """The intent model file is missing (a checkout without memories/extraction_data/intent_model.npz)."""
