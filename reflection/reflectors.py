"""Reflectors: what a group of memories says about a user's traits. The
offline HeuristicReflector reads preferences and habits stated in the
memories (and writes trait texts as a reviewer would); the LLMReflector asks
an OpenAI-compatible chat endpoint (LLM_BASE_URL)."""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from memories.closeness import without_names
from memories.extraction import (
    HABITUAL_PRESENT,
    is_about_someone_else,
    third_person_verb,
)
from memories.extraction.habits import HABIT_OR_AGAIN_EN, HABITUAL_ZH, PLAIN_FREQUENCY
from memories.extraction.intent import meaning_vectors
from memories.extraction.rules import UNKNOWN_SPEAKER
from memories.models import MemoryItem
from memories.search import profile_display_name
from memories.text import has_han, query_tokens
from memories.vocabulary import Tag
from reflection.evidence import is_evidence, read_evidence, said_stopped
from reflection.said import said_of
from reflection.wording import (
    chinese_trait_text,
    chinese_wish_from_turn,
    chinese_wish_text,
    english_trait_text,
    wording_rank,
)
from traits.models import EvidenceKind, Trait

logger = logging.getLogger(__name__)


@dataclass
class TraitHint:
    text: str
    subtype: str
    context: str
    key: str
    quality: str
    positive: bool = True  # "likes X" (True) or "does not like X"
    supports: list[MemoryItem] = field(default_factory=list)
    contradicts: list[MemoryItem] = field(default_factory=list)
    repeats: list[MemoryItem] = field(default_factory=list)  # agree, but from a session already counted
    ends: list[MemoryItem] = field(default_factory=list)  # the user said it ended
    why: dict[str, tuple[str, float | None]] = field(default_factory=dict)  # memory id -> (reason, closeness)
    reworded: str = ""  # an existing trait's better wording (a wish as the user last asked for it)
    existing_trait_id: uuid.UUID | None = None


class Reflector(Protocol):
    name: str

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]: ...


# --------------------------------------------------------------------------- offline heuristic

_POSITIVE = re.compile(r"\b(?:prefers?|loves?|likes?|enjoys?|adores?|wants?|is (?:a )?fan of)\s+(.+)", re.I)
_NEGATIVE = re.compile(r"\b(?:dislikes?|hates?|doesn't like|does not like|don't like|do not like|can't stand|"
                       r"avoids?)\s+(.+)", re.I)
_ZH_POSITIVE = re.compile(r"(?:喜欢|爱|偏好)(.+)")
_ZH_NEGATIVE = re.compile(r"(?:讨厌|不喜欢)(.+)")
_ZH_HABIT = re.compile(f"(?:{HABITUAL_ZH})(.+)")
# The subject a memory's text opens with: I, the user, or a name ("Alice always ..."); 我, 用户 or a name.
_SUBJECT = re.compile(r"^(?:I|the user|user|[A-Z][\w'-]*)(?::\s+(?i:another|one more|yet another)?|\s+)\s*(?=[A-Za-z])")
_ZH_SUBJECT = re.compile(r"^(?:我|用户)")
_CLAUSE_END = re.compile(r"[;.!?，；。！？]|,\s*(?=(?:it|that|this|which|and|but|so|because|i|my|he|she|they|we)\b)"
                         r"|\s(?:because|since|and it|but|which)\s", re.I)
_ADVERB = re.compile(r"^((?:(?:always|usually|often|never|sometimes|regularly|normally|really|also|still|"
                     r"generally)\s+)*)(.*)$", re.I)
_CONTEXT_WORDS = {
    "work": {"work", "office", "job", "meet", "boss", "colleagu", "deadlin", "project", "工作", "公司"},
    "learning": {"learn", "studi", "cours", "class", "lesson", "read", "学习", "课程"},
    "social": {"friend", "parti", "club", "team", "朋友", "聚会"},
    "personal": {"famili", "home", "wife", "husband", "kid", "dog", "cat", "cook", "家", "孩子"},
}
_QUALITY = {"prefer": "B", "love": "B", "hate": "B", "adore": "B"}


def object_key(phrase: str) -> str:
    """The first two content words of the object, stemmed: 'green tea in the morning' -> 'green tea'."""
    return " ".join(query_tokens(phrase)[:2])


