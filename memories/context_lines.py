"""The context block's lines and how they become text: near-duplicates collapsed, headings in the block's
language, rendered within max_chars without cutting a line (memories.context gathers the lines)."""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache

from memories.text import han_share, query_tokens


@dataclass
class ContextLine:
    """One line of the block, with what a tool-calling agent may want as data."""

    section: str  # profile | traits | people | group_profile | memories | working_memory
    text: str
    id: str
    date: str = ""
    kind: str = ""  # trait subtype, or memory type
    stage: str = ""
    confidence: float | None = None
    score: float | None = None
    collapsed: list[str] = field(default_factory=list)  # ids of near-duplicates folded into this line
    excerpt: bool = False  # the matching turns of an episode (not a statement the service kept)

    def as_dict(self) -> dict:
        body: dict = {"id": self.id, "text": self.text, "date": self.date, "kind": self.kind}
        if self.stage:
            body["stage"] = self.stage
        if self.confidence is not None:
            body["confidence"] = round(self.confidence, 3)
        if self.score is not None:
            body["score"] = round(self.score, 6)
        if self.collapsed:
            body["collapsed"] = self.collapsed
        return body


# --------------------------------------------------------------------------- pure rules


@lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    """A line's words (query_tokens), kept per text: the same memories come back answer after answer, and
    segmenting and stemming them again was most of a block's collapse (about 4 ms of a /context)."""
    return frozenset(query_tokens(text)) or frozenset({" ".join(text.split()).casefold()})


def near_duplicate(a: AbstractSet[str], b: AbstractSet[str], threshold: float) -> bool:
    """Two lines say the same when most of the shorter one's words are in the
    longer one (containment, not Jaccard: "likes hiking" and "likes hiking in
    the Alps" are one memory told twice)."""
    if not a or not b:
        return False
    return len(a & b) / min(len(a), len(b)) >= threshold


def takes_the_place_of(line: ContextLine, words: AbstractSet[str], other: ContextLine,
                      other_words: AbstractSet[str]) -> bool:
    """Whether a repeat replaces the earlier line it repeats: a fact (a statement the service kept)
    replaces an episode's excerpt that says the same, never the other way round (facts come first
    where they carry the same evidence); otherwise the richer (longer) line of the same section does.
    A trait is never replaced by a memory."""
    if line.section != other.section:
        return False
    if line.excerpt != other.excerpt:
        return other.excerpt
    return len(words) > len(other_words)


def collapse_near_duplicates(lines: list[ContextLine], threshold: float) -> list[ContextLine]:
    """Best first in, best first out: a line that repeats an earlier one folds
    into it and is listed in its `collapsed`. A line never shows another's
    words under its own id and kind: when the repeat takes the earlier one's
    place (takes_the_place_of), it does so whole (its id, kind, date and text).
    Each line is compared only with the kept lines that share a word with it (an index of their words):
    with a positive threshold no other can be its near-duplicate, and comparing every pair of a block's
    60-odd lines cost a /context about 2 ms."""
    kept: list[tuple[ContextLine, frozenset[str]]] = []
    holders: dict[str, set[int]] = {}  # a word -> the positions in `kept` of the lines that hold it
    for line in lines:
        words = _tokens(line.text)
        index = _first_near_duplicate(words, kept, holders, threshold)
        if index is None:
            for word in words:
                holders.setdefault(word, set()).add(len(kept))
            kept.append((line, words))
            continue
        other, other_words = kept[index]
        if takes_the_place_of(line, words, other, other_words):
            line.collapsed = [*other.collapsed, other.id, *line.collapsed]
            kept[index] = (line, words)
            for word in other_words:
                holders[word].discard(index)
            for word in words:
                holders.setdefault(word, set()).add(index)
        else:
            other.collapsed.append(line.id)
    return [line for line, _ in kept]


def _first_near_duplicate(words: frozenset[str], kept: list[tuple[ContextLine, frozenset[str]]],
                          holders: dict[str, set[int]], threshold: float) -> int | None:
    """The position of the first kept line `words` nearly duplicates (near_duplicate), or None."""
    if threshold <= 0:  # every pair is a near-duplicate: nothing to narrow
        candidates: list[int] = list(range(len(kept)))
    else:
        candidates = sorted({index for word in words for index in holders.get(word, ())})
    return next((index for index in candidates if near_duplicate(words, kept[index][1], threshold)),
                None)


