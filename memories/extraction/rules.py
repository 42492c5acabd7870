"""Phrasing rules the meaning extractor rewrites with (memories/extraction/meaning.py decides what a clause
does; these say how it is kept): slot rules that give a key and value (name, residence, work), the
wording of habits, wishes and forget requests, introductions, whose statement a turn is. English
rewriting lives in rewrite_en.py, Chinese in rewrite_zh.py.

RulesExtractor, the offline extractor before the intent model (slot rules, then the durable-statement
classifier, memories/durable.py), stays for comparison in benches and for the tests of its helpers;
EXTRACTION_PROVIDER=rules now names the meaning extractor."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memories.durable import RULE_VETO, classify, durable_threshold
from memories.extraction.base import (
    ExistingMemory,
    ExtractedStatement,
    Message,
    anchor_relative_dates,
)
from memories.extraction.clauses import STAGE_DIRECTION
from memories.extraction.habits import HABIT_OR_AGAIN_EN, HABIT_OR_AGAIN_ZH
from memories.extraction.rewrite_en import (
    DISCOURSE,
    GREETING_LEAD,
    name_the_addressee,
    report_as_sentence,
    to_third_person,
    with_its_subject,
    without_address,
)
from memories.extraction.rewrite_zh import RELATION_ZH, chinese_third_person
from memories.extraction.speaker import (
    ADDRESSEE_EN,
    BARE_REPLY_EN,
    CONTACT_DETAIL,
    INTRODUCING_WORDS,
    SPEAKER_SINGULAR_EN,
    SPEAKER_STATEMENT_THRESHOLD,
    about_the_speaker,
    introduced_name,
    speaks_of_itself,
    with_continuations,
)
from memories.models import MemoryType
from memories.text import has_han
from memories.vocabulary import UNKNOWN_SPEAKER, Tag

# --------------------------------------------------------------------------- rules


# ASCII punctuation ends a sentence only before whitespace ("alice.smith@example.com" stays whole); unlike
# clauses.SENTENCE_SPLIT, which splits after an ASCII "!" or "?" with no space after it too.
RULES_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
SMALL_TALK = re.compile(
    r"^(hi|hello|hey|thanks|thank you|ok|okay|sure|bye|good (morning|night|evening)|lol|cool|great|nice|yes|no|"
    r"你好|您好|谢谢|好的|再见|嗯|哈哈)\b", re.I)
_SMALL_TALK_WORDS = re.compile(r"(?:hi|hello|hey|thanks|thank|you|ok|okay|bye|goodbye|cheers|cool|great|nice|sure|"
                               r"yes|yeah|no|lol|haha|see|ya|later|good|night|morning|so|much|too|again|"
                               r"你好|您好|谢谢|好的|再见|嗯|哈哈|拜拜|好|早|晚安)+")
HEDGE = re.compile(r"\b(maybe|probably|i think|i guess|perhaps|not sure|might)\b|可能|也许|大概|好像", re.I)

def _clauses(sentence: str) -> list[str]:
    """A sentence's clauses where a new subject starts ("Please keep it brief, I like short answers")."""
    return [part.strip() for part in re.split(r",\s*(?=(?:I|I'm|I'd|my|please)\b)|，(?=我|请)", sentence)
            if part.strip()]


@dataclass
class _Rule:
    pattern: re.Pattern
    memory_type: str
    importance: float
    tag: str
    key: str = ""
    value_group: int = 0