# An object that names nothing without the sentence around it: "definitely wants to go", "really loves it".
_NO_OBJECT = re.compile(r"^(?:to\s+)?(?:go|do|come|see|be|try|it|that|this|them|those|these|one|so|too|a lot)\b"
                        r"(?:\s+(?:it|that|this|there|too|so much|a lot|again))*\W*$", re.I)


def _preference_object(phrase: str) -> str:
    """The key of what a preference is about, up to its clause's end; empty when it names nothing."""
    clause = _CLAUSE_END.split(phrase, maxsplit=1)[0].strip()
    return "" if _NO_OBJECT.match(clause) else object_key(clause)


def _context_of(text: str) -> str:
    tokens = set(query_tokens(text))
    for context, words in _CONTEXT_WORDS.items():
        if tokens & words or any(w in text for w in words if not w.isascii()):
            return context
    return "general"


def trait_is_positive(text: str) -> bool:
    """Whether a trait's text says the user does something or likes it ("Doesn't like X", "不喜欢X" do not)."""
    return not re.match(r"(?:does not|doesn't|dislikes|avoids|can't stand|不喜欢|讨厌|不)", text.strip(), re.I)


def memory_signal(memory: MemoryItem) -> tuple[str, str, str, str] | None:
    """(polarity +/-, key, subtype, quality) a memory gives about a trait, or None.
    A statement about someone else ("Alice's wife loves hiking") says nothing about the user's traits.
    A habit said as one (a frequency word: always, every morning, as usual, 每天) is quality B; a
    preference by a strong verb (prefer, love, hate) B, by a plain one C."""
    if is_about_someone_else(memory.text, memory.tags or []):
        return None
    text = memory.text
    for pattern, polarity in ((_NEGATIVE, "-"), (_POSITIVE, "+"), (_ZH_NEGATIVE, "-"), (_ZH_POSITIVE, "+")):
        match = pattern.search(text)
        if match and (key := _preference_object(match.group(1))):
            verb = re.findall(r"[a-z]+", match.group(0).lower())
            quality = _QUALITY.get((verb[0] if verb else "").rstrip("s"), "C")
            return polarity, key, "preference", quality
    if has_han(text):
        match = _ZH_HABIT.search(text)
        if match and object_key(match.group(1)):
            return "+", object_key(match.group(1)), "behavior", "B"
    elif HABIT_OR_AGAIN_EN.search(text):
        key = object_key(HABIT_OR_AGAIN_EN.sub(" ", habitual(_predicate(text))))  # "had another run" is a run
        if key:
            return "+", key, "behavior", "B"
    if Tag.WISH in (memory.tags or []) and _POSITIVE.search(text):  # asked for outright: as strong as a habit
        match = _POSITIVE.search(text)
        assert match is not None
        return "+", object_key(match.group(1)), "preference", "B"
    if "trait_hint" in (memory.tags or []):
        return "+", object_key(text), "behavior", "B"
    return None


def _third_person(predicate: str) -> str:
    """'have a flat white' -> 'has a flat white', 'always run' -> 'always runs' (the predicate of an
    'I ...' sentence)."""
    adverbs, predicate = _ADVERB.match(predicate).groups()  # type: ignore[union-attr]
    return adverbs + _third_person_verb(predicate)


def _third_person_verb(predicate: str) -> str:
    verb, _, rest = predicate.partition(" ")
    return f"{third_person_verb(verb)} {rest}".strip()


def _predicate(text: str) -> str:
    """What a statement says its subject does, without the subject, up to the clause's end, in the third
    person: 'I always run before work, it clears my head.' -> 'always runs before work'."""
    stripped = text.strip()
    first_person = bool(re.match(r"I\s", stripped))
    clause = _CLAUSE_END.split(_SUBJECT.sub("", stripped, count=1), maxsplit=1)[0].strip()
    return _third_person(clause) if first_person else clause


def _sentence(predicate: str) -> str:
    return (predicate[:1].upper() + predicate[1:]).strip()


# What ties a report to one occasion ("today", "this morning", "again", "another", an anchored date):
# a habit is what stays when they go.
_OCCASION = re.compile(r"\s*\([^)]*\)|\b(?:today|tonight|this (?:morning|evening|afternoon|week)|yesterday|"
                       r"again|another)\b\s*", re.I)


