"""Chinese said of its speaker, rewritten: 我 -> the speaker's name, 我的 + a relation -> 名字的 + relation.
Rewriting only: what a clause does is the intent model's call (memories/extraction/intent.py)."""

from __future__ import annotations

import re

# The people (and pets) a speaker names by their relation to them.
RELATION_ZH = ("妻子|老婆|丈夫|老公|爱人|女朋友|男朋友|女儿|儿子|孩子|宝宝|妈妈|母亲|爸爸|父亲|父母|哥哥|姐姐|"
               "弟弟|妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|表哥|表姐|堂哥|朋友|最好的朋友|老板|领导|"
               "同事|室友|邻居|狗|猫")


def chinese_third_person(sentence: str, name: str) -> str:
    """我 -> the speaker's name, 我的 -> 名字的, 我+relation -> 名字的relation; 我们 stays 我们."""
    text = re.sub(rf"我的?(?=(?:{RELATION_ZH}))", f"{name}的", sentence)
    text = re.sub("我的", f"{name}的", text)
    return re.sub("我(?!们)", name, text)
