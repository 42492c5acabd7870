"""What a user's own words say about their traits: the evidence model, read on the utterance a memory came
from rather than on its rewritten text.

The extractor rewrites a turn in the third person and tags it by the intent model, which was trained for what
to store, not for what recurs: on the dev stories of reflection/data it tagged 59% of the habits, standing
preferences and wishes users said, and its rewrites (a name for every "I", a relative's habit read as the
user's, "about-other" on the user's own routine) made the same habit look different from session to session.
The evidence model reads the turn itself: softmax regression over the intent model's features (the
multilingual and English encoders and the surface cues), trained on the dev stories' labelled utterances
(habit, preference, wish, none; a near miss — a one-off, another person's habit, a plan — is none), which is
what a trait is grown from. Cross-validated on the dev stories it finds evidence at precision 0.90 and
recall 0.84 (the intent model's tags: 0.82 and 0.59); the held-out stories are never read in training.

`manage.py train_trait_evidence` writes EVIDENCE_MODEL_PATH with a manifest (the training stories' hash and
the dev cross-validation figures); the same stories and command give the same weights.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from memories.extraction.intent import FACT_SELF, corpus_clauses, fit_softmax, intent_encoders, read_corpus
from memories.extraction.intent import HABIT as INTENT_HABIT
from memories.extraction.intent import WISH as INTENT_WISH
from memories.extraction.intent import features as intent_features
from memories.text import has_han
from memories.vocabulary import Slot

EVIDENCE_MODEL_PATH = Path(__file__).resolve().parent / "data" / "evidence_model.npz"
NONE, HABIT, PREFERENCE, WISH = "none", "habit", "preference", "wish"
EVIDENCE_KINDS = (NONE, HABIT, PREFERENCE, WISH)
# A label of the stories that is no evidence to grow a trait from: a stop ends one (said_stopped reads it),
# a forget request takes one back (the extractor's forget route).
NOT_EVIDENCE_LABELS = frozenset({"stop", "forget", "none"})
EVIDENCE_L2 = 1e-3  # chosen by five-fold cross-validation on the dev stories (1e-2: evidence recall 0.78)
EVIDENCE_STEPS = 400
# A turn is evidence when the model is at least this sure of a trait kind: on the dev stories' folds,
# 0.5 kept precision 0.90 at recall 0.84; 0.6 gave 0.93 / 0.79.
EVIDENCE_SURE = 0.5


@dataclass(frozen=True)
class EvidenceReading:
    kind: str
    probability: float


@dataclass
class EvidenceModel:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: np.ndarray
    stories: str  # the hash of the training stories
    scores: dict

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, mean=self.mean, scale=self.scale, weights=self.weights.astype(np.float32),
                            bias=self.bias, kinds=np.array(EVIDENCE_KINDS),
                            manifest=np.array([json.dumps({"stories": self.stories, "scores": self.scores})]))

    @classmethod
    def load(cls, path: Path) -> EvidenceModel:
        with np.load(path) as data:
            if tuple(data["kinds"]) != EVIDENCE_KINDS:
                raise ValueError(f"{path} was trained for other kinds: run manage.py train_trait_evidence")
            manifest = json.loads(str(data["manifest"][0]))
            return cls(mean=data["mean"], scale=data["scale"], weights=data["weights"], bias=data["bias"],
                       stories=manifest["stories"], scores=manifest["scores"])


def training_label(kind: str) -> str:
    """The evidence kind a story's utterance teaches: its own, or none for what grows no trait."""
    return NONE if kind in NOT_EVIDENCE_LABELS else kind