def habitual(predicate: str) -> str:
    """A reported occasion as the habit it shows: 'had another early morning run today, 6am as usual'
    -> 'has early morning run, 6am as usual' (the past verb in the habitual present, the occasion gone)."""
    words = predicate.split(" ", 1)
    if words and words[0].lower() in HABITUAL_PRESENT:
        predicate = " ".join([HABITUAL_PRESENT[words[0].lower()], *words[1:]])
    plain = _OCCASION.sub(" ", predicate)
    return re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", plain)).strip(" ,")


def trait_text(memory_text: str, polarity: str, subtype: str) -> str:
    """The trait as a reviewer would write it, in the memory's language: "Has a flat white most mornings",
    "Usually runs before work", "Prefers tea over coffee", "Doesn't like loud music"; "每天早上喝咖啡",
    "喜欢绿茶"."""
    if has_han(memory_text):
        body = _ZH_SUBJECT.sub("", memory_text.strip()).rstrip(" 。.！!")
        if subtype == "behavior":
            match = _ZH_HABIT.search(body)
            return match.group(0) if match else f"经常{body}"
        match = (_ZH_POSITIVE if polarity == "+" else _ZH_NEGATIVE).search(body)
        what = match.group(1) if match else body
        return f"喜欢{what}" if polarity == "+" else f"不喜欢{what}"
    predicate = _predicate(memory_text)
    if subtype == "behavior":
        habit = habitual(predicate)
        plain = habit
        for phrase, most in PLAIN_FREQUENCY.items():
            plain = re.sub(rf"\b{phrase}\b", most, plain, flags=re.I)
        had_most = plain != habit or re.search(r"\bmost \w+s\b", plain)
        plain = re.sub(r"\s+", " ", HABIT_OR_AGAIN_EN.sub(
            lambda m: m.group(0) if m.group(0).lower().startswith("most") else "", plain)).strip()
        return _sentence(plain if had_most else f"usually {plain}")
    pattern = _POSITIVE if polarity == "+" else _NEGATIVE
    match = pattern.search(predicate)
    if match is None:  # said in a later clause: "hasn't been to Japan yet, but really wants to visit Kyoto"
        later = pattern.search(memory_text)
        if later is not None:
            return _sentence(_CLAUSE_END.split(later.group(0), maxsplit=1)[0].strip())
    return _sentence(match.group(0) if match else predicate)


@dataclass(frozen=True)
class Evidence:
    """What one memory says about a trait: its kind (a habit, a preference, a standing wish about answers),
    whether it says the user does or likes it (+) or not (-), its quality and the trait subtype it feeds."""

    kind: str
    polarity: str
    quality: str
    subtype: str
    stops: bool = False  # the user said it ended ("no more soccer for me"): against the trait it matches


HABIT, PREFERENCE, WISH = "habit", "preference", "wish"
# Read on the user's own turn (reflection.evidence): it says the user does or likes what the trait it joins
# says, whatever that trait's polarity (a "can't stand coriander" trait is supported by "coriander tastes
# like soap to me"); only a stop speaks against it.
AGREES = "="


def trait_evidence(memory: MemoryItem) -> Evidence | None:
    """Whether a memory is evidence of a trait of the user's, and of which kind. The extractor says so by
    its tags (a habit, a wish: read by meaning, in any words); otherwise a preference or habit stated in so
    many words (memory_signal). A memory about someone else never is."""
    tags = memory.tags or []
    if is_about_someone_else(memory.text, tags):
        return None
    if Tag.WISH in tags:  # asked for outright
        return Evidence(WISH, "+", "B", "preference")
    if Tag.HABIT in tags:
        return Evidence(HABIT, "+", "B", "behavior")
    signal = memory_signal(memory)
    if signal is None:
        return None
    polarity, _, subtype, quality = signal
    return Evidence(HABIT if subtype == "behavior" else PREFERENCE, polarity, quality, subtype)


def trait_kind(trait: Trait) -> str:
    """The kind of evidence a trait grows from: written in its key ("wish:…"), else read off its subtype."""
    key = str(trait.memory.data.get("key") or "")
    kind = key.split(":", 1)[0] if ":" in key else ""
    if kind in (HABIT, PREFERENCE, WISH):
        return kind
    return HABIT if trait.subtype == "behavior" else PREFERENCE


