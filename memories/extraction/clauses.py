"""A turn as the clauses the intent model reads: sentences, then the clauses of a compound one.

"I'm allergic to peanuts and I live in Porto" says two things, and a memory per turn kept one of
them. A clause starts where a new subject starts (", and I ...", " but my wife ...", "，我...",
"；"), or where a verb follows "and" with the subject left out ("... and live in Porto"), which
gets the subject back ("I live in Porto"). What a clause does is then the model's call; these
are rules of syntax only (where a clause may start), in both languages. Whether a word can be a
verb comes from lemminflect's English lexicon, not a word list of our own.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memories.relations import opening_relation_zh
from memories.text import has_han

# ASCII punctuation ends a sentence only before whitespace ("alice.smith@example.com" stays whole).
SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；!?])\s*|\n+")
STAGE_DIRECTION = re.compile(r"\[[^\[\]]{0,300}\]")  # "[shares a photo of a dog]": what a chat app shows

_SUBJECT_EN = r"(?:I|I'm|I've|I'd|I'll|my|we|we're|our|he|he's|she|she's|they|they're|his|her|their|it's)"
# ", and I ...", " but my wife ...", "; also she ...": a new subject after a conjunction.
_NEW_SUBJECT_EN = re.compile(rf"(?:,\s*|\s+)(?:and|but|plus|also|so|though|and also|while)\s+(?={_SUBJECT_EN}\b)"
                             rf"|,\s+(?=(?:I|I'm|I've|my)\b)|;\s*", re.I)
# " and live in Porto": "and" then a verb whose subject is the clause's before.
_AND_THEN = re.compile(r"\s+and\s+(?:also\s+|now\s+|still\s+)?(?=([a-z]+)\b)")
_PRONOUN_SUBJECT_EN = re.compile(r"^(?:I|I'm|I've|he|she|they|we)\b", re.I)

# Chinese: a clause starts after "，" or "；" where a new subject or a clause opener begins; a clause
# that only explains the one before it ("因为…", "所以…") stays with it.
_ZH_BREAK = re.compile("[，,；;]")
_ZH_OPENER = re.compile("^(?:而且|并且|另外|还有|不过|但是|但|然后|顺便|对了|同时|此外)")
_ZH_CONTINUATION = re.compile("^(?:因为|所以|因此|不然|否则|就是|结果|比如|像是|特别是|尤其是|which|because)")
_ZH_SUBJECT = re.compile("^(?:我|他|她|它|我们|他们|她们|咱们"
                         "|[\u4e00-\u9fff]{1,3}(?:也|就|还|都)?(?:是|在|有|喜欢|不))")
MIN_HAN_CLAUSE = 4  # shorter parts ("对吧", "挺好的") stay with their neighbour
# A part whose subject was left out starts a clause of its own when it opens with a predicate ("在医院当护士",
# "已经不学了", "想换工作"); a part that opens otherwise ("很严重那种", "每周两个晚上", "和平时一样") says more
# about the clause before it and stays with it.
_ZH_PREDICATE = re.compile("^(?:在|是|有|要|会|想|喜欢|爱|讨厌|住|做|当|学|去|开始|已经|还在|还是|也|不|没|每|"
                           "一般|平时|现在|最近|刚|打算|准备|换|搬|养|带|教|负责)")


def sentences(text: str) -> list[str]:
    """A turn's sentences, stage directions ("[shares a photo]") left out."""
    return [part.strip() for part in SENTENCE_SPLIT.split(STAGE_DIRECTION.sub(" ", text)) if part and part.strip()]


# Words that open what follows a verb ("work at", "teach the kids"): after "and", a word that can be a noun
# or a verb is read as a verb when one of these follows it.
_AFTER_A_VERB = frozenset("in at on for with to a an the my our as from near every out up by into".split())


