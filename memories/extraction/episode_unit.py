"""Seed 002's episode unit, as pure functions: who sees which turn of a conversation (each participant's
episode holds their own turns and what was said to them), and, offline, a unit's title, summary, subject
and keywords built from its owner's own words; with an LLM, the model's {"title", "content"} read.

"What was said to them" (docs/extraction.md, "Episodes"):
- an assistant turn goes to the participant whose turn it answers: the last user turn before it (before any
  user turn: the job's user);
- another participant's turn goes to the participants it names as whom it speaks to: a name at its opening
  ("Ann, ...", "Hey Ann!", "@Ann", "小林，...") or an @name anywhere. A turn that names no one was said to
  the room: it stays in its speaker's episode only.
A unit's title, summary, subject and keywords come from its owner's own turns only, so erasing another
participant takes their turns (and the narratives that read them) and leaves the rest of the unit as it was.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from memories.excerpts import FORGOTTEN_TURN
from memories.extraction.clauses import sentences, word_lemmas
from memories.extraction.rewrite_en import (
    DISCOURSE,
    GREETING_LEAD,
    report_as_sentence,
    to_third_person,
    without_address,
)
from memories.extraction.rewrite_zh import chinese_third_person
from memories.extraction.rules import RulesExtractor
from memories.text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, han_share, query_tokens

# The summary's length: characters of Latin text, Han characters of Chinese, and at most this many
# sentences: about half of a LoCoMo session summary (two speakers, ~1,080 characters on the dev
# conversation). Longer keeps more of the observations (bench/episode_units.py, dev: 300 chars 0.36,
# 400 0.48, 480 0.56); a summary is meant short.
SUMMARY_CHARS = {"en": 480, "zh": 160}
SUMMARY_SENTENCES = 6
KEYWORDS = 8
# A sentence with fewer content words says too little for a summary ("That's so cool!").
MIN_CONTENT_WORDS = 2


@dataclass(frozen=True)
class Seen:
    """One turn as the perspective rule reads it: who said it (a user id; "" for the assistant)."""

    index: int
    speaker_id: str
    text: str


def addressed(text: str, name: str) -> bool:
    """Whether a turn speaks to `name`: the name at its opening, after a greeting or interjection at most
    ("Ann, ...", "Hey Ann!", "小林，..."), followed by punctuation; or "@name" anywhere."""
    if not name.strip():
        return False
    escaped = re.escape(name.strip())
    if re.search(rf"@{escaped}(?![\w])", text, re.I):
        return True
    opening = DISCOURSE.sub("", GREETING_LEAD.sub("", text.strip()))
    greeting = r"(?:(?:hi|hello|hey|dear|thanks|thank you|morning|good morning|ok|okay|so|yes|no)\s+)?"
    return bool(re.match(rf"{greeting}{escaped}(?:\s*[,，:：!！.。、~]|\s*$)", opening, re.I))


def perspectives(turns: Sequence[Seen], names: dict[str, str], job_user: str) -> dict[str, list[int]]:
    """Which turns (indices, in order) each participant's episode holds: their own, the assistant's answers
    to them, and others' turns addressed to them by name. names: participant name -> user id."""
    seen: dict[str, list[int]] = {}
    last_user = ""
    for turn in turns:
        if not turn.speaker_id:
            seen.setdefault(last_user or job_user, []).append(turn.index)
            continue
        last_user = turn.speaker_id
        seen.setdefault(turn.speaker_id, []).append(turn.index)
        for name, user_id in names.items():
            if user_id != turn.speaker_id and addressed(turn.text, name):
                if turn.index not in seen.setdefault(user_id, []):
                    seen[user_id].append(turn.index)
    return seen