# Evidence joins a trait when its meaning, in the multilingual encoder's space with the user's name left
# out, is at least this close to the trait's centre. Chinese sentences sit closer to one another in that
# space than English ones, so Chinese evidence needs more. Chosen on the dev stories of reflection/data
# (pairs of one kind): English 0.4 keeps 62% of same-family pairs and 6% of different-family ones (0.35:
# 75% / 15%); Chinese 0.45 keeps 68% / 5% (0.4: 84% / 14%). A centre is a sum, closer to each of its
# members than they are to one another.
TRAIT_MATCH = {"latin": 0.4, "han": 0.45}


# When and how often a habit is done: what every habit shares ("every morning", "每天早上"), so two
# different habits said with the same frequency looked alike in the encoder's space. Left out for grouping.
_OCCASION_WORDS = re.compile(
    r"\b(?:usually|always|often|normally|regularly|never|every (?:single )?(?:day|morning|evening|night|week|"
    r"weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|each (?:day|morning|evening|night)|"
    r"daily|nightly|weekly|most (?:days|mornings|evenings|nights)|as usual|again|in the (?:morning|evening)|"
    r"before bed|at night|on (?:weekends|sundays|saturdays))\b|每天(?:早上|晚上|中午|下午)?|每(?:周|晚|个周末|个月)|"
    r"(?:早上|晚上|中午|睡前|周末)|一般|通常|总是|经常|习惯|照常|照例|又|都", re.I)


def without_occasion(text: str) -> str:
    """A habit's text without its frequency and time of day: what it is about, for grouping."""
    return re.sub(r"\s{2,}", " ", _OCCASION_WORDS.sub(" ", text)).strip() or text


# The date extraction anchors a relative one with ("today (September 28, 2026)", "今天（2026年9月28日）"): it
# says when, not what, and left in it made the statements of one habit look less alike (on the dev stories'
# statements, same-family pairs over 0.4: 42% with it, 43% without; different-family: 11% and 12%; held
# out 44% / 2.7% and 47% / 1.4%).
_ANCHORED_DATE = re.compile(r"\s*[（(][^()（）]*(?:\d{4}|年|月)[^()（）]*[)）]")


# A user's own turns, read without the rewrite's names and dates, sit further apart than the rewrites did
# (a turn carries the rest of what was said): their closeness to join is lower. Chosen on the dev stories'
# pairs of turns of one kind said in two sessions (latin 0.35: 64% of same-habit pairs, 11% of others; 0.4:
# 51% / 4.8%; han 0.4: 62% / 10%, 0.45: 46% / 3%) and then on the dev stories' shown traits (bench-traits).
SAID_MATCH = {"latin": 0.35, "han": 0.4}


def trait_match(text: str, *, said: bool = False) -> float:
    return (SAID_MATCH if said else TRAIT_MATCH)["han" if has_han(text) else "latin"]


ANCHOR_EVIDENCE = 4  # a trait's centre: its text and its newest supporting memories, this many


@dataclass
class _Cluster:
    kind: str
    total: np.ndarray
    trait: Trait | None = None
    members: list[tuple[MemoryItem, Evidence, np.ndarray, str]] = field(default_factory=list)  # + the words

    def closeness(self, vector: np.ndarray) -> float:
        return float(np.dot(self.total, vector) / (np.linalg.norm(self.total) or 1.0))



def best_cluster(clusters: list[_Cluster], kind: str, vector: np.ndarray, threshold: float, *,
                 any_kind: bool = False) -> tuple[_Cluster, float] | None:
    """The trait (or new group) evidence of this kind joins: the closest of its kind, when close enough. A
    stop (`any_kind`) ends a habit or a liking alike, so it looks at every trait or group that has one."""
    scored = [(c.closeness(vector), c) for c in clusters
              if c.kind == kind or (any_kind and (c.trait is not None or c.members))]
    best = max(scored, key=lambda pair: pair[0], default=None)
    return (best[1], best[0]) if best is not None and best[0] >= threshold else None


