"""How a trait is worded from what the user said: which statement of a habit reads best, and a Chinese turn
as a trait sentence. Pure functions (table tests in tests/test_trait_wording.py).

A trait's text had been its first evidence's rewrite, whatever that was: one day's report ("Usually finished
the Times crossword at breakfast again, took 40 minutes today"), a fragment ("Usually usual routine"), the
extractor's Chinese rewrite with a name for every 我 ("林静每天晚上睡前我都要看半个小时书"). The best
statement of a habit says how often and no day's detail; a wish is worded as the user last asked for it.
"""

from __future__ import annotations

import re

from memories.extraction.clauses import sentences, turn_clauses
from memories.extraction.habits import HABIT_OR_AGAIN_EN, HABITUAL_ZH
from memories.extraction.rewrite_en import third_person_verb, to_third_person

# What ties a statement to one day: a report of an occasion, not the habit ("today", "this morning",
# "yesterday", "again", "even in the pouring rain", "今天", "今早", "昨晚", "这周", "又").
_ONE_DAY_EN = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|evening|afternoon|week|weekend)|last "
                         r"(?:night|week|weekend)|again|another|even (?:in|on|with|after|though)|just now)\b", re.I)
_ONE_DAY_ZH = re.compile("今天|今早|今晚|昨天|昨晚|前天|这周|上周|刚才|刚刚|又")
_HABIT_CUE_EN = re.compile(r"\b(?:usually|always|never miss|every|each|most (?:days|mornings|evenings|nights|"
                           r"weekends)|daily|weekly|routine|habit|religiously|without fail|as usual)\b", re.I)


def says_how_often(words: str) -> bool:
    return bool(_HABIT_CUE_EN.search(words) or HABIT_OR_AGAIN_EN.search(words) and not _ONE_DAY_EN.search(words)
                or re.search(HABITUAL_ZH, words))


def ties_to_one_day(words: str) -> bool:
    return bool(_ONE_DAY_EN.search(words) or _ONE_DAY_ZH.search(words))


def wording_rank(words: str) -> tuple[int, int, int]:
    """How well a statement words a habit or liking (higher is better): it says how often, it is not tied to
    one day, and, of the rest, it is short (a sentence, not a story)."""
    return (says_how_often(words), not ties_to_one_day(words), -len(words))


# The opening of a Chinese turn that belongs to the conversation, not to the habit: a greeting, a filler, a
# day ("今天…", "说真的，").
_ZH_OPENING = re.compile(r"^(?:(?:嗯|哈哈|哎|唉|对了|其实|说真的|老实说|话说|跟你说|顺便说一下|"
                         r"今天|今早|今晚|昨天|昨晚|这周|最近)[，,、\s]*)+")
_ZH_CLAUSE = re.compile(r"[，,；;。！!？?~～]+")
_ZH_CUE = re.compile(f"{HABITUAL_ZH}|喜欢|爱|讨厌|受不了|不喜欢|最爱|离不开|坚持|从来|从不|雷打不动|照例|照常|习惯|"
                     "准时|一直|每")


def chinese_trait_text(turn: str) -> str:
    """A Chinese turn as a trait: the clause that says the habit or liking (the one with a word of how often
    or of liking, else the first), without the speaker (a trait has no subject: "我每天坐地铁…" ->
    "每天坐地铁…", "晚上七点半我准时去广场跳舞" -> "晚上七点半准时去广场跳舞"), "我的" as "自己的"."""
    clauses = [c.strip() for c in _ZH_CLAUSE.split(turn) if c.strip()]
    if not clauses:
        return turn.strip()
    chosen = next((c for c in clauses if _ZH_CUE.search(c)), clauses[0])
    chosen = _ZH_OPENING.sub("", chosen) or chosen
    chosen = chosen.replace("我们", "\0").replace("我的", "自己的").replace("我自己", "自己")
    chosen = re.sub(r"^我|(?<=[\u4e00-\u9fff\d点半])我(?=[\u4e00-\u9fff])", "", chosen)
    return chosen.replace("\0", "我们").strip(" ，,")


_ZH_WISH_FRAME = re.compile(r"^.{0,12}?对助手回答的要求[：:]\s*")


def chinese_wish_text(text: str) -> str:
    """A Chinese wish as a trait: "林静对助手回答的要求：别用太多术语" -> "希望回答：别用太多术语"."""
    body = _ZH_WISH_FRAME.sub("", text.strip()).rstrip(" 。.！!")
    return f"希望回答：{body}" if body else text.strip()


# What opens an English turn and belongs to the conversation, not to the habit or wish ("For context",
# "Also random question.", "honestly", "haha").
_EN_OPENING = re.compile(r"^(?:(?:for context|also|and|but|so|oh|ok(?:ay)?|well|honestly|tbh|lol|haha|btw|anyway|"
                         r"by the way|just so you know|fyi|quick one|random question)\b[,.:!]?\s*)+", re.I)