_EN_RULES = [
    _Rule(re.compile(r"\bmy name is ([\w .'-]+)", re.I), MemoryType.PROFILE, 0.9, Tag.IDENTITY, "name", 1),
    _Rule(re.compile(r"\bI (?:live|am living|'m living) in ([\w .,'-]+)", re.I), MemoryType.PROFILE, 0.8,
          "residence", "residence", 1),
    _Rule(re.compile(r"\bI (?:just )?moved to ([\w .,'-]+)", re.I), MemoryType.PROFILE, 0.8, "residence",
          "residence", 1),
    _Rule(re.compile(r"\bI work (?:as (?:a |an )?|at |for )([\w .,&'-]+)", re.I), MemoryType.PROFILE, 0.8, "work",
          "work", 1),
    _Rule(re.compile(r"\bI(?:'m| am) (?:a|an) ([\w -]+?(?:er|or|ist|ian|ant|ent|nurse|doctor|chef|student|"
                     r"engineer|designer|developer|teacher|lawyer|artist|writer|manager))\b", re.I),
          MemoryType.PROFILE, 0.8, "work", "occupation", 1),
    _Rule(re.compile(r"\bI(?:'m| am) (\d{1,3}) years old", re.I), MemoryType.PROFILE, 0.7, Tag.IDENTITY, "age", 1),
    _Rule(re.compile(r"\bI(?:'m| am) (?:from|originally from) ([\w .,'-]+)", re.I), MemoryType.PROFILE, 0.7,
          Tag.IDENTITY, "origin", 1),
    _Rule(re.compile(r"\bI(?:'m| am) allergic to ([\w .,'-]+)", re.I), MemoryType.PROFILE, 0.9, "health"),
    _Rule(re.compile(r"\bmy (wife|husband|partner|girlfriend|boyfriend|son|daughter|kids?|children|mother|mom|"
                     r"father|dad|brother|sister|friend|boss|dog|cat|pet)\b", re.I), MemoryType.FACT, 0.7, "family"),
    _Rule(re.compile(r"\bI (?:really |also |totally )?(?:love|like|enjoy|prefer|adore|hate|dislike|can't stand)\b",
                     re.I), MemoryType.FACT, 0.6, "preference"),
    _Rule(re.compile(r"\bI(?:'m| am) (?:going to|planning to|about to|thinking of)\b|\bI (?:will|plan to|want to|"
                     r"intend to|hope to|need to|might try|may try)\b", re.I), MemoryType.TASK, 0.6, "plan"),
    _Rule(re.compile(r"\bI (?:just |recently |finally )?(?:went|visited|bought|met|started|finished|got|joined|"
                     r"adopted|ran|attended|lost|won|graduated|took|made|painted|wrote|read|saw|travel(?:l)?ed|"
                     r"signed up|learned|quit|celebrated|volunteered)\b", re.I), MemoryType.EPISODIC, 0.5, "event"),
    _Rule(re.compile(r"\bI(?:'ve| have) (?:a|an|two|three|four|\d+|been)\b", re.I), MemoryType.FACT, 0.5, "fact"),
    _Rule(re.compile(r"\bI(?:'m| am) (?:\w+ing)\b", re.I), MemoryType.EPISODIC, 0.4, "activity"),
]

_ZH_RULES = [
    _Rule(re.compile(r"我叫(\S+)"), MemoryType.PROFILE, 0.9, Tag.IDENTITY, "name", 1),
    _Rule(re.compile(r"我(?:住在|搬到了?|搬去了?)([^，。,！!？?]+)"), MemoryType.PROFILE, 0.8, "residence",
          "residence", 1),
    _Rule(re.compile(r"我在([^，。,]+?)(?:工作|上班)"), MemoryType.PROFILE, 0.8, "work", "work", 1),
    _Rule(re.compile(r"我是(?:一名|一个|个)?([^，。,]+)"), MemoryType.PROFILE, 0.7, Tag.IDENTITY),
    _Rule(re.compile(r"我对([^，。,]+)过敏"), MemoryType.PROFILE, 0.9, "health"),
    _Rule(re.compile(r"我的?(妻子|老婆|丈夫|老公|女儿|儿子|孩子|妈妈|母亲|爸爸|父亲|哥哥|姐姐|弟弟|妹妹|朋友|老板|狗|猫)"),
          MemoryType.FACT, 0.7, "family"),
    _Rule(re.compile(r"我(?:很|非常|最|也|特别)?(?:喜欢|爱|讨厌|不喜欢|偏好|更喜欢)"), MemoryType.FACT, 0.6,
          "preference"),
    _Rule(re.compile(r"我(?:打算|计划|准备|想要|要去|将要|下周要|明天要)"), MemoryType.TASK, 0.6, "plan"),
    _Rule(re.compile(r"我(?:昨天|上周|刚刚|刚|最近)?(?:去了|买了|见了|开始|完成了|参加了|养了|学会了)"),
          MemoryType.EPISODIC, 0.5, "event"),
    _Rule(re.compile(r"我(?:正在|在|一直在|最近在)(?:学|练|读|考)"), MemoryType.FACT, 0.6, "fact"),  # 我在学大提琴
    _Rule(re.compile(r"我有"), MemoryType.FACT, 0.5, "fact"),
]