def stories_hash(rows: Sequence[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(sorted(rows), ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


# A story's utterance weighs this many of the intent corpus's lines: the stories are how users talk to an
# assistant across sessions, the corpus how they say one thing once (dev stories, five folds: weight 1
# gave evidence precision 0.849 and recall 0.788; see train()).
STORY_WEIGHT = 3.0


def fit(x: np.ndarray, labels: Sequence[str], *, stories: str, scores: dict | None = None,
        row_weights: np.ndarray | None = None) -> EvidenceModel:
    """Standardised features, then softmax regression from zeros (deterministic)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    y = np.array([EVIDENCE_KINDS.index(label) for label in labels])
    weights, bias = fit_softmax((x - mean) / scale, y, len(EVIDENCE_KINDS), l2=EVIDENCE_L2, steps=EVIDENCE_STEPS,
                                weights=row_weights)
    return EvidenceModel(mean=mean, scale=scale, weights=weights, bias=bias, stories=stories, scores=scores or {})


def turn_features(texts: Sequence[str]) -> np.ndarray:
    return intent_features(list(texts), intent_encoders())


_load_lock = threading.Lock()


@lru_cache(maxsize=1)
def _shipped() -> EvidenceModel | None:
    return EvidenceModel.load(EVIDENCE_MODEL_PATH) if EVIDENCE_MODEL_PATH.exists() else None


def shipped_model() -> EvidenceModel | None:
    with _load_lock:
        return _shipped()


def read_evidence(texts: Sequence[str], model: EvidenceModel | None = None) -> list[EvidenceReading] | None:
    """Each text's evidence kind and the model's certainty; None when no model ships (a checkout without
    reflection/data/evidence_model.npz: the reflector then reads the extractor's tags, as before)."""
    model = model or shipped_model()
    if model is None:
        return None
    if not texts:
        return []
    rows = model.probabilities(turn_features(texts))
    return [EvidenceReading(EVIDENCE_KINDS[int(np.argmax(row))], float(row.max())) for row in rows]


def is_evidence(reading: EvidenceReading) -> bool:
    return reading.kind != NONE and reading.probability >= EVIDENCE_SURE


# How people say a habit or a liking has ended ("no more soccer for me", "I've quit the aqua class",
# "I don't play chess any more", "现在不弹吉他了", "啤酒也戒了", "我就不去了").
_STOPPED_EN = re.compile(
    r"\b(?:no (?:more|longer)|not any ?more|done with|finished wi(?:th)?|(?:have |i've |i )?quit|"
    r"gave up|given up|giving up|stopped|(?:don't|do not|doesn't|won't) (?:\w+ ){0,3}any ?more|that's it for)\b",
    re.I)
_STOPPED_ZH = re.compile(r"不再|戒了|停了|没再|放弃了|(?:现在|已经|就|再也|彻底|也)?"
                         r"不(?!错|早|少|多|行|好|对|了|知道|用)[\u4e00-\u9fff]{1,3}了")


def said_stopped(text: str) -> bool:
    """Whether a turn says a habit or liking of the speaker's has ended (either language: a code-mixed turn
    says it in either)."""
    return bool(_STOPPED_EN.search(text) or (has_han(text) and _STOPPED_ZH.search(text)))


def dev_utterances(stories: Sequence) -> list[tuple[str, str, str]]:
    """(story id, text, evidence label) of every utterance of the dev stories (reflection.stories)."""
    return [(story.id, u.text, training_label(u.kind)) for story in stories if not story.held_out
            for session in story.sessions for u in session]


INTENT_ROWS = "intent corpus"  # the story id of the intent corpus's rows: always trained on, never scored


def intent_corpus_rows() -> list[tuple[str, str, str]]:
    """The extractor's intent corpus (memories/extraction_data/intents) as evidence rows: its habits and wishes,
    its statements of liking (a fact about the speaker in the preference slot) and, as none, everything else.
    Without them the model, trained on the stories alone, read the plainest habit ("I usually run before
    work.") as none: the stories say habits at length."""
    label = {INTENT_HABIT: HABIT, INTENT_WISH: WISH}
    return [(INTENT_ROWS, c.text, label.get(c.intent) or (PREFERENCE if c.intent == FACT_SELF and
                                                           c.slot == Slot.PREFERENCE else NONE))
            for c in corpus_clauses(read_corpus())]


def cross_validated(x: np.ndarray, rows: Sequence[tuple[str, str, str]], folds: int = 5) -> dict:
    """Evidence precision and recall on the dev stories over `folds` folds of whole stories (a story's
    paraphrases never sit on both sides; the intent corpus's rows are always on the training side)."""
    ids = sorted({story for story, _, _ in rows} - {INTENT_ROWS})
    fold_of = {story: number % folds for number, story in enumerate(ids)}
    fold_of[INTENT_ROWS] = -1
    predicted: list[str] = [NONE] * len(rows)
    for fold in range(folds):
        train = np.array([fold_of[story] != fold for story, _, _ in rows])
        model = fit(x[train], [label for (_, _, label), t in zip(rows, train, strict=True) if t], stories="",
                    row_weights=row_weights(rows)[train])
        for index in np.flatnonzero(~train):
            row = model.probabilities(x[index:index + 1])[0]
            kind = EVIDENCE_KINDS[int(np.argmax(row))]
            predicted[index] = kind if kind != NONE and row.max() >= EVIDENCE_SURE else NONE
    scored = [i for i, (story, _, _) in enumerate(rows) if story != INTENT_ROWS]
    truth = [rows[i][2] != NONE for i in scored]
    found = [predicted[i] != NONE for i in scored]
    hits = sum(t and f for t, f in zip(truth, found, strict=True))
    return {"dev utterances": len(scored), "evidence precision": round(hits / max(sum(found), 1), 3),
            "evidence recall": round(hits / max(sum(truth), 1), 3),
            "kind right": round(sum(predicted[i] == rows[i][2] for i in scored if rows[i][2] != NONE)
                                / max(sum(truth), 1), 3)}


def train(stories: Sequence) -> EvidenceModel:
    """The evidence model from the dev stories, with its cross-validated figures in the manifest."""
    rows = dev_utterances(stories) + intent_corpus_rows()
    x = turn_features([text for _, text, _ in rows])
    scores = cross_validated(x, rows)
    return fit(x, [label for _, _, label in rows], stories=stories_hash([(t, lab) for _, t, lab in rows]),
               scores=scores, row_weights=row_weights(rows))


def row_weights(rows: Sequence[tuple[str, str, str]]) -> np.ndarray:
    return np.array([1.0 if story == INTENT_ROWS else STORY_WEIGHT for story, _, _ in rows])