@lru_cache(maxsize=4096)
def word_lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """An English word's lemmas by part of speech, from lemminflect's lexicon ({"VERB": ("live",), ...}).
    Imported here, on first use: the lexicon loads with the module."""
    from lemminflect import getAllLemmas  # lazily: lemminflect reads its tables on import (~0.13 s)

    return dict(getAllLemmas(word.lower()))


def can_be_verb(word: str, following: str = "") -> bool:
    """Whether an English word opens a verb phrase after "and" (lemminflect's lexicon): "live in Porto",
    "work at a bakery" split a clause; "cats and dogs", "salt and pepper" do not."""
    lemmas = word_lemmas(word)
    if "VERB" not in lemmas:
        return False
    return "NOUN" not in lemmas or following.lower() in _AFTER_A_VERB


def _english_clauses(sentence: str) -> list[str]:
    parts = [p.strip(" ,") for p in _NEW_SUBJECT_EN.split(sentence) if p and p.strip(" ,")]
    out: list[str] = []
    for part in parts:
        subject = _PRONOUN_SUBJECT_EN.match(part)
        pieces = [part]
        if subject:
            pieces = []
            rest = part
            while (match := _AND_THEN.search(rest)) and len(after := rest[match.end():].split()) >= 2 \
                    and can_be_verb(after[0], after[1]):
                pieces.append(rest[:match.start()])
                rest = f"{_subject_word(subject.group(0))} {rest[match.end():]}"
            pieces.append(rest)
        out.extend(p.strip(" ,") for p in pieces if p.strip(" ,"))
    return _with_short_joined(out, english=True)


def _subject_word(opening: str) -> str:
    """The subject an elided clause takes: "I'm allergic ... and live" -> "I live"."""
    return {"i'm": "I", "i've": "I"}.get(opening.lower(), opening)


def _chinese_clauses(sentence: str) -> list[str]:
    parts = [p.strip() for p in _ZH_BREAK.split(sentence) if p.strip()]
    out: list[str] = []
    lead = ""  # a short opening ("其实", "对了") goes with the clause after it
    first_person = any(p.startswith("我") for p in parts[:2])
    for part in parts:
        han = len(re.findall(r"[\u4e00-\u9fff]", part))
        if not out and han < MIN_HAN_CLAUSE and part is not parts[-1]:
            lead = f"{lead}{part}，"
            continue
        part = f"{lead}{part}" if lead and not _ZH_OPENER.match(lead) else part
        lead = ""
        opens = _ZH_SUBJECT.match(part) or _ZH_OPENER.match(part) or _ZH_PREDICATE.match(part)
        joins = out and (han < MIN_HAN_CLAUSE or _ZH_CONTINUATION.match(part) or not opens)
        if joins:
            out[-1] = f"{out[-1]}，{part}"
            continue
        body = _ZH_OPENER.sub("", part).strip(" ，,")
        if first_person and out and not _ZH_SUBJECT.match(body) and "我" not in body:
            # "我住在杭州，在医院当护士": the second clause is the speaker's too; "我婆婆腰不好，走不了太远": the
            # mother-in-law's (a clause without its subject continues the one before)
            body = f"我{opening_relation_zh(out[-1])}{body}"
        out.append(body or part)
    return out


def _with_short_joined(parts: list[str], *, english: bool) -> list[str]:
    """Parts of one or two words ("and so on", "too") stay with the clause before them."""
    out: list[str] = []
    for part in parts:
        if out and english and len(part.split()) <= 2:
            out[-1] = f"{out[-1]}, {part}"
        else:
            out.append(part)
    return out


def clauses(sentence: str) -> list[str]:
    """The clauses of one sentence (one, when it is not compound)."""
    sentence = sentence.strip()
    if not sentence:
        return []
    if has_han(sentence):
        return _chinese_clauses(sentence)
    return _english_clauses(sentence)


def turn_clauses(text: str) -> list[str]:
    """Every clause of a turn, in order."""
    return [clause for sentence in sentences(text) for clause in clauses(sentence)]