def wish_trait_text(text: str) -> str:
    """A wish as a reviewer writes it, in its language, without whose it is: "Wants the assistant to keep
    answers short", "希望助手回答时简短一点"."""
    if has_han(text):
        return text.strip().rstrip(" 。.！!")
    said = re.sub(r"^(?:'s )?wish for the answers:\s*", "Asks for answers like this: ", text.strip(), flags=re.I)
    return _sentence(said.rstrip(" .!"))


def shared_opening(texts: list[str]) -> str:
    """The name a user's Chinese memories open with when no profile names them ("周敏每天…", "周敏晚上…"
    -> "周敏"): the opening that three or more of them share, two to four characters long. Left in, the
    shared name made every Chinese memory of a user look alike to the encoder."""
    han = [t for t in texts if has_han(t[:1])]
    if len(han) < 2:
        return ""
    opening = han[0][:4]
    for text in han[1:]:
        while opening and not text.startswith(opening):
            opening = opening[:-1]
    opening = _NOT_A_NAME.split(opening, maxsplit=1)[0]  # "周梅每天…" and "周梅每晚…" share 周梅每
    return opening if len(opening) >= 2 else ""


# Characters that open what a person does, not their name: where a shared opening stops.
_NOT_A_NAME = re.compile("[每我你他她的在是有不很都也会要去对和喜早晚今昨明上下一这那]")


def trait_evidence_memories(trait: Trait, limit: int) -> list[MemoryItem]:
    """A trait's newest supporting memories that still hold."""
    return [e.memory for e in trait.evidence.filter(kind=EvidenceKind.SUPPORTING, withdrawn_at__isnull=True)
            .select_related("memory").order_by("-created_at")[:limit]]


STOP = "stop"  # the kind of a statement that only says something ended


def evidence_read(memories: list[MemoryItem], said: dict[str, str]) -> list[tuple[MemoryItem, Evidence, str, bool]]:
    """Each memory that is evidence of a trait, what of, and the words its meaning is read on: the user's own
    turn where the memory came from one (reflection.said; read by the evidence model, and by said_stopped for
    an end), else its text (the extractor's tags and the stated-preference rules, trait_evidence); and whether
    the words are the user's turn. `said`: reflection.said.said_of for these memories."""
    turns = list(dict.fromkeys(said.values()))
    readings = read_evidence(turns)
    reading_of = dict(zip(turns, readings, strict=True)) if readings is not None else {}
    out = []
    for memory in memories:
        words = said.get(str(memory.id))
        if words is None or words not in reading_of:
            if (old := trait_evidence(memory)) is not None:
                out.append((memory, old, memory.text, False))
            continue
        reading = reading_of[words]
        kind = reading.kind if is_evidence(reading) else STOP
        if said_stopped(words):
            out.append((memory, Evidence(kind, AGREES, "A", _subtype(kind), stops=True), words, True))
        elif kind != STOP:
            out.append((memory, Evidence(kind, AGREES, "B", _subtype(kind)), words, True))
    return out


def joined_because(evidence: Evidence, turn: bool, closeness: float | None) -> str:
    """Why a statement joined its trait, as a reviewer reads it (TraitEvidence.reason)."""
    read = (f"the user's words read as {'an end of it' if evidence.stops else evidence.kind}" if turn
            else f"the memory reads as {evidence.kind}")
    where = "its first statement" if closeness is None else f"{closeness:.2f} close to its meaning"
    return f"{read}; {where}"


def _subtype(kind: str) -> str:
    return "behavior" if kind in (HABIT, STOP) else "preference"


def grouping_text(text: str, names: tuple[str, ...], *, said: bool) -> str:
    """What a statement's meaning is read on for grouping: without the user's name, the anchored date, and,
    for a memory's rewrite, the name it opens with (a user's own turn opens with no name: "Saturdays I do
    laps" keeps its "Saturdays")."""
    opening = [] if said or has_han(text) else [text.split(" ")[0]]
    return without_names(_ANCHORED_DATE.sub("", text), (*names, *opening, *UNKNOWN_SPEAKER.values())) or text


def said_by_the_user(text: str, names: tuple[str, ...]) -> str:
    """A memory's text with the user's name as the subject the trait rules know ("Harold Benning usually
    walks" -> "User usually walks", "刘国栋每天游泳" -> "用户每天游泳"). A Latin name is replaced as a whole word
    only: the user id is one of the names, and a user "u" had made "just" read "jUserst"."""
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        if has_han(name):
            text = text.replace(name, UNKNOWN_SPEAKER["zh"])
        else:
            text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", UNKNOWN_SPEAKER["en"], text)
    return text