_WISH_CUE_EN = re.compile(r"\b(?:please|pls|plz|can you|could you|would you|don't|do not|no need|always|never|"
                          r"keep|use|give|make|answer|reply|write|explain|include|start|leave)\b", re.I)
_POLITE_EN = re.compile(r"^(?:please|pls|plz|can you|could you|would you|and|also)\b[,:]?\s*|[,\s]*\b(?:please|pls|"
                        r"plz|thanks|thx)\b[.!]*$", re.I)
_PLACEHOLDER = "\0"


def _best_part(parts: list[str], cue: re.Pattern) -> str:
    """The part that says it: one with the cue, not a question to the assistant ("Can you explain what a
    router does? Plain English please"), else one the speaker opens, else the first."""
    said = [p for p in parts if not p.rstrip().endswith("?")] or parts
    return next((p for p in said if cue.search(p)), next((p for p in said if re.match(r"I\b", p)), said[0]))


# A clause that opens with how often and a verb, its subject left out ("Never miss the daily crossword").
_ADVERB_THEN_VERB = re.compile(r"^((?:never|always|usually|often|normally|still|also)\s+)([a-z]+)\b", re.I)


_LATER_I = {"I": "they", "I'm": "they're", "I've": "they've", "I'd": "they'd", "I'll": "they'll"}


_SUBORDINATE = frozenset("when after before if once whenever until while as because since".split())


def later_i_as_they(clause: str) -> str:
    """Every "I" but the main clause's as "they" (its verb stays as it is: "they get"): a trait drops only its
    own subject. The main one is the first "I" that no "when / after / before / if …" opens ("When I get home
    I always black out the room" -> "When they get home I always…"; it had read "When gets home")."""
    found = list(re.finditer(r"\bI(?:'m|'ve|'d|'ll)?(?![\w'])", clause))
    if len(found) < 2:
        return clause
    before = [clause[:m.start()].split()[-1].lower() if clause[:m.start()].split() else "" for m in found]
    main = next((m for m, word in zip(found, before, strict=True) if word not in _SUBORDINATE), found[0])
    out, last = [], 0
    for m in found:
        out += [clause[last:m.start()], m.group(0) if m is main else _LATER_I[m.group(0)]]
        last = m.end()
    return "".join(out) + clause[last:]


_ZH_WISH_CUE = re.compile(r"请|别|不要|不用|用|简短|说重点|回答|中文|英文|please|pls", re.I)


def chinese_wish_from_turn(turn: str) -> str:
    """A Chinese (or code-mixed) wish from the user's turn: the clause that asks, as "希望回答：…"."""
    clauses = [c.strip() for c in _ZH_CLAUSE.split(turn) if c.strip()] or [turn.strip()]
    asked = next((c for c in clauses if _ZH_WISH_CUE.search(c)), clauses[0])
    return f"希望回答：{_ZH_OPENING.sub('', asked) or asked}"


def english_trait_text(turn: str, wish: bool) -> str:
    """An English turn as a trait, written as a reviewer would: the sentence and clause that say the habit,
    liking or wish (the one with a word of how often, of liking or of asking), without the conversation's
    openers; a habit or liking in the third person with no subject ("I swim at the Quays every Sunday" ->
    "Swims at the Quays every Sunday", "my" as "their"), a wish as what the user asks for."""
    cue = _WISH_CUE_EN if wish else _HABIT_CUE_EN
    sentence = _best_part([s.strip() for s in sentences(turn) if s.strip()] or [turn], cue)
    clause = _best_part([c.strip() for c in turn_clauses(sentence) if c.strip()] or [sentence], cue)
    clause = (_EN_OPENING.sub("", clause) or clause).strip().rstrip(" .!?,;")
    if wish:
        asked = _POLITE_EN.sub("", _POLITE_EN.sub("", clause)).strip(" ,") or clause
        return f"Asks for answers like this: {asked[:1].lower()}{asked[1:]}"
    if not re.search(r"\bI\b", clause):
        clause = _ADVERB_THEN_VERB.sub(lambda m: m.group(1) + third_person_verb(m.group(2)), clause, count=1)
    said = to_third_person(later_i_as_they(clause), _PLACEHOLDER)
    said = re.sub(rf"{_PLACEHOLDER}'s\b", "their", said)
    said = re.sub(rf"\s*{_PLACEHOLDER}\s*", " ", said).strip()
    said = re.sub(r"\bme\b", "them", re.sub(r"\bmyself\b", "themselves", said))
    return said[:1].upper() + said[1:]
