"""Whose statement a turn is: the English rules that tell a statement about its speaker from a remark about
the person addressed, the sentences that continue one, and how a speaker introduces themselves.
Part of the phrasing rules (memories/extraction/rules.py), kept apart so each module stays readable."""

from __future__ import annotations

import re

from memories.text import has_han

# A reply that is only its subject and a helping verb ("I definitely will!", "Nah, I haven't."): it means something
# only beside the question it answers, and alone it read "Maria definitely will".
BARE_REPLY_EN = re.compile(
    r"^(?:(?:yes|yeah|yep|nah|no|sure|ok|okay|oh|thanks|for sure)[,!.]?\s+)*I (?:(?:\w+ly|also|still|too) )*"
    r"(?:will|won't|did|didn't|do|don't|can|can't|have|haven't|had|hadn't|am|'m|would|wouldn't|should|could|must|"
    r"was|wasn't)(?: not| too| so| it| that)?\s*[.!]*$", re.I)
# Contact details said in the first person are always kept as a profile memory (the review gate then
# sees them: sensitive data waits for a person).
CONTACT_DETAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+|(?<![\w])\+?\d[\d\s().-]{6,}\d|微信号?|wechat", re.I)

# Whose statement is it? In English a statement about its speaker says so: I, me, my, or we for the speaker's
# family or group. A remark with no one in it ("Making memories together is so valuable") or one about the
# person addressed ("Your family looks so cheerful", "I'm so proud of you") is conversation, not a memory of
# the speaker (on LoCoMo's dev split, where friends cheer each other on, a fifth of what was kept; with the
# changes beside it, 938 facts instead of 1,322 at better recall: bench/results/2026-11-extraction.md).
# Chinese drops its subjects ("最近在学大提琴"): these rules are for English only.
SPEAKER_SINGULAR_EN = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.I)
_SPEAKER_PLURAL_EN = re.compile(r"\b(?:we|us|our|ours|ourselves)\b", re.I)
ADDRESSEE_EN = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b", re.I)
# The speaker's feelings about the person addressed: the "I" of these says nothing about the speaker.
_REACTION_EN = re.compile(
    r"\bI(?:'m| am| was|'d be|'ll be)? (?:so |really |very |super |truly |just |totally |always |all )*(?:happy|glad|"
    r"proud|impressed|pumped|sorry|thrilled|excited|stoked|inspired|moved|touched|grateful|thankful|honou?red|"
    r"here|there|rooting|cheering|curious|jealous|sure|amazed|blown away)\b|"
    r"\bI (?:really |totally |truly |so |just |can )*(?:hope|believe in|bet|know|wish|admire|appreciate|love (?:that|"
    r"how|it when|seeing|hearing|your|the way)|can(?:'t|not)? (?:imagine|tell|see|wait|believe)|think (?:that )?"
    r"you|agree|get (?:it|that|you)|understand|feel you|miss|remember)\b|\b(?:let|tell|show|send|ask|remind) me\b",
    re.I)
# An English sentence in which its speaker says I, me or my, or we ("I tried to stay calm and asked for help",
# "This design reminds me of the grit it takes", "We're brainstorming projects") is kept at a lower classifier
# probability than the shipped threshold: the reactions and remarks that made the threshold high no longer
# reach the classifier (about_the_speaker). Chosen on LoCoMo's dev split (bench/results/2026-11-extraction.md): every
# conversation's recall rose or held, the labelled utterances lost nothing and gained one ("I passed my
# driving test today").
SPEAKER_STATEMENT_THRESHOLD = 0.6


def speaks_of_itself(sentence: str) -> bool:
    """An English sentence in which its speaker says I, me or my, other than in a reaction to the person
    addressed ("I'm so glad you came" does not count), or we or our of their family or group, not to the
    person addressed ("We're brainstorming projects for the community"; "Keep this between us" is a request)."""
    if has_han(sentence):
        return False
    if SPEAKER_SINGULAR_EN.search(_REACTION_EN.sub(" ", sentence)):
        return True
    return bool(re.search(r"\b(?:we|our|ours)\b", sentence, re.I)) and not ADDRESSEE_EN.search(sentence)


# A sentence that goes on about what the one before it said ("I'm still volunteering at the shelter. It's
# fulfilling to lend a hand."): part of that statement, not a remark of its own.
_CONTINUATION_EN = re.compile(r"^(?:it|it's|that|that's|this|these|those|they|they're|she|he|which|so|and)\b",
                              re.I)


def with_continuations(sentences: list[str]) -> list[str]:
    """A message's sentences, each English statement about its speaker joined by the sentences after it that
    continue it ("It's fulfilling", "They swim every day") and say nothing of the speaker or of the person
    addressed: the memory keeps what the speaker said about the thing, and the continuation is no remark of its
    own. Measured on LoCoMo's dev split: 1.6 points of recall, no more facts (bench/results/2026-11-extraction.md)."""
    out: list[str] = []
    joinable = False
    for raw in sentences:
        sentence = raw.strip()
        if not sentence:
            continue
        if joinable and _CONTINUATION_EN.match(sentence) and not sentence.endswith("?") \
                and not about_the_speaker(sentence) and not ADDRESSEE_EN.search(sentence):
            out[-1] = f"{out[-1]} {sentence}"
            continue
        out.append(sentence)
        joinable = not has_han(sentence) and not sentence.endswith("?") and about_the_speaker(sentence) \
            and not BARE_REPLY_EN.match(sentence)
    return out


def about_the_speaker(sentence: str) -> bool:
    """Does an English sentence say something about its speaker (I, me, my; we, our without "you")?
    The speaker's feelings about the person addressed do not count ("I'm so proud of you"); contact details
    and Chinese always do (Chinese leaves its subject out)."""
    if has_han(sentence) or CONTACT_DETAIL.search(sentence):
        return True
    addressed = bool(ADDRESSEE_EN.search(sentence))
    own = _REACTION_EN.sub(" ", sentence) if addressed else sentence
    if SPEAKER_SINGULAR_EN.search(own):
        return True
    return not addressed and bool(_SPEAKER_PLURAL_EN.search(sentence))


# How a speaker introduces themselves: "my name is Maria", "call me Maria", "Hi! I'm Maria", "我叫小林".
_INTRODUCTION_EN = re.compile(r"\b(?i:my name is|my name's|call me)\s+([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b|"
                              r"^(?i:hi|hello|hey)(?i: there)?[!,.]*\s+I'm\s+([A-Z][a-z]+)\b")
# The words of an introduction, said of the speaker in the third person: "User's name is Maria", "用户叫小林".
INTRODUCING_WORDS = [(re.compile(r"\bmy name is\b|\bmy name's\b", re.I), "{user}'s name is"),
                     (re.compile(r"\bcall me\b", re.I), "call {user}"),
                     (re.compile(r"\bI'm\b(?= [A-Z])"), "{user} is"),
                     (re.compile("我(?=叫|的名字)"), "{user_zh}")]
_INTRODUCTION_ZH = re.compile(r"我(?:叫|的名字是|的名字叫)([\u4e00-\u9fff]{1,4}?)(?=[，。,！!？?、\s]|$)")


def introduced_name(texts: list[str]) -> str | None:
    """The name a speaker gives themselves in their turns, if they do: the facts about them then say
    "Maria lives in Lisbon", not "User lives in Lisbon"."""
    for text in texts:
        for pattern in (_INTRODUCTION_EN, _INTRODUCTION_ZH):
            match = pattern.search(text)
            if match:
                return next(group for group in match.groups() if group)
    return None
