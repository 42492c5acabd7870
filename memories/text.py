"""Text rules shared by writes and search: normalisation, dedupe hash, segmentation.

Postgres has no Chinese parser here, so documents and queries are segmented
in Python (jieba) and indexed with the 'simple' configuration.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import unicodedata
from functools import lru_cache

import snowballstemmer

from memories.identity import strip_invisible

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_jieba_lock = threading.Lock()

# Function words that match nearly every memory; dropped from keyword queries.
ENGLISH_STOPWORDS = frozenset(
    """a an the and or but if then of at by for with about against between into through during before
    after above below to from up down in out on off over under again further once here there when where
    why how all any both each few more most other some such no nor not only own same so than too very
    s t can will just don should now i me my myself we our ours ourselves you your yours yourself
    yourselves he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom this that these those am is are was were be been being have has had having do
    does did doing would could ought i'm you're he's she's it's we're they're i've you've we've
    they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't aren't
    wasn't weren't hasn't haven't hadn't doesn't didn't won't wouldn't shan't shouldn't can't cannot
    couldn't mustn't let's that's who's what's here's there's when's where's why's how's as until while
    also get got like yes yeah oh wow really""".split()
)
# The Chinese counterparts of the English list: particles, pronouns, question words, degree and
# frequency adverbs, 喜欢 (as "like" is in the English list), and 用户 (third-person facts name
# the user so, it is in nearly all of them). Kept, a question's 最 / 每天 / 平时 / 喜欢 ranked any
# memory sharing them first on the keyword side and pulled hybrid below semantic search on the
# Chinese set (bench/multilingual.py: zh hybrid hit@3 0.711 -> 0.733, mixed 0.842 -> 0.878).
CHINESE_STOPWORDS = frozenset(
    """的 了 是 在 我 你 他 她 它 们 我们 你们 他们 她们 和 与 也 就 都 而 及 着 吗 呢 吧 啊 呀 啦 嘛 么
    什么 怎么 怎样 怎么样 如何 为什么 哪 哪里 哪儿 哪个 哪些 哪种 哪天 谁 啥 几 多少 是否 还是 或者
    那 这 那个 这个 那些 这些 一个 一些 一点 一下 有 没有 不 没 很 太 最 更 还 又 再 挺 比较 特别 非常
    会 能 要 想 可以 应该 得 地 把 被 给 让 对 从 向 为 为了 因为 所以 但是 如果 已经 正在 自己 个 些
    平时 一般 通常 经常 总是 每天 现在 最近 时候 喜欢 用户""".split()
)


def normalize_text(text: str) -> str:
    """The form two texts must share to count as the same memory."""
    text = unicodedata.normalize("NFKC", strip_invisible(text))
    return _WHITESPACE.sub(" ", text).strip().casefold()


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def has_han(text: str) -> bool:
    return bool(_HAN.search(text))


_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")


def han_share(text: str) -> float:
    """How much of a text is written in Chinese characters, 0..1: Han characters
    against Latin letters, a Han character counted as one word and three Latin
    letters as one (the rough length of a word in each), so "我在 Google 做
    software engineer" is mixed, not English. 0 for a text of neither."""
    han = len(_HAN.findall(text))
    latin = len(_LATIN_LETTER.findall(text)) / 3.0
    return han / (han + latin) if han + latin else 0.0


def han_pairs(text: str) -> set[str]:
    """The text's pairs of adjacent Chinese characters: jieba may cut the same words two ways in two
    sentences, pairs match either way (forget matching, episode excerpts)."""
    han = [ch for ch in text if _HAN.match(ch)]
    return {a + b for a, b in zip(han, han[1:], strict=False)}


@lru_cache(maxsize=1)
def _jieba():
    """Load jieba once per process (first load takes about 3 s)."""
    with _jieba_lock:

        import jieba  # lazily: only Chinese text needs jieba, and loading it takes seconds

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba


@lru_cache(maxsize=4096)
def chinese_person_names(text: str) -> tuple[tuple[int, str], ...]:
    """The person names jieba's part-of-speech tagger reads in a Chinese text ("陈浩跟我求婚了" -> 陈浩), with
    where each starts: two or three characters tagged `nr`. Remembered per text (about 5 ms a sentence: a
    job reads a turn and the statements kept from it)."""
    import jieba.posseg  # loaded with jieba (_jieba), which initialises the dictionary once

    _jieba()
    out, at = [], 0
    for pair in jieba.posseg.cut(text):
        word, flag = pair.word, pair.flag
        if flag == "nr" and 2 <= len(word) <= 3 and has_han(word):
            out.append((at, word))
        at += len(word)
    return tuple(out)


