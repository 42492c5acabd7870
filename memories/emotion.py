"""The emotion of what a user said (seed 004 §2.3 `emotion` {valence, arousal, label}), read offline.

Ridge regression over the bundled encoders (Universal Sentence Encoder v3: Chinese, English and code-mixed
text in one space; MiniLM beside it, as the intent model reads) for valence (-1..1) and arousal (0..1), and
the label whose mean (valence, arousal) in the training lines is nearest. Trained from the labelled lines the
repository owns (memories/extraction_data/emotion_lines.jsonl) by `manage.py train_emotion_model`, which writes
EMOTION_MODEL_PATH with a manifest (the corpus's hash, the encoder, the held-out scores) that is checked on
load: a corpus changed without a retrain is refused (and a cheap test fails). Deterministic: closed-form
ridge, a fixed held-out fifth chosen by a hash of each line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from memories.embedding import Embedder, ScriptWeightedEmbedder, local_minilm, local_use
from memories.excerpts import FORGOTTEN_TURN
from memories.models import MemoryItem
from memories.process_state import forgotten_on_reset
from memories.vocabulary import Tag
from memories.writing import memories_emotion_fill

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "extraction_data"
EMOTION_LINES = DATA_DIR / "emotion_lines.jsonl"
EMOTION_MODEL_PATH = DATA_DIR / "emotion_model.npz"
# Chosen on the dev half of bench-people's labelled turns (valence sign, neutral under NEUTRAL): the multilingual
# encoder alone 0.44-0.56, with the English one beside it 0.47-0.57; ridge 3 and a 0.1 neutral band the best.
RIDGE = 3.0
NEUTRAL = 0.05  # |valence| under this reads as neither pleased nor upset (dev: 0.05 / 0.1 / 0.15 alike ranked)
# Words that say how it felt, counted beside the encoders (the encoders read topic more than feeling: "my mum
# is in hospital" and "my mum is in Spain" sit close). Each word present moves valence by CUE_WEIGHT, at most
# three either way; chosen on bench-people's dev turns (valence sign 0.54 -> 0.66 there, 0.51 -> 0.59 held out).
CUE_WEIGHT = 0.3
POSITIVE_CUES = re.compile(
    r"\b(?:happy|glad|great|love[sd]?|excit(?:ed|ing)|proud|amazing|wonderful|yay|thrilled|relieved|lovely|"
    r"congrat\w*|enjoy\w*|fun|awesome|perfect|grateful|thankful|delighted|finally|can't wait|good news|"
    r"beautiful|brilliant|best)\b|😊|🎉|❤|😍|🥳|开心|高兴|太好了|哈哈|喜欢|兴奋|骄傲|满意|幸福|感动|放心|好消息|激动|"
    r"期待|棒|顺利|不错|舒服|终于|爱", re.I)
NEGATIVE_CUES = re.compile(
    r"\b(?:worr(?:y|ied|ying)|sad|angry|upset|annoyed|frustrat\w*|tired|exhausted|stress\w*|anxious|scared|"
    r"afraid|nervous|hate|awful|terrible|sick|hospital|surgery|died|passed(?: away)?|lost|cancer|pain|hurts?|"
    r"struggl\w*|lonely|miss|ugh|crying|cried|argu\w*|fight|broke up|divorce\w*|guilty|dread\w*|overwhelm\w*|"
    r"scare|fell|fall|bad|worse|worst|can't sleep|not sleeping)\b|😭|😢|😞|😩|担心|难过|生气|烦|累|焦虑|害怕|紧张|"
    r"伤心|失望|疼|病|住院|手术|去世|吵架|分手|压力|崩溃|郁闷|唉|无语|头疼|委屈|孤单|想念|舍不得|吓|睡不着|不好|加班|痛",
    re.I)


def cue_balance(text: str) -> int:
    """Words of feeling in the text: pleased ones less upset ones, at most three either way."""
    return max(-3, min(3, len(POSITIVE_CUES.findall(text)) - len(NEGATIVE_CUES.findall(text))))
_lock = threading.Lock()


def corpus_hash(path: Path = EMOTION_LINES) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def held_out_line(text: str) -> bool:
    """One line in five is held out, fixed by its text."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 5 == 0