_VALUE_END = re.compile(r"\s+(?:last|next|this|yesterday|today|tomorrow|and|because|since|with|but|in \d{4})\b"
                        r"|[，。,;；]", re.I)


def _slot_value(raw: str) -> str:
    """'Berlin last week' -> 'berlin': the slot value without trailing clauses."""
    return _VALUE_END.split(raw, maxsplit=1)[0].strip(" .,，。").lower()


RELATION_EN = (r"wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|son|daughter|kids?|children|baby|mother|"
               r"mom|mum|father|dad|parents?|brother|sister|siblings?|grandmother|grandma|grandfather|grandpa|"
               r"aunt|uncle|cousin|niece|nephew|friend|best friend|boss|manager|colleague|roommate|"
               r"neighbou?r|"
               r"dog|cat|pet")
ABOUT_OTHER_EN = re.compile(rf"^\s*(?:and |but |also )?my ((?:\w+ )?(?:{RELATION_EN}))\b", re.I)
ABOUT_OTHER_ZH = re.compile(rf"^\s*我的?((?:{RELATION_ZH}))")
_OTHERS_EN = re.compile(rf"^\s*[\w.-]+(?: [\w.-]+)?'s ((?:\w+ )?(?:{RELATION_EN}))\b", re.I)
_OTHERS_ZH = re.compile(rf"^\s*[^\s的，。]{{1,8}}的(?:{RELATION_ZH})")


def is_about_someone_else(text: str, tags: list[str]) -> bool:
    """A memory about the user's wife, son, friend or pet ("Alice's wife loves hiking", "王磊的老婆喜欢爬山"):
    true for extracted ones by their tag, for others by the text's subject."""
    if Tag.ABOUT_OTHER in tags:
        return True
    return bool((_OTHERS_ZH if has_han(text) else _OTHERS_EN).match(text))

# How people say a habit: a frequency word or phrase (always, usually, every morning, as usual, again; 习惯, 一般,
# 每天, 总是) in a first-person statement ("I always run before work"), or a report of one more time without a
# subject ("Another early morning run today, 6am as usual").
# A Chinese report of one occasion, without a subject: a time word, then what was done ("今天早上又跑了五公里").
_REPORT_ZH = re.compile("^(?:今天|昨天|今早|今晚|昨晚|刚才|早上|晚上|这周|本周)[^，。]*?(?:又|照常|照例)")
_REPORT_EN = re.compile(r"^(?:another|one more|yet another)\b|\bas usual\b|"
                        r"^(?:ran|swam|rode|walked|jogged|cycled|hiked|biked|meditated|stretched|lifted|trained|"
                        r"practi[sc]ed|worked out)\b", re.I)  # an activity reported by its verb: "Ran 10k at dawn"
# How people say a wish about the answers they get: an instruction to the assistant ("Please keep it brief",
# "Keep your answers short and direct", "Don't use emojis", "请简短一点") or a first-person wish about it
# ("I'd rather you ...", "I like short answers"). The wish stays about the assistant's answers.
_WISH_EN = re.compile(
    r"^(?:please\s+|pls\s+|just\s+)?(?:keep (?:(?:it|things|them) (?:brief|short|shorter|simple|concise|clear|"
    r"casual|formal|light|to the point)|(?:your )?(?:answers|replies|responses))\b|be (?:brief|concise|short|direct|"
    r"more direct|detailed|specific)\b|(?:don't|do not|never|stop) (?:use|using|add|adding|send|sending)\b|"
    r"use (?:bullet|plain|simple|metric)\b|(?:answer|reply|respond|write|talk to me) in (?:english|chinese|"
    r"french|german|spanish|japanese|bullet|plain|simple)\b|(?:call me|address me as) [A-Z][\w-]*$)", re.I)