# Words that carry no topic of their own (a keyword list of "thing", "lot" and "today" says nothing).
_GENERIC = frozenset("""thing things lot lots stuff today tomorrow yesterday week weeks year years day days time
    times way ways kind sort bit really great good nice awesome amazing cool glad happy sure thanks thank hope
    love like feel felt think thought know knew want wanted going gone make made made getting get got see saw
    look looks looking well much many new old last next also even still always never just maybe something
    anything everything someone everyone people person hey hi hello wow yeah totally definitely sounds sound
    keep kept lately recently soon mean means said say says tell told talk talking doing done pretty super
    must gonna wanna lol haha right oh okay ok yes one two first end sharing share wonderful fun tough
    yep nope kinda sorta btw""".split())
_TOPIC_POS = frozenset({"NOUN", "ADJ", "PROPN"})
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+|\d[\d,.:]*")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|we|our|us)\b|我", re.I)
_SECOND_PERSON = re.compile(r"\byou(?:'re|'ve|'ll|r|rs|rself)?\b|你", re.I)
_RELATIVE_DAYS = {"yesterday": -1, "today": 0, "tomorrow": 1, "last night": -1, "昨天": -1, "今天": 0, "明天": 1}


@dataclass(frozen=True)
class Digest:
    title: str
    summary: str
    subject: str
    keywords: tuple[str, ...]
    language: str


def language_of(texts: Sequence[str]) -> str:
    """"zh" when Chinese carries the conversation (han_share ≥ 0.3), else "en"."""
    return "zh" if han_share(" ".join(texts)) >= 0.3 else "en"


def episode_digest(own: Sequence[tuple[str, date | None]], *, name: str, others: Sequence[str] = (),
                   language: str | None = None) -> Digest:
    """A unit's title, summary, subject and keywords from its owner's own turns ((text, day) pairs): the
    summary is their most telling sentences (no questions, greetings, thanks or compliments to others), in
    the third person and in order, a relative day given its date; keywords are the phrases they used most."""
    language = language or language_of([text for text, _ in own])
    picked = _summary_sentences(own, name=name, others=others, language=language)
    keywords = _keywords([text for text, _ in own], name=name, others=others, language=language)
    day = next((d for _, d in own if d is not None), None)
    return Digest(title=_title(keywords, day, language), summary=("" if language == "zh" else " ").join(picked),
                  subject=keywords[0] if keywords else "", keywords=tuple(keywords), language=language)


def _candidates(own: Sequence[tuple[str, date | None]], *, name: str, others: Sequence[str],
                language: str) -> list[tuple[float, int, str]]:
    """(score, position, sentence in the third person) of every sentence worth a summary."""
    out: list[tuple[float, int, str]] = []
    position = 0
    for text, day in own:
        if RulesExtractor.small_talk(text):
            continue
        for sentence in sentences(text):
            position += 1
            sentence = without_address(GREETING_LEAD.sub("", sentence), [*others, name]).strip(" ,;:-—")
            content = [t for t in query_tokens(sentence) if t.casefold() not in {n.casefold() for n in others}]
            if sentence.endswith(("?", "？")) or len(content) < MIN_CONTENT_WORDS:
                continue
            score = min(len(content), 12) + (3.0 if _FIRST_PERSON.search(sentence) else 0.0)
            score += 1.5 * len(re.findall(r"\b[A-Z][a-z]+|\d", sentence[1:]))
            if not _FIRST_PERSON.search(sentence) and (_SECOND_PERSON.search(sentence) or _calls(sentence, others)):
                score -= 6.0  # said to the listener ("You're a great painter", "That's cool, Caroline!")
            out.append((score, position, _rewritten(sentence, name, day, language)))
    return out


def _calls(sentence: str, others: Sequence[str]) -> bool:
    """Whether a sentence ends by calling another participant by (the start of) their name: ", Mel!"."""
    called = re.search(r"[,，]\s*(\w+)\s*[.!。！~]*$", sentence)
    return bool(called) and any(name.casefold().startswith(called.group(1).casefold()) for name in others
                                if called and len(called.group(1)) >= 2)