class MeaningReflector:
    """Offline: evidence of a habit, a preference or a wish is grouped by meaning (the multilingual encoder,
    the user's name left out), so paraphrases and the same habit said in Chinese and English reinforce one
    trait; a new trait's text is its first evidence written as a reviewer would (trait_text)."""

    name = "meaning"

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        memories = [m for group in groups for m in group]
        evidence_of = {t.pk: trait_evidence_memories(t, ANCHOR_EVIDENCE) for t in traits}
        anchor_memories = [m for anchored in evidence_of.values() for m in anchored]
        said_all = said_of([*memories, *anchor_memories])  # one read of the turns for both
        found = evidence_read(memories, said_all)
        if not found:
            return []
        first = found[0][0]
        anchor_said = {str(m.id): said_all[str(m.id)] for m in anchor_memories if str(m.id) in said_all}
        anchors = {t.pk: [t.memory.text, *[anchor_said.get(str(m.id), m.text) for m in evidence_of[t.pk]]]
                   for t in traits}
        names = tuple(n for n in (profile_display_name(first.tenant_id, first.user_id), first.user_id,
                                  shared_opening([m.text for m, _, _, _ in found])) if n)
        said = {words for _, _, words, turn in found if turn} | set(anchor_said.values())
        texts = list(dict.fromkeys([words for _, _, words, _ in found] + [x for xs in anchors.values() for x in xs]))
        vectors = dict(zip(texts, meaning_vectors([grouping_text(x, names, said=x in said) for x in texts]),
                           strict=True))
        clusters = [_Cluster(trait_kind(t), np.sum([vectors[x] for x in anchors[t.pk]], axis=0), trait=t)
                    for t in traits]
        why: dict[str, tuple[str, float | None]] = {}
        for memory, evidence, words, turn in found:
            vector = vectors[words]
            joined = best_cluster(clusters, evidence.kind, vector, trait_match(words, said=turn),
                                  any_kind=evidence.stops)
            if joined is None and evidence.stops:
                if evidence.kind == STOP:
                    continue  # it ends nothing the user has
                evidence = Evidence(evidence.kind, evidence.polarity, evidence.quality, evidence.subtype)
                joined = best_cluster(clusters, evidence.kind, vector, trait_match(words, said=turn))
            closeness: float | None = None
            if joined is None:
                cluster = _Cluster(evidence.kind, np.zeros_like(vector))
                clusters.append(cluster)
            else:
                cluster, closeness = joined
            if not evidence.stops:
                cluster.total = cluster.total + vector
            cluster.members.append((memory, evidence, vector, words))
            why[str(memory.id)] = (joined_because(evidence, turn, closeness), closeness)
        hints = [_hint(c, names) for c in clusters if c.members]
        for hint in hints:
            hint.why = {str(m.id): why[str(m.id)] for m in [*hint.supports, *hint.repeats, *hint.contradicts,
                                                            *hint.ends]}
        return hints


def new_trait_text(memory: MemoryItem, evidence: Evidence, names: tuple[str, ...]) -> str:
    said = said_by_the_user(memory.text, names)
    if evidence.kind == WISH:
        return wish_trait_text(re.sub(r"^(?:User|用户)\s*", "", said))
    return without_the_user(trait_text(said, evidence.polarity, evidence.subtype))


def without_the_user(text: str) -> str:
    """A trait is about the user: the placeholder left inside its text reads as a reviewer writes it
    ("before User's shift" -> "before their shift", "用户的女儿" -> "自己的女儿"). Where it is the subject
    left inside ("Saturdays User cycles out", "每个周日早上用户都去") it goes: a trait has no subject (it had
    read "Saturdays them cycles out" on a conversation written after the rule)."""
    text = re.sub(r"\bUser's\b", "their", text)
    text = re.sub(r"\s*\bUser\b\s*", " ", text).strip()
    return text.replace("用户的", "自己的").replace("用户", "")