_WISH_ABOUT_ANSWERS_EN = re.compile(
    r"^I(?:'d| would) (?:rather|prefer|like) you\b|^I (?:like|prefer|want|need|love|hate|dislike) (?:it )?(?:when "
    r"you\b|(?:short|shorter|brief|concise|long|longer|detailed|direct|simple|plain|bullet[- ]point|clear)\b)",
    re.I)
_WISH_ZH = re.compile("^(?:请|麻烦|能不能|可以)?(?:你)?(?:回答|回复|说话|说)?"
                      "(?:简短|简洁|简单|短|详细|直接|别用|不要用|少用|多用|用中文|用英文|叫我)"
                      "|请.{0,6}(?:简短|简洁|短一点|详细|直接)")
# Statements a person makes about themselves that the classifier must not veto: contact details, habits, wishes,
# who they are.
_SAID_OF_ONESELF = {Tag.CONTACT, Tag.HABIT, Tag.WISH, Tag.IDENTITY}

# What is left of a sentence after a slot rule's match when the match names nothing: "... I made!", "I love it."
_NAMES_NOTHING = re.compile(r"^\W*(?:(?:it|that|this|them|those|these|one|too|so much|a lot)\b\W*)*$", re.I)
# Sentences no memory comes from, whatever they contain (a standing instruction is not a request: see _STANDING).
_STANDING = re.compile(r"\b(always|from now on|in future|never)\b|以后|今后|每次|一直", re.I)
_HARD_DROP = re.compile(r"^(if|imagine|suppose|pretend|let's say|what if|in this story)\b|"
                        r"^(please|can you|could you|would you|help me|give me|tell me|show me)\b|"
                        r"^(如果|假如|假设|要是|假装|在这个故事里|请|帮我|麻烦你?|给我)", re.I)
_FIRST_PERSON = re.compile(r"\b(?:my|i|i'm|me|mine)\b|我", re.I)
# "I think I might ..." -> "I might ...": the hedge lowers confidence, it is not part of the memory.
_HEDGE_PREFIX = re.compile(r"^(?:i think|i guess|maybe|perhaps|probably),?\s+(?=I\b)", re.I)
# Asking to forget: the group is what to forget, said in the first person.
_FORGET_EN = re.compile(r"^(?:please |can you |could you )?(?:forget|don't remember|do not remember|stop remembering|"
                        r"delete the memory|erase the memory)\s+(?:that\s+|the fact that\s+|about\s+)?(.+)", re.I)
_NO_LONGER_EN = re.compile(r"^I (?:no longer|don't|do not) (\w+)(.*?)(?: any ?more)?$", re.I)
_FORGET_ZH = re.compile(r"^(?:请)?(?:别|不要|不用)再?记(?:住|得|着)?(.+)|^(?:请)?(?:忘掉|忘记|忘了|删掉|删除)(.+)")
_NO_LONGER_ZH = re.compile(r"^我不再(.+?)了?$")

def speaker_name(subject: str, chinese: bool) -> str:
    """The name a memory's text uses: the speaker's, or 用户 in Chinese when it is unknown."""
    return UNKNOWN_SPEAKER["zh"] if chinese and subject == UNKNOWN_SPEAKER["en"] else subject


