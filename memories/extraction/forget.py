"""Reading a forget request: whether a clause asks to forget (and how sure that reading is), and what it
asks to forget. A forget removes memories and blanks the turns that said them, so it acts only on a
confident reading (issue 55: "Login for the NAS is admin / Winter2024! if you need to restart it" was read
as a forget of "if you need to restart it", and ordinary sentences read as forget requests blanked their
own turns)."""

from __future__ import annotations

import re

from memories.text import has_han

# What a forget request wraps around the thing to forget: the request words, not the matter.
_FORGET_FRAME_EN = re.compile(
    r"^.*?\b(?:about|that|regarding|re)\b:?\s+(?=\S)|\b(?:please|pls|can you|could you|would you|just|forget|delete|"
    r"remove|erase|scratch|drop|ignore|disregard|wipe|the (?:bit|part|thing|stuff|note|memory|info)|what i (?:said|"
    r"told you|mentioned)|i told you|i said|i mentioned|from (?:your )?memory|don't (?:remember|keep|store)|"
    r"never mind|nvm|anymore|too)\b", re.I)
_FORGET_FRAME_ZH = re.compile("请|你|帮我|麻烦|把|给我|忘掉|忘记|忘了|删掉|删除|删了|去掉|清掉|"
                              "别再?记(?:住|得|着)?|不要再?记(?:住|得|着)?|不用再?记(?:住|得|着)?|就当我没说过?|当我没说过?|那条|这条|那个|这个|关于|的事情?|这件事情?|"
                              "那件事情?|这事|那事|记录|信息|吧|啊|哈|呢|了$|一下|我说的|我之前说的|之前说的")


def forget_topic(text: str) -> str:
    """What a forget request is about, without the words of the request: "can you scratch the bit about
    my cello lessons" -> "my cello lessons", "那条关于我生病的记录删掉吧" -> "我生病"."""
    if has_han(text):
        return re.sub("的$", "", _FORGET_FRAME_ZH.sub("", text).strip(" ，,。.!！"))
    topic = _FORGET_FRAME_EN.sub(" ", text)
    return re.sub(r"\s+", " ", topic).strip(" ,.!?")


# A request to forget said outright, in the first person: whatever the intent model reads in it ("Forget that
# I'm learning Portuguese" read as a fact of the speaker kept the very thing asked to be forgotten), it is one.
_ASKS_TO_FORGET_EN = re.compile(
    r"^(?:(?:actually|ok|okay|oh|and|also|so|hey|um|hmm|wait)\b[,!]?\s+)*(?:please\s+|pls\s+|can you\s+|could you\s+|"
    r"would you\s+|just\s+)*(?:forget|stop remembering|don't remember|do not remember)\s+(?:(?:that|about|the fact "
    r"that)\s+)?(?:i|i'm|i've|i'd|my|me)\b", re.I)
_ASKS_TO_FORGET_ZH = re.compile(r"^(?:其实|好吧|对了|还有)?[，,]?(?:请|麻烦)?你?(?:帮我)?(?:把)?(?:忘掉|忘记|删掉|删除|"
                                r"(?:别|不要|不用)再?记(?:住|得|着)?)(?:关于)?我")


def asks_to_forget(text: str) -> bool:
    """Whether a clause is a request to forget something the speaker said of themselves, said outright."""
    return bool(_ASKS_TO_FORGET_ZH.match(text.strip()) if has_han(text) else _ASKS_TO_FORGET_EN.match(text.strip()))


def names_no_matter(topic: str) -> bool:
    """A forget request's topic that points back rather than naming anything ("forget that", "你别记了")."""
    return len(topic) < 2 or topic.casefold() in {"that", "it", "this", "those", "these", "that one", "all that"}



# The words a request to forget is made of, in the ways people ask (memories/extraction_data/intents: "scrub
# anything you've got on my ex", "don't keep a record of my debts", "当我没说", "那条撤回"): a clause read as a
# forget without one is something else ("if you need to restart it", "I'll remember it myself").
_KEEP = (r"(?:remember\w*|keep\w*|stor\w+|sav\w+|record\w*|log\w*|hold\w* on(?:to)?|hang\w* on(?:to)?|retain\w*|"
         r"note\w*|track\w*|file|have (?:that|it|this) on file|be in your memory|in your memory|know)")