def read_lines(path: Path = EMOTION_LINES) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ridge(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Weights and bias of ridge regression (closed form, the bias not penalised)."""
    mean_x, mean_y = x.mean(axis=0), float(y.mean())
    xc = x - mean_x
    w = np.linalg.solve(xc.T @ xc + l2 * np.eye(x.shape[1]), xc.T @ (y - mean_y))
    return w, mean_y - float(mean_x @ w)


@dataclass
class EmotionModel:
    valence_w: np.ndarray
    valence_b: float
    arousal_w: np.ndarray
    arousal_b: float
    labels: list[str]
    centres: np.ndarray  # (labels, 2): each label's mean valence and arousal
    corpus: str
    encoder: str
    scores: dict

    def read(self, vectors: np.ndarray, texts: list[str] | None = None) -> list[dict]:
        cues = np.array([cue_balance(t) for t in texts]) if texts is not None else 0
        valence = np.clip(vectors @ self.valence_w + self.valence_b + CUE_WEIGHT * cues, -1, 1)
        arousal = np.clip(vectors @ self.arousal_w + self.arousal_b, 0, 1)
        out = []
        for v, a in zip(valence, arousal, strict=True):
            label = self.labels[int(np.argmin(((self.centres - [v, a]) ** 2).sum(axis=1)))]
            out.append({"valence": round(float(v), 2), "arousal": round(float(a), 2), "label": label})
        return out

    def save(self, path: Path) -> None:
        np.savez_compressed(path, valence_w=self.valence_w.astype(np.float32), valence_b=self.valence_b,
                            arousal_w=self.arousal_w.astype(np.float32), arousal_b=self.arousal_b,
                            labels=np.array(self.labels), centres=self.centres,
                            manifest=np.array([json.dumps({"corpus": self.corpus, "encoder": self.encoder,
                                                           "ridge": RIDGE, "scores": self.scores})]))

    @classmethod
    def load(cls, path: Path) -> EmotionModel:
        with np.load(path) as data:
            manifest = json.loads(str(data["manifest"][0]))
            return cls(valence_w=data["valence_w"], valence_b=float(data["valence_b"]), arousal_w=data["arousal_w"],
                       arousal_b=float(data["arousal_b"]), labels=[str(x) for x in data["labels"]],
                       centres=data["centres"], corpus=manifest["corpus"], encoder=manifest["encoder"],
                       scores=manifest["scores"])


def sign(value: float) -> int:
    return 0 if abs(value) < NEUTRAL else (1 if value > 0 else -1)


def emotion_features(texts: list[str]) -> np.ndarray:
    """What the model reads: the multilingual encoder's vector and the bundled English one's, side by side."""
    return np.hstack([local_use().embed_documents(list(texts)), local_minilm().embed_documents(list(texts))])


def train(lines: list[dict], vectors: np.ndarray, *, corpus: str, encoder: str) -> EmotionModel:
    """Fit on the lines not held out; score on the held-out fifth (valence sign, mean absolute errors)."""
    test = np.array([held_out_line(line["text"]) for line in lines])
    valence = np.array([float(line["valence"]) for line in lines])
    arousal = np.array([float(line["arousal"]) for line in lines])
    vw, vb = ridge(vectors[~test], valence[~test], RIDGE)
    aw, ab = ridge(vectors[~test], arousal[~test], RIDGE)
    labels = sorted({line["label"] for line in lines})
    centres = np.array([[valence[[line["label"] == label for line in lines]].mean(),
                         arousal[[line["label"] == label for line in lines]].mean()] for label in labels])
    model = EmotionModel(vw, vb, aw, ab, labels, centres, corpus, encoder, {})
    truth = [lines[i] for i in np.flatnonzero(test)]
    read = model.read(vectors[test], [line["text"] for line in truth])
    model.scores = {
        "held_out_lines": int(test.sum()),
        "valence_sign": round(float(np.mean([sign(r["valence"]) == sign(float(t["valence"]))
                                             for r, t in zip(read, truth, strict=True)])), 3),
        "valence_mae": round(float(np.mean([abs(r["valence"] - float(t["valence"]))
                                            for r, t in zip(read, truth, strict=True)])), 3),
        "arousal_mae": round(float(np.mean([abs(r["arousal"] - float(t["arousal"]))
                                            for r, t in zip(read, truth, strict=True)])), 3),
    }
    return model


@lru_cache(maxsize=1)
def _shipped() -> EmotionModel | None:
    if not EMOTION_MODEL_PATH.exists():
        logger.warning("no emotion model at %s: run manage.py train_emotion_model", EMOTION_MODEL_PATH)
        return None
    model = EmotionModel.load(EMOTION_MODEL_PATH)
    if EMOTION_LINES.exists() and model.corpus != corpus_hash():
        logger.warning("the emotion model was trained on another corpus: run manage.py train_emotion_model")
        return None
    return model


forgotten_on_reset(_shipped.cache_clear)


def emotions_of(texts: list[str]) -> list[dict | None]:
    """Each text's emotion {valence, arousal, label}, or None for each when no model ships."""
    with _lock:
        model = _shipped()
    if model is None or not texts:
        return [None] * len(texts)
    return model.read(emotion_features(texts), list(texts))  # type: ignore[return-value]


def reads_emotion_from_vectors(embedder: Embedder) -> bool:
    """Whether emotions_from_vectors reads this embedder's vectors (else it runs the encoders)."""
    return isinstance(embedder, ScriptWeightedEmbedder)


def emotions_from_vectors(texts: list[str], vectors: np.ndarray, embedder: Embedder) -> list[dict | None]:
    """Each text's emotion, read from the document vectors the default embedder (the pair) made of these very
    texts: its two parts are what emotion_features would compute again (to float rounding), so a save or a
    job's statement runs the encoders once for its vector and its emotion. Another embedder's vectors say
    nothing of the encoders: the encoders run (emotions_of)."""
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    if not isinstance(embedder, ScriptWeightedEmbedder) or vectors.shape[1] != embedder.dimensions:
        return emotions_of(texts)
    with _lock:
        model = _shipped()
    if model is None or not texts:
        return [None] * len(texts)
    minilm, use = embedder.parts(list(texts), vectors)
    return model.read(np.hstack([use, minilm]), list(texts))  # type: ignore[return-value]


def emotions_fill(memory_ids: list[str], *, vectors: Mapping[str, np.ndarray] | None = None,
                  embedder: Embedder | None = None) -> int:
    """Read the emotion of saved memories that have none (a save writes its memory without one: the encoders
    run after the commit, beside its embedding, not in the request). `vectors`: memory id -> the document
    vector of its whole text that `embedder` just made (vectors.EmbedReport.whole), read instead of running
    the encoders again. Returns how many were filled."""
    rows = list(MemoryItem.objects.filter(id__in=memory_ids, emotion__isnull=True).exclude(text=FORGOTTEN_TURN)
                .exclude(tags__contains=[Tag.EPISODE]).values_list("id", "text"))  # a session has no one feeling
    if not rows:
        return 0
    vectors = vectors or {}
    known = [(str(memory_id), text) for memory_id, text in rows if str(memory_id) in vectors]
    others = [(str(memory_id), text) for memory_id, text in rows if str(memory_id) not in vectors]
    read = dict(zip([memory_id for memory_id, _ in others], emotions_of([text for _, text in others]), strict=True))
    if known and embedder is not None:
        texts, matrix = [text for _, text in known], np.stack([vectors[memory_id] for memory_id, _ in known])
        read |= dict(zip([memory_id for memory_id, _ in known], emotions_from_vectors(texts, matrix, embedder),
                         strict=True))
    elif known:
        read |= dict(zip([memory_id for memory_id, _ in known], emotions_of([text for _, text in known]),
                         strict=True))
    return memories_emotion_fill({memory_id: emotion for memory_id, emotion in read.items() if emotion is not None})