def one_statement_per_turn(statements: list[ExtractedStatement]) -> list[ExtractedStatement]:
    """What the classifier kept of one turn, as one statement: "I've been painting a lot lately. Painting helps
    me express myself." is one thing the speaker told, and a memory per sentence made two memories of it (and
    of a long turn, five). Slot rules, habits, wishes and forget requests stay on their own (they carry a key,
    a tag or a decision); the kept sentences join in the order said, the strongest type and importance and
    the lowest confidence winning. Measured on LoCoMo's dev split: bench/results/2026-11-extraction.md."""
    out: list[ExtractedStatement] = []
    joined: dict[tuple[str, tuple[int, ...]], ExtractedStatement] = {}
    for statement in statements:
        turn = (statement.subject, tuple(statement.source_messages))
        first = joined.get(turn)
        if "learned" not in statement.tags or not statement.source_messages:
            out.append(statement)
        elif first is None:
            joined[turn] = statement
            out.append(statement)
        else:
            chinese = has_han(first.text)
            first.text = f"{first.text}{'。' if chinese else '. '}{statement.text}"
            first.tags = list(dict.fromkeys([*first.tags, *statement.tags]))
            if statement.importance > first.importance:
                first.memory_type, first.importance = statement.memory_type, statement.importance
            first.confidence = min(first.confidence, statement.confidence)
    return out


@dataclass
class _Sentence:
    text: str
    subject: str
    moment: datetime
    index: int