_FORGET_CUE_EN = re.compile(
    rf"\b(?:forget|delete|remove|erase|scrub|wipe|clear|purge|drop|dropping|bin|scratch|scrap|unsave|un-?save|"
    rf"un-?remember|un-?hear|undo|retract|take back|strike|disregard|ignore|get rid of|pretend (?:i|you|we)|"
    rf"never mind|nevermind|nvm|lose the|leave (?:\w+ ){{0,4}}out of|take (?:\w+ ){{0,4}}out of|(?:can|could|should|"
    rf"may) (?:it|that|this|they) (?:go|be gone|disappear)|go away|"
    rf"(?:no need|don't need|do not need|doesn't need|not need) (?:for you )?to {_KEEP}|"
    rf"(?:don't|do not|dont|doesn't|stop|not|no|can you not|could you not|rather not|prefer not to|"
    rf"don't want you|do not want you) (?:\w+ )?{_KEEP}|^(?:please |pls )?never {_KEEP}|"
    rf"(?:rather|prefer) (?:you |it )?(?:didn't|did not|not|wasn't|weren't)|(?:wasn't|isn't|not) (?:be )?"
    rf"(?:stored|saved|kept|remembered|on file))\b", re.I)
_FORGET_CUE_ZH = re.compile(
    "忘掉|忘记|忘了(?:吧|我|那|这|关于|它)|都忘了|给?忘了|(?:别|不要|不用|不必|甭|无需|不需要|不想让?你?|能不|可以不|"
    "最好别|还是别|就别|别)你?再?(?:往心里)?\\s*(?:记|存|保存|保留|留|keep|save|store)|不记|删|清掉|清空|清除|清一下|去掉|拿掉|抹掉|"
    "移除|撤回|撤销|取消|当我没说|当没听[过见到]|当不知道|当没看[过见到]|就当.{0,4}没|不要了|不留档|作废|丢掉")
# A clause that names forgetting but asks nothing: the speaker (or someone) forgot or forgets something, or
# asks for the opposite ("don't forget to water the plants", "别忘了提醒我").
_NOT_A_FORGET_EN = re.compile(
    r"^(?:\w+\s+){0,3}?(?:i|he|she|they|we|my \w+|mum|mom|dad)\s+(?:always |often |keep |kept |sometimes |just |"
    r"totally |completely |)?(?:forgot|forgets|forgetting|forget to|removed|deleted|dropped|cleared|wiped|erased|"
    r"scratched|binned|ignored|stored|saved|kept|recorded)\b|"
    r"\b(?:don't|do not|never|dont) forget\b|\bforgot (?:to|my|his|her|the|about)\b|\bforgetful\b|"
    r"\b(?:the )?(?:delete|backspace|clear) (?:key|button)\b", re.I)
_NOT_A_FORGET_ZH = re.compile("别忘|不要忘|不能忘|千万别忘|"
                              "^(?:我|他|她|我妈|我爸|老公|老婆)(?:又|总是|老是|经常|常常|差点|竟然)?(?:忘了|忘记了?)(?:带|拿|买|交|关|锁|吃|说|告诉|写|充|存|回|打|去|做|还|给)")
FORGET_SURE = 0.4  # below it, even with a request's words, the model's reading is a guess


def forget_cue(text: str) -> bool:
    """Whether a clause has the words of a request to forget and is not one that only names forgetting."""
    if has_han(text):  # code-mixed requests ask in either language ("我的 income 信息 no need to store 吧")
        return bool(_FORGET_CUE_ZH.search(text) or _FORGET_CUE_EN.search(text)) and not _NOT_A_FORGET_ZH.search(text)
    return bool(_FORGET_CUE_EN.search(text)) and not _NOT_A_FORGET_EN.search(text.strip())


_NO_LONGER_EN = re.compile(r"\b(?:no longer|any ?more|not now|quit|stopped|gave up|given up)\b", re.I)
_NO_LONGER_ZH = re.compile("不再|已经不|戒了|不.{1,6}了")


def says_no_longer(text: str) -> bool:
    """Whether a turn says something stopped being so ("I don't smoke anymore", "我不再吃肉了"): an LLM may
    read it as a forget of the old fact, and that is a reading of what was said."""
    return bool(_NO_LONGER_ZH.search(text) if has_han(text) else _NO_LONGER_EN.search(text))


def forget_is_confident(text: str, confidence: float) -> bool:
    """Pure: whether a clause the model read as a forget request may act as one: said outright
    (asks_to_forget), or read with at least FORGET_SURE and in a request's words (forget_cue)."""
    return asks_to_forget(text) or (confidence >= FORGET_SURE and forget_cue(text))