def _summary_sentences(own: Sequence[tuple[str, date | None]], *, name: str, others: Sequence[str],
                       language: str) -> list[str]:
    """The best-scoring sentences that fit the summary's length, in the order they were said."""
    budget, used = SUMMARY_CHARS[language], 0
    chosen: list[tuple[int, str]] = []
    seen: set[str] = set()
    for score, position, sentence in sorted(_candidates(own, name=name, others=others, language=language),
                                            key=lambda c: (-c[0], c[1])):
        key = " ".join(query_tokens(sentence))
        if score <= 0 or key in seen or len(chosen) >= SUMMARY_SENTENCES:
            continue
        if chosen and used + len(sentence) > budget:
            continue
        seen.add(key)
        chosen.append((position, sentence))
        used += len(sentence)
    return [sentence for _, sentence in sorted(chosen)]


def _rewritten(sentence: str, name: str, day: date | None, language: str) -> str:
    """A sentence in the third person, ended, its relative day dated: "I went there yesterday" ->
    "Caroline went there yesterday (7 May 2023)."."""
    if day is not None:
        for word, offset in _RELATIVE_DAYS.items():
            when = day + timedelta(days=offset)
            shown = f"（{_day_zh(when)}）" if language == "zh" else f" ({_day_en(when)})"
            sentence = re.sub(rf"(?<![\w])({re.escape(word)})(?![\w])", rf"\1{_escaped(shown)}", sentence,
                              count=1, flags=re.I)
    if language == "zh":
        sentence = chinese_third_person(sentence, name)
        return sentence if sentence.endswith(("。", "！", "!", ".")) else sentence + "。"
    sentence = _with_subject(to_third_person(sentence, name), name)
    sentence = sentence[0].upper() + sentence[1:]
    return sentence if sentence.endswith((".", "!")) else sentence + "."


def _with_subject(sentence: str, name: str) -> str:
    """A report said without its subject gets the speaker's name: "Gonna start a class" -> "Caroline is gonna
    start a class"; "Went hiking with the kids" -> "Caroline went hiking with the kids"."""
    first, _, rest = sentence.partition(" ")
    lowered = first.casefold()
    if lowered in ("gonna", "going", "planning", "hoping", "thinking", "trying", "wanna"):
        return f"{name} {'wants' if lowered == 'wanna' else 'is ' + lowered} {rest}".strip()
    if lowered == "just" and rest:
        return f"{name} just {rest}"
    if lowered.endswith("ed") and set(word_lemmas(lowered)) == {"VERB"}:
        return report_as_sentence(sentence, name)
    return sentence


def _topic_word(word: str) -> bool:
    """A word a topic can be made of: a noun or adjective, or a word the lexicon does not know (a name)."""
    kinds = set(word_lemmas(word.casefold()))
    return not kinds or bool(kinds & _TOPIC_POS)


def _keywords(texts: Sequence[str], *, name: str, others: Sequence[str], language: str) -> list[str]:
    """The owner's topics: phrases of up to three content words, scored by how often their words were used
    (a name or number counts more); the speakers' own names left out."""
    names = {n.casefold() for part in (name, *others) for n in part.split()}
    if language == "zh":
        return _chinese_keywords(texts, names)
    runs: list[list[str]] = []
    shown: dict[str, str] = {}
    for text in texts:
        for part in (p for sentence in sentences(text) for p in re.split(r"[,;:()\u2013\u2014\"]|\s-\s", sentence)):
            words, run = _WORD.findall(part), list[str]()
            for position, word in enumerate(words):
                if position and word[0].isupper():  # a name or a place said mid-sentence keeps its capital
                    shown.setdefault(word.casefold(), word)
                bare = word.casefold().strip("'’-")
                if bare in ENGLISH_STOPWORDS or bare in _GENERIC or bare in names or len(bare) < 3 \
                        or "'" in bare or "’" in bare or not _topic_word(bare) \
                        or any(n.startswith(bare) for n in names):  # "Mel" of Melanie
                    if run:
                        runs.append(run)
                    run = []
                    continue
                run.append(word)
            if run:
                runs.append(run)
    counts = Counter(w.casefold() for run in runs for w in run)
    shown.update({w.casefold(): w for run in runs for w in run if w[1:2].isupper()})  # "LGBTQ" stays
    scored: dict[str, float] = {}
    for run in runs:
        for size in (3, 2, 1):
            for start in range(len(run) - size + 1):
                phrase = run[start:start + size]
                key = " ".join(shown.get(w.casefold(), w.casefold()) for w in phrase)
                value = sum(counts[w.casefold()] for w in phrase) * (1.0 + 0.25 * (size - 1))
                value += sum(0.5 for w in phrase if w[0].isupper() or w[0].isdigit())
                scored[key] = max(scored.get(key, 0.0), value)
    return _distinct(sorted(scored.items(), key=lambda item: (-item[1], item[0])))