@lru_cache(maxsize=1)
def _stemmer():
    return snowballstemmer.stemmer("english")


_LATIN_WORD = re.compile(r"^[a-z][a-z']*$")


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """English Snowball stem for Latin-script words ('moved' -> 'move'); other tokens as they are."""
    return _stemmer().stemWord(token) if _LATIN_WORD.match(token) else token


def index_tokens(text: str) -> list[str]:
    """Tokens of a document for the full-text index (search-mode segmentation for Han), stemmed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if has_han(text):
        pieces = _jieba().cut_for_search(text)
        return [stem(t) for piece in pieces for t in _WORD.findall(piece)]
    return [stem(t) for t in _WORD.findall(text)]


def query_tokens(text: str) -> list[str]:
    """Content words of a query: precise-mode segmentation, stopwords dropped, stemmed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if has_han(text):
        pieces = _jieba().cut(text)
        tokens = [t for piece in pieces for t in _WORD.findall(piece)]
    else:
        tokens = _WORD.findall(text)
    seen: dict[str, None] = {}
    for token in tokens:
        if token in ENGLISH_STOPWORDS or token in CHINESE_STOPWORDS:
            continue
        seen.setdefault(stem(token), None)
    return list(seen)


def query_words(text: str) -> list[tuple[str, str]]:
    """Each content word of a query as written (NFKC) beside its term, the token query_tokens makes of it
    (the same segmentation of the casefolded text), so an answer can say which of the asker's words a
    memory holds. A text whose casefolding changes its length ("ß") gives its words casefolded."""
    written = unicodedata.normalize("NFKC", text)
    folded = written.casefold()
    source = written if len(written) == len(folded) else folded
    pieces = _jieba().cut(folded) if has_han(folded) else [folded]
    out: list[tuple[str, str]] = []
    offset = 0
    for piece in pieces:
        for match in _WORD.finditer(piece):
            token = match.group()
            if token not in ENGLISH_STOPWORDS and token not in CHINESE_STOPWORDS:
                out.append((source[offset + match.start():offset + match.end()], stem(token)))
        offset += len(piece)
    return out


def index_document(text: str) -> str:
    """The string stored through to_tsvector('simple', ...)."""
    return " ".join(index_tokens(text))


def tsquery_from_tokens(tokens: list[str]) -> str:
    """An OR query over tokens; tokens are \\w+ only, so no quoting is needed."""
    return " | ".join(tokens)


def humanised_duration(seconds: float) -> str:
    """An age as a person reads it: '45 s', '3 min 28 s', '2 h 5 min', '4 days 3 h' (two units at most)."""
    seconds = max(int(seconds), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    if minutes:
        return f"{minutes} min" + (f" {secs} s" if secs else "")
    return f"{secs} s"


SINGULAR = {"memories": "memory", "history_scrubbed": "history row scrubbed", "candidates": "candidate",
            "jobs": "job", "vectors": "vector", "sources": "source", "receipts": "receipt"}


def counted(count: int, plural_name: str) -> str:
    """'1 memory', '2 memories': a count with its noun in the right number."""
    label = plural_name.replace("_", " ")
    if count == 1:
        label = SINGULAR.get(plural_name, label[:-1] if label.endswith("s") else label)
    return f"{count} {label}"


def bulk_summary(*, done: int, verb: str, why_not: dict[tuple[str, str], int]) -> tuple[str, str]:
    """What a bulk action did and why not, and how loud to say it: "0 restored: 2 were forgotten at the
    user's request and cannot be restored." `why_not` maps (singular, plural) phrasing to how many; the
    level is "success" when everything selected was done, "warning" when anything was not (above all
    when nothing was)."""
    reasons = "; ".join(f"{count} {one if count == 1 else many}" for (one, many), count in why_not.items() if count)
    text = f"{done} {verb}" + (f": {reasons}." if reasons else ".")
    return text, "warning" if done == 0 or reasons else "success"