LANGUAGES = ("en", "zh")
HEADINGS = {
    ("en", "markdown"): {"title": "## What you know about {subject}", "profile": "### Profile", "traits": "### Traits",
                         "people": "### People", "group_profile": "### The group", "memories": "### Memories",
                         "working_memory": "### Just now"},
    ("en", "plain"): {"title": "What you know about {subject}:", "profile": "Profile:", "traits": "Traits:",
                      "people": "People:", "group_profile": "The group:",
                      "memories": "Memories:", "working_memory": "Just now:"},
    ("zh", "markdown"): {"title": "## 关于 {subject} 你所知道的", "profile": "### 基本情况", "traits": "### 特质",
                         "people": "### 身边的人", "group_profile": "### 群组",
                         "memories": "### 记忆", "working_memory": "### 刚才"},
    ("zh", "plain"): {"title": "关于 {subject} 你所知道的：", "profile": "基本情况：", "traits": "特质：",
                      "people": "身边的人：", "group_profile": "群组：",
                      "memories": "记忆：", "working_memory": "刚才："},
}
TRAIT_KIND_NAMES = {"zh": {"behavior": "行为", "preference": "偏好", "core": "核心价值"}}


def block_language(setting: str, query: str, lines: list[ContextLine]) -> str:
    """The language of the block's headings: CONTEXT_LANGUAGE (or the request's `language`)
    when it names one; "auto" follows what the agent will read — the question and the
    lines together: Chinese when at least half of their words are (text.han_share)."""
    if setting in LANGUAGES:
        return setting
    words = " ".join([query, *(line.text for line in lines)])
    return "zh" if han_share(words) >= 0.5 else "en"


def _line_text(line: ContextLine, language: str) -> str:
    text = " ".join(line.text.split())
    if line.section == "traits":
        return f"- [{TRAIT_KIND_NAMES.get(language, {}).get(line.kind, line.kind)}] {text}"
    if line.section in ("profile", "people"):  # current versions only: the date adds nothing
        return f"- {text}"
    return f"- [{line.date}] {text}" if line.date else f"- {text}"


def render(lines: list[ContextLine], *, subject: str, form: str, max_chars: int,
           language: str = "en") -> tuple[str, list[ContextLine]]:
    """The block and the lines it holds, never longer than max_chars and never
    cutting a line: a line that does not fit is left out (a shorter later one
    may still fit). Sections keep their order; an empty section has no heading.
    Headings in `language` (the json form's keys are a schema and stay English)."""
    if form == "json":
        return _render_json(lines, subject=subject, max_chars=max_chars)
    headings = HEADINGS[(language, form)]
    title = headings["title"].format(subject=subject)
    out: list[str] = []
    shown: list[ContextLine] = []
    size = len(title)
    current = ""
    for line in lines:
        text = _line_text(line, language)
        heading = headings[line.section] if line.section != current else ""
        cost = len(text) + 1 + (len(heading) + 1 if heading else 0)
        if size + cost > max_chars:
            continue
        if heading:
            out.append(heading)
            current = line.section
        out.append(text)
        shown.append(line)
        size += cost
    return ("\n".join([title, *out]) if out else ""), shown


def _render_json(lines: list[ContextLine], *, subject: str, max_chars: int) -> tuple[str, list[ContextLine]]:
    shown: list[ContextLine] = []
    for line in lines:
        trial = [*shown, line]
        if len(_json_text(trial, subject)) <= max_chars:
            shown = trial
    return (_json_text(shown, subject) if shown else ""), shown


def _json_text(lines: list[ContextLine], subject: str) -> str:
    sections: dict[str, list[dict]] = {}
    for line in lines:
        sections.setdefault(line.section, []).append({k: v for k, v in line.as_dict().items()
                                                      if k in ("text", "date", "kind", "stage")})
    return json.dumps({"about": subject, **sections}, ensure_ascii=False, separators=(",", ":"))