def _chinese_keywords(texts: Sequence[str], names: set[str]) -> list[str]:
    """jieba's TF-IDF tags of the owner's Chinese words (nouns, names, places, verbal nouns)."""
    import jieba.analyse  # lazily, as memories.text loads jieba: only Chinese text needs it

    tags = jieba.analyse.extract_tags("\n".join(texts), topK=KEYWORDS * 2, withWeight=True,
                                      allowPOS=("n", "nr", "ns", "nt", "nz", "vn", "eng"))
    return _distinct([(tag, float(weight)) for tag, weight in tags
                      if tag.casefold() not in names and tag not in CHINESE_STOPWORDS and len(tag) > 1])


def _distinct(scored: Sequence[tuple[str, float]]) -> list[str]:
    """The best phrases, none repeating a word of one already taken."""
    taken: list[str] = []
    words: set[str] = set()
    for phrase, _ in scored:
        parts = set(phrase.split()) if " " in phrase else {phrase}
        if parts & words:
            continue
        taken.append(phrase)
        words |= parts
        if len(taken) == KEYWORDS:
            break
    return taken


def _escaped(replacement: str) -> str:
    return replacement.replace("\\", "\\\\")


def _day_en(day: date) -> str:
    return f"{day.day} {day.strftime('%B')} {day.year}"


def _day_zh(day: date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _title(keywords: Sequence[str], day: date | None, language: str) -> str:
    """A short title in the conversation's language: its first topics and its day."""
    if language == "zh":
        topics = "、".join(keywords[:2])
        when = _day_zh(day) if day else ""
        return f"{topics}（{when}）" if topics and when else topics or (f"{when}的对话" if when else "对话")
    topics = ", ".join(keywords[:3])
    topics = topics[0].upper() + topics[1:] if topics else ""
    when = _day_en(day) if day else ""
    return f"{topics} ({when})" if topics and when else topics or (f"Conversation on {when}" if when
                                                                     else "Conversation")


def unit_of(turns: Sequence[dict[str, Any]], user_id: str) -> dict[str, Any]:
    """An episode's unit fields from its turns (writing.episodes calls it as its Digester): the owner's own
    turns, named as they were said, the other speakers' names left out of the summary and keywords."""
    own = [t for t in turns if t.get("role") == "user" and t.get("speaker_id", user_id) == user_id
           and t.get("text") != FORGOTTEN_TURN]
    name = Counter(str(t.get("speaker", "")) for t in own).most_common(1)[0][0] if own else ""
    others = sorted({str(t.get("speaker", "")) for t in turns if t.get("role") == "user"} - {name, ""})
    digest = episode_digest([(str(t["text"]), _day(t.get("at"))) for t in own], name=name, others=others,
                            language=language_of([str(t.get("text", "")) for t in turns]))
    return {"title": digest.title, "summary": digest.summary, "subject": digest.subject,
            "keywords": list(digest.keywords), "language": digest.language}


def _day(at: object) -> date | None:
    try:
        return date.fromisoformat(str(at)[:10])
    except ValueError:
        return None


def read_narrative(reply: str) -> tuple[str, str]:
    """The model's {"title", "content"}; a reply that is not that JSON is read as the content itself."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    try:
        parsed = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        return "", text
    if not isinstance(parsed, dict):
        return "", text
    title, content = parsed.get("title"), parsed.get("content")
    return (" ".join(str(title).split())[:120] if isinstance(title, str) else "",
            " ".join(content.split()) if isinstance(content, str) else "")