class RulesExtractor:
    """Offline extraction, English and Chinese: slot rules (names, places,
    work, allergies, dates) first; every other sentence goes to the
    durable-statement classifier (memories/durable.py). Questions, requests,
    hypotheticals and small talk leave nothing."""

    name = "rules"

    def __init__(self, use_classifier: bool = True):
        self.use_classifier = use_classifier

    def extract(self, *, messages: list[Message], speakers: dict[str, str], existing: list[ExistingMemory],
                now: datetime) -> list[ExtractedStatement]:
        statements = self._statements(messages, speakers, now)
        if any(message.role != "user" for message in messages):  # "you" may be the assistant
            return statements
        return self.addressed_by_name(statements, speakers)

    def _statements(self, messages: list[Message], speakers: dict[str, str],
                    now: datetime) -> list[ExtractedStatement]:
        ruled: list[tuple[str, ExtractedStatement]] = []
        undecided: list[_Sentence] = []
        for message in messages:
            subject = self.speaker_of(message, speakers)
            if subject is None:
                continue
            moment = message.created_at or now
            for raw in with_continuations(RULES_SENTENCE_SPLIT.split(STAGE_DIRECTION.sub(" ", message.content))):
                sentence = GREETING_LEAD.sub("", raw.strip())
                if not has_han(sentence):
                    sentence = without_address(sentence, [name for name in speakers if name != subject])
                forget = self._forget(sentence, subject, moment, message.index)
                if forget is not None:
                    ruled.append((sentence, forget))
                    continue
                said = self._habits_and_wishes(sentence, subject, moment, message.index)
                if said:
                    ruled.extend((sentence, statement) for statement in said)
                    continue
                sentence = with_its_subject(DISCOURSE.sub("", sentence))
                if self._dropped(sentence) or not about_the_speaker(sentence):
                    continue
                candidate = self._sentence(sentence, subject, moment)
                if candidate:
                    candidate.source_messages = [message.index]
                    ruled.append((sentence, candidate))
                else:
                    undecided.append(_Sentence(sentence, subject, moment, message.index))
            introduction = self.introduction_of(message, subject, moment, [c for _, c in ruled])
            if introduction is not None:
                ruled.append((message.content, introduction))
        if not self.use_classifier:
            return [candidate for _, candidate in ruled]

        verdicts = classify([s for s, _ in ruled] + [s.text for s in undecided])
        if verdicts is None:  # the classifier is off (no local model): the rules decide alone
            return [candidate for _, candidate in ruled]
        # A slot rule's match stands unless the classifier is sure it is not a durable statement.
        out = [candidate for (_, candidate), (p, _) in zip(ruled, verdicts, strict=False)
               if p >= RULE_VETO or candidate.forget or _SAID_OF_ONESELF & set(candidate.tags)]
        threshold = durable_threshold()
        own_threshold = min(threshold, SPEAKER_STATEMENT_THRESHOLD)
        for undecided_sentence, (probability, memory_type) in zip(undecided, verdicts[len(ruled):], strict=True):
            if probability >= (own_threshold if speaks_of_itself(undecided_sentence.text) else threshold):
                out.append(self._classified(undecided_sentence, memory_type, probability))
        return one_statement_per_turn(out)

    @staticmethod
    def addressed_by_name(statements: list[ExtractedStatement],
                          speakers: dict[str, str]) -> list[ExtractedStatement]:
        """Between two people talking to each other (no assistant in the conversation), the "you" of an
        English memory is the other one, named (name_the_addressee)."""
        if len(speakers) != 2:
            return statements
        for statement in statements:
            other = next((name for name in speakers if name != statement.subject), "")
            if other and not has_han(statement.text) and ADDRESSEE_EN.search(statement.text):
                statement.text = name_the_addressee(statement.text, other)
        return statements

    @staticmethod
    def introduction_of(message: Message, subject: str, moment: datetime,
                        so_far: list[ExtractedStatement]) -> ExtractedStatement | None:
        """"Hi! I'm Maria, I live in Lisbon" names its speaker without a name statement of its own: the
        name is kept as the profile's name (the next conversations call the speaker by it)."""
        if introduced_name([message.content]) != subject or any(s.key == "name" and s.subject == subject
                                                                 for s in so_far):
            return None
        chinese = has_han(message.content)
        text = f"{UNKNOWN_SPEAKER['zh']}叫{subject}" if chinese else f"{UNKNOWN_SPEAKER['en']}'s name is {subject}"
        return ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE, importance=0.9,
                                  confidence=0.8, tags=[Tag.IDENTITY], valid_at=moment, key="name",
                                  value=subject.lower(), source_messages=[message.index])

    def _forget(self, sentence: str, subject: str, moment: datetime, index: int) -> ExtractedStatement | None:
        """A request to forget ("forget that I like jazz", "别记住我喜欢爵士乐", "I don't smoke anymore",
        "我不再吃肉了"): a candidate whose text says what to forget."""
        clause = DISCOURSE.sub("", sentence.strip().rstrip(" .!。！"))
        if has_han(clause):
            match = _FORGET_ZH.match(clause)
            content = (match.group(1) or match.group(2)) if match else None
            if match is None and (no_longer := _NO_LONGER_ZH.match(clause)):
                content = "我" + no_longer.group(1)
        else:
            match = _FORGET_EN.match(clause)
            content = match.group(1) if match else None
            if match is None and (no_longer := _NO_LONGER_EN.match(clause)) and (
                    " anymore" in clause.lower() or " any more" in clause.lower() or "no longer" in clause.lower()):
                content = f"I {no_longer.group(1)}{no_longer.group(2)}"
        if content:  # "忘掉我会拉大提琴这件事吧": the matter, not the words and particles around it
            content = re.sub("(?:这件事情?|这事|这个事情?|的事情?)?[吧呢啊哦嘛啦呀]*$", "", content.strip())
        if not content or len(content.strip()) < 2:
            return None
        text, tags = self.rewrite(content.strip(), subject)
        return ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.FACT, importance=1.0,
                               confidence=0.9, tags=["forget", *tags], valid_at=moment, source_messages=[index],
                               forget=True)

    def _habits_and_wishes(self, sentence: str, subject: str, moment: datetime,
                           index: int) -> list[ExtractedStatement]:
        """Habits ("I always run before work") and wishes about the answers ("Please keep it brief") as
        behaviour and preference facts, clause by clause: "Please keep it brief, I like short answers" is
        a wish and a preference."""
        out = []
        for clause in _clauses(DISCOURSE.sub("", sentence.strip())):
            statement = self._habit(clause, subject) or self._wish(clause, subject)
            if statement is not None:
                text, tags, importance = statement
                out.append(ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.FACT,
                                              importance=importance, confidence=0.8, tags=tags, valid_at=moment,
                                              source_messages=[index]))
        return out

    def _habit(self, clause: str, subject: str) -> tuple[str, list[str], float] | None:
        chinese = has_han(clause)
        if clause.endswith(("?", "？")) or _HARD_DROP.match(clause) and not chinese:
            return None
        if chinese:
            if not HABIT_OR_AGAIN_ZH.search(clause) or "我" not in clause and not _REPORT_ZH.search(clause):
                return None
            if clause.startswith("我"):
                text, tags = self.rewrite(clause, subject)
            else:  # "今天早上又跑了五公里，和平时一样": a report without a subject, said of its speaker
                text, tags = speaker_name(subject, True) + clause.rstrip("。！!"), []
        elif re.match(r"I\b", clause) and HABIT_OR_AGAIN_EN.search(clause):
            text, tags = self.rewrite(clause, subject)
        elif not _REPORT_EN.search(clause) or _FIRST_PERSON.search(clause) or self.small_talk(clause):
            return None
        else:  # a report without a subject: a sentence about its speaker, in their words
            text, tags = report_as_sentence(clause, speaker_name(subject, False)), []
        return text, [Tag.HABIT, *tags], 0.7

    def _wish(self, clause: str, subject: str) -> tuple[str, list[str], float] | None:
        chinese = has_han(clause)
        name = speaker_name(subject, chinese)
        body = clause.strip().rstrip(" .!。！")
        if chinese:
            if not _WISH_ZH.match(body):
                return None
            body = re.sub("^(?:请|麻烦)(?:你)?", "", body)
            if how := re.fullmatch("(.+?)(?:地)?(?:回答|回复)我(?:的问题)?", body):  # 简短一点回答我: how to answer
                return f"{name}希望助手回答时{how.group(1)}", [Tag.WISH], 0.8
            return f"{name}希望助手{chinese_third_person(body, name)}", [Tag.WISH], 0.8
        if _WISH_EN.match(body):
            instruction = re.sub(r"^(?:please|pls|just)\s+|,?\s+please$", "", body, flags=re.I)
            if called := re.match(r"(?:call me|address me as) (.+)$", instruction, re.I):
                return f"{name} wants to be called {called.group(1)}", [Tag.WISH], 0.8
            instruction = re.sub(r"\byour (answers|replies|responses)\b", r"the \1", instruction, flags=re.I)
            instruction = re.sub(r"\b(me|my)\b", lambda m: name if m.group(1).lower() == "me" else f"{name}'s",
                                 instruction, flags=re.I)
            if negated := re.match(r"(?:don't|do not|never) (.+)$", instruction, re.I):
                return f"{name} wants the assistant not to {negated.group(1)}", [Tag.WISH], 0.8
            return f"{name} wants the assistant to {instruction[0].lower()}{instruction[1:]}", [Tag.WISH], 0.8
        if _WISH_ABOUT_ANSWERS_EN.match(body):
            text = to_third_person(re.sub(r"\byou\b", "the assistant", body, flags=re.I), name)
            return text, [Tag.WISH], 0.8
        return None

    @staticmethod
    def small_talk(message: str) -> bool:
        """A turn that is greetings, thanks and acknowledgements only ("hi", "ok thanks, bye", "谢谢！")."""
        parts = [p.strip() for p in re.split(r"[,.!?;，。！？；、~\s]+", message) if p.strip()]
        return all(SMALL_TALK.match(p) or _SMALL_TALK_WORDS.fullmatch(p.casefold()) for p in parts)

    @staticmethod
    def _dropped(sentence: str) -> bool:
        return (len(sentence) < 4 or sentence.endswith(("?", "？")) or bool(SMALL_TALK.match(sentence))
                or bool(BARE_REPLY_EN.match(sentence))
                or (bool(_HARD_DROP.match(sentence)) and not _STANDING.search(sentence)))

    @staticmethod
    def speaker_of(message: Message, speakers: dict[str, str]) -> str | None:
        """Whose statement this is, or None for assistant turns and unknown speakers."""
        if message.role != "user":
            return None
        if message.name:
            return message.name if message.name in speakers else None
        return next(iter(speakers), None) if len(speakers) == 1 else None

    @staticmethod
    def rewrite(sentence: str, subject: str) -> tuple[str, list[str]]:
        """The sentence in the third person with the speaker's name, and the tags
        that say whom it is about."""
        chinese = has_han(sentence)
        clause = _HEDGE_PREFIX.sub("", sentence.rstrip(" .!。！"))
        name = speaker_name(subject, chinese)
        if introduced_name([sentence]) == subject:  # the introduction says whose name: "用户叫小林，小林住在杭州"
            for pattern, words in INTRODUCING_WORDS:
                clause = pattern.sub(words.format(user=UNKNOWN_SPEAKER["en"], user_zh=UNKNOWN_SPEAKER["zh"]), clause,
                                     count=1)
        text = chinese_third_person(clause, name) if chinese else to_third_person(clause, name)
        other = (ABOUT_OTHER_ZH if chinese else ABOUT_OTHER_EN).match(clause)
        return text, [Tag.ABOUT_OTHER] if other else []

    def _classified(self, sentence: _Sentence, memory_type: str, probability: float) -> ExtractedStatement:
        text, tags = self.rewrite(sentence.text, sentence.subject)
        text, when = anchor_relative_dates(text, sentence.moment)
        hedged = bool(HEDGE.search(sentence.text))
        return ExtractedStatement(
            subject=sentence.subject, text=text, memory_type=memory_type, importance=0.5 + 0.2 * probability,
            confidence=0.4 if hedged else round(min(0.6 + 0.3 * probability, 0.9), 2), tags=[*tags, "learned"],
            valid_at=when or sentence.moment, source_messages=[sentence.index])

    def _sentence(self, sentence: str, subject: str, moment: datetime) -> ExtractedStatement | None:
        chinese = has_han(sentence)
        if CONTACT_DETAIL.search(sentence) and _FIRST_PERSON.search(sentence):
            text, tags = self.rewrite(sentence, subject)
            return ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE, importance=0.8,
                                   confidence=0.8, tags=[Tag.CONTACT, *tags], valid_at=moment)
        for rule in _ZH_RULES if chinese else _EN_RULES:
            match = rule.pattern.search(sentence)
            if not match:
                continue
            opening = None if chinese else SPEAKER_SINGULAR_EN.search(sentence)
            if not chinese and not rule.value_group and _NAMES_NOTHING.match(sentence[match.end():]):
                # "this piece I made", "what I love", "I really love it": the match names nothing; where the
                # speaker spoke of themselves before it, the whole sentence says what ("I chose a flat near the
                # river, I really love it")
                if opening is None or opening.start() >= match.start():
                    continue
                match_start = 0
            else:
                match_start = match.start()
            if chinese:
                text, tags = self.rewrite(sentence, subject)
            else:  # from the rule's match: a lead-in goes ("Oh and my wife ..."); a "my ..." noun phrase
                # inside a clause of the speaker's keeps the clause ("I got back ... with my sister Ana")
                start = min(match_start, opening.start()) if opening and sentence[match.start():].lower(
                ).startswith("my ") else match_start
                text, tags = self.rewrite(sentence[start:], subject)
                if tags != [Tag.ABOUT_OTHER] and ABOUT_OTHER_EN.match(sentence):
                    text, tags = self.rewrite(sentence, subject)
            text, when = anchor_relative_dates(text, moment)
            value = _slot_value(match.group(rule.value_group)) if rule.value_group else ""
            hedged = bool(HEDGE.search(sentence))
            return ExtractedStatement(
                subject=subject, text=text, memory_type=rule.memory_type, importance=rule.importance,
                confidence=0.4 if hedged else 0.8, tags=[rule.tag, *tags], valid_at=when or moment,
                key=rule.key if value and not tags else "", value=value.lower() if value and not tags else "",
            )
        return None
