"""The labelled stories of reflection/data: users who say habits, preferences and standing wishes in other
words across sessions, in English, Chinese or both, with distractors (facts, plans, other people's habits).
What trait grouping is chosen on (the dev stories) and measured on (the held-out ones), by bench-traits and
the tests.

A story's utterance is labelled with the family of the trait it is evidence of (null: none). A shown trait
is right when every memory supporting it comes from utterances of one family; a family said in two or more
sessions is found when a shown trait's support is mostly its utterances. A family the user later said ended or asked
to forget is never to be shown: a shown trait of it is wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

STORIES_DIR = Path(__file__).resolve().parent / "data"
HELD_OUT_SHARE = 3  # one story in three is held out
ENDING_KINDS = frozenset({"stop", "forget"})  # labels that end a family (stories_r2_*: "I've quit the aqua class")


@dataclass(frozen=True)
class Utterance:
    text: str
    family: str | None
    kind: str


@dataclass(frozen=True)
class Story:
    id: str
    language: str
    speaker: str
    sessions: tuple[tuple[Utterance, ...], ...]

    @property
    def held_out(self) -> bool:
        return hashlib.sha1(self.id.encode("utf-8")).digest()[0] % HELD_OUT_SHARE == 0

    def repeated_families(self) -> set[str]:
        """Families said in two or more sessions and not ended: what should be a shown trait."""
        sessions_of: dict[str, set[int]] = {}
        for number, session in enumerate(self.sessions):
            for utterance in session:
                if utterance.family and utterance.kind not in ENDING_KINDS:
                    sessions_of.setdefault(utterance.family, set()).add(number)
        return {family for family, seen in sessions_of.items() if len(seen) >= 2} - self.ended_families()

    def ended_families(self) -> set[str]:
        """Families the user later said ended ("stop") or asked to forget ("forget"): never to be shown."""
        return {u.family for session in self.sessions for u in session if u.family and u.kind in ENDING_KINDS}


def read_stories(directory: Path = STORIES_DIR) -> list[Story]:
    out = []
    for path in sorted(directory.glob("stories_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                raw = json.loads(line)
                out.append(Story(id=raw["id"], language=raw["language"], speaker=raw["speaker"], sessions=tuple(
                    tuple(Utterance(u["text"], u.get("family"), u["kind"]) for u in session)
                    for session in raw["sessions"])))
    return out


@dataclass
class TraitScore:
    """Shown traits right / shown, and families said in two or more sessions found / such families."""

    shown: int = 0
    right: int = 0
    repeated: int = 0
    found: int = 0

    def add(self, other: TraitScore) -> None:
        self.shown += other.shown
        self.right += other.right
        self.repeated += other.repeated
        self.found += other.found

    @property
    def precision(self) -> float:
        return self.right / self.shown if self.shown else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.repeated if self.repeated else 1.0


def score_story(story: Story, shown_support: list[list[tuple[int, int]]]) -> TraitScore:
    """`shown_support`: for each shown trait, the (session, utterance) positions its supporting memories
    came from. A trait supported by no labelled utterance (a memory from nowhere) counts as wrong."""
    score = TraitScore(shown=len(shown_support))
    repeated = story.repeated_families()
    ended = story.ended_families()
    score.repeated = len(repeated)
    found: set[str] = set()
    for positions in shown_support:
        families = [story.sessions[s][u].family if s < len(story.sessions) and u < len(story.sessions[s])
                    else None for s, u in positions]
        if families and None not in families and len(set(families)) == 1 and families[0] not in ended:
            score.right += 1
        if families:
            family, count = Counter(families).most_common(1)[0]
            if family in repeated and count * 2 > len(families):
                found.add(family)
    score.found = len(found)
    return score