def _hint(cluster: _Cluster, names: tuple[str, ...]) -> TraitHint:
    """The hint of one group: an existing trait's own text, key and polarity (a wish reworded as the user last
    asked for it), or a new trait's from its best statement (best_member); evidence that agrees supports it,
    a statement of the other polarity contradicts it, and one that says it ended ends it."""
    agreeing = [member for member in cluster.members if not member[1].stops] or cluster.members
    first_memory = agreeing[0][0]
    trait = cluster.trait
    if trait is not None:
        text, subtype, positive = trait.memory.text, trait.subtype, trait_is_positive(trait.memory.text)
        key = str(trait.memory.data.get("key") or f"{cluster.kind}:{object_key(text)}")
    else:
        memory, evidence, _, words = best_member(cluster.kind, agreeing)
        text = member_text(memory, evidence, words, names)
        subtype = evidence.subtype
        positive = evidence.polarity == "+" if evidence.polarity in "+-" else trait_is_positive(text)
        key = f"{cluster.kind}:{object_key(text) or text[:40]}"
    hint = TraitHint(text=text, subtype=subtype, context=_context_of(first_memory.text), key=key,
                     quality=min(e.quality for _, e, _, _ in agreeing), positive=positive,
                     existing_trait_id=trait.pk if trait is not None else None)
    sessions = trait_evidence_sessions(trait) if trait is not None else set()
    for memory, evidence, _, _ in cluster.members:
        if evidence.stops:
            hint.ends.append(memory)
        elif evidence.polarity != AGREES and (evidence.polarity == "+") != positive:
            hint.contradicts.append(memory)
        elif once_per_session(memory, sessions):
            hint.supports.append(memory)
        else:
            hint.repeats.append(memory)
    if trait is not None and cluster.kind == WISH and hint.supports:
        memory, evidence, _, words = best_member(WISH, agreeing)
        hint.reworded = member_text(memory, evidence, words, names)
    return hint


def best_member(kind: str, members: list[tuple[MemoryItem, Evidence, np.ndarray, str]]
                ) -> tuple[MemoryItem, Evidence, np.ndarray, str]:
    """The statement a trait is worded from: a wish as the user last said it; a habit or liking by the
    statement that says how often, is tied to no one day, and is shortest (reflection.wording)."""
    if kind == WISH:
        return max(members, key=lambda member: (member[0].valid_at or member[0].created_at, member[0].created_at))
    return max(members, key=lambda member: wording_rank(member[3]))


def member_text(memory: MemoryItem, evidence: Evidence, words: str, names: tuple[str, ...]) -> str:
    """A trait's text from one statement: from the user's own turn where there is one (the extractor's rewrite
    puts a name for every "I" and 我 and keeps the day's date), a Chinese wish as "希望回答：…"; a memory
    saved without a conversation from its own text (new_trait_text)."""
    if words == memory.text:  # no turn behind it: the memory's own text
        return chinese_wish_text(memory.text) if evidence.kind == WISH and has_han(memory.text) else \
            new_trait_text(memory, evidence, names)
    if has_han(words):
        return chinese_wish_from_turn(words) if evidence.kind == WISH else chinese_trait_text(words)
    return english_trait_text(words, wish=evidence.kind == WISH)


def says_the_same(trait: Trait, memory: MemoryItem) -> bool:
    """Whether a memory is evidence for the trait, by the reflector's own rule: of the trait's kind, close
    enough in meaning, the same polarity (a superseding version that says this carries the support over)."""
    return any(hint.existing_trait_id == trait.pk and (memory in hint.supports or memory in hint.repeats)
               for hint in MeaningReflector().reflect([[memory]], [trait]))


def trait_evidence_sessions(trait: Trait) -> set[str]:
    return set(trait.evidence.filter(kind=EvidenceKind.SUPPORTING, withdrawn_at__isnull=True)
               .exclude(memory__session_id="").values_list("memory__session_id", flat=True))


def once_per_session(memory: MemoryItem, sessions: set[str]) -> bool:
    """Support counts once per conversation session (a habit said twice in one chat is one observation of
    it: a trait is what recurs across sessions); a memory saved outside any session counts on its own.
    `sessions` (the sessions already counted) takes this one's."""
    if not memory.session_id:
        return True
    if memory.session_id in sessions:
        return False
    sessions.add(memory.session_id)
    return True
