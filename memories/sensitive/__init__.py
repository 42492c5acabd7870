"""The one sensitive-data detector: what the review gate holds for a person (saves, changes, facts,
approvals) and what an episode withholds from its kept turns.

Detection runs on a normalised view of the text (`normalise`, memories/sensitive/digits.py): format characters
(zero-width spaces and joiners, bidi marks, soft hyphens) dropped, every Unicode digit (Arabic-Indic,
Devanagari, fullwidth ...) and Chinese numeral (小写 and 大写; 十 by position) read as an ASCII digit, runs of
four or more spelled-out digits read as digits, the rest NFKC (`＠` as `@`). Every character of the view
remembers the original character it came from, so a finding maps back to its span of the original text and
redaction replaces exactly that span (the rest of a Chinese sentence keeps its full-width punctuation).

Kinds (settings.SENSITIVE_DETECTORS picks which run; ORDER says which claims a span first):
- secret: API keys and tokens by their published shapes (sk-, AKIA, ghp_, xox?-, JWTs, AIza, sk_live_,
  glpat-, npm_, hf_, private-key blocks), a value after "api key is" / "token:", "my password is ...", PINs;
- email: `name@domain.tld` in any width, `[at]` / `(at)`, and spelled out ("alice at example dot com");
- phone: international numbers, Chinese mobiles, UK national numbers, numbers grouped the way phones are
  written (not dates, times, amounts, IP addresses, versions), and any grouping after a word that says it
  is a phone number ("my mobile is", "call me on", "手机");
- card (issuer range and Luhn), national_id (US SSN, Chinese resident id), iban (any case, mod 97);
- birth_date: a full date with its year next to born / birthday / DOB / 出生 / 生日;
- address: a house number and a street (or 路…号, 栋/单元/室) with a word that says someone lives or
  receives post there, "my address is ...", a UK postcode in such a sentence;
- health, sex_life, religion, politics: GDPR's special categories, in English and Chinese, said of a person
  (allergies, intolerances and diets are deliberately not held: docs/governance.md).

`findings_across_turns` reads one speaker's consecutive turns two at a time (a number split over two turns).
tests/samples/sensitive.json and tests/samples/sensitive_*.jsonl are the labelled sets; tests/test_sensitive.py
reports recall and false positives by kind (the second set on its dev and held-out parts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from memories.sensitive.digits import (
    card_issuer_plausible,
    chinese_id_valid,
    iban_valid,
    luhn_valid,
    normalise,
    ssn_valid,
)

# --------------------------------------------------------------------------- patterns (on the view)

_W = r"[A-Za-z0-9_]"  # a word character of a number or an address (\\w would include every Chinese character)
_AT, _DOT = r"(?:@|\s*(?:\[at\]|\(at\))\s*)", r"(?:\.|\s*(?:\[dot\]|\(dot\))\s*)"
_EMAIL = re.compile(rf"(?<![A-Za-z0-9_.+\-])[A-Za-z0-9_.+\-]+{_AT}"  # a local part from its start: linear time
                    rf"[A-Za-z0-9\-]+(?:{_DOT}[A-Za-z0-9\-]+)*{_DOT}[A-Za-z]{{2,}}(?!{_W})",
                    re.IGNORECASE)
_SEP = r"[\s.\-/]"
_CARD = re.compile(rf"(?<!{_W}|[.+])\d(?:{_SEP}?\d){{12,18}}(?!{_W})")
_SSN = re.compile(rf"(?<!{_W}|[.\-])(\d{{3}})([\s.\-])(\d{{2}})\2(\d{{4}})(?!{_W}|-|\.\d)")
_SSN_BARE = re.compile(r"(?:ssn|social security(?: number| no\.?)?|社会安全号)\D{0,12}?(?<!\d)(\d{9})(?!\d)",
                       re.IGNORECASE)
_CHINESE_ID = re.compile(rf"(?<!{_W})(\d{{6}})\s?(\d{{8}})\s?(\d{{3}}[\dXx])(?!{_W})")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}")
_INTERNATIONAL = re.compile(rf"(?<!{_W}|\+)(?:\+\d{{1,3}}|00[1-9]\d{{0,2}}[\s.\-])(?:[\s.\-]?\(?\d{{1,4}}\)?){{2,6}}"
                            rf"(?!{_W}|[.\-/]{_W})")
_UK_NATIONAL = re.compile(r"(?<![A-Za-z0-9_.+\-])0\d{4}[\s\-]?\d{6}(?![A-Za-z0-9_]|[.\-]\d)")  # 07700 900123
_CHINESE_MOBILE = re.compile(r"(?<!\d)1[3-9]\d(?:[\s\-]?\d){8}(?!\d)")
_GROUPED = re.compile(rf"(?<!{_W})(?<![.+\-/])(?<!\d:)(?<!\d[\s.\-/])"
                      rf"(?:\(\d{{2,5}}\)\s?|\d{{2,5}}[\s.\-/])(?:\d{{2,4}}[\s.\-/]){{0,3}}\d{{3,4}}(?!{_W}|[.\-/:,]{_W}|[\s.\-/]\d)")
_BARE_DIGITS = re.compile(rf"(?<!{_W}|\.)\d{{7,15}}(?!{_W}|[.,]\d)")
_PHONE_WORDS = re.compile(r"phone|call|tel\b|mobile|cell|whatsapp|text me|reach me|fax|number is|"
                          r"电话|手机|号码|致电|打给|联系方式|微信", re.IGNORECASE)
_DATE_SHAPES = (re.compile(r"^\d{4}([.\-/])\d{1,2}\1\d{1,2}$"), re.compile(r"^\d{1,2}([.\-/])\d{1,2}\1\d{2,4}$"))
_AMOUNT_AFTER = re.compile(r"^\s*(?:[%€$£¥元块円]|km|kg|m\b|cm|mm|ml|l\b|g\b|mb|gb|tb|mph|"
                           r"dollars|euros|yuan|rmb|usd|eur|words|people|steps|calories|miles|points|次|人|个|步|米|公里)",
                           re.IGNORECASE)
_AMOUNT_BEFORE = re.compile(r"(?:[€$£¥]|rmb|usd|eur|cny)\s*$", re.IGNORECASE)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


Match = tuple[int, int]  # a span of the view


# "alice at example dot com", "alice at example.com", "alice艾特example点com": the spelled forms, with a
# known top-level domain, and not a phrase such as "look at this dot com bubble" (a common word before "at").
_TLDS = r"(?:com|net|org|edu|gov|io|co|uk|de|fr|es|it|pt|nl|cn|jp|in|br|au|ca|ch|se|me|ai|dev|info|biz|us|eu)"
_SPOKEN_EMAIL = re.compile(
    rf"(?<![A-Za-z0-9._%+\-'’])([A-Za-z0-9][A-Za-z0-9._%+\-]*)(?:\s+at\s+|\s*艾特\s*|\s*@\s*)"
    rf"((?:[A-Za-z0-9\-]+(?:\s+dot\s+|\s*点\s*|\.))+){_TLDS}(?![A-Za-z0-9])", re.IGNORECASE)
_NOT_A_MAILBOX = frozenset("""a an the i me you he she it we they this that here there home work look looking looked
be am is are was were been stay stayed staying live lived living arrive arrived meet met see saw eat ate good great
bad best all one back out up down in on off go went going come came coming aim aimed smile smiled laugh laughed
stare stared sit sat stand stood shop shopped play played worked study studied office school""".split())


def _emails(view: str) -> Iterator[Match]:
    for m in _EMAIL.finditer(view):
        yield m.span()
    for m in _SPOKEN_EMAIL.finditer(view):
        if "@" not in m.group(0) or " dot " in m.group(0).lower() or "点" in m.group(0):
            if m.group(1).lower() not in _NOT_A_MAILBOX:
                yield m.span()


def _cards(view: str) -> Iterator[Match]:
    for m in _CARD.finditer(view):
        digits = _digits(m.group(0))
        if 13 <= len(digits) <= 19 and card_issuer_plausible(digits) and luhn_valid(digits) and len(set(digits)) > 1:
            yield m.span()


def _national_ids(view: str) -> Iterator[Match]:
    for m in _SSN.finditer(view):
        if ssn_valid(m.group(1) + m.group(3) + m.group(4)):
            yield m.span()
    for m in _SSN_BARE.finditer(view):
        if ssn_valid(m.group(1)):
            yield m.span(1)
    for m in _CHINESE_ID.finditer(view):
        if chinese_id_valid(m.group(1) + m.group(2) + m.group(3)):
            yield m.span()


def _ibans(view: str) -> Iterator[Match]:
    """Upper or lower case ("gb82 west ..."): the longest stretch that passes mod 97 and ends a word."""
    for m in _IBAN.finditer(view):
        found = m.group(0)
        for end in range(len(found), 14, -1):
            after = view[m.start() + end:m.start() + end + 1]
            if (not after or not after.isalnum()) and found[end - 1] != " " and iban_valid(found[:end]):
                yield m.start(), m.start() + end
                break


def _near_phone_word(view: str, start: int, end: int) -> bool:
    return bool(_PHONE_WORDS.search(view[max(0, start - 40):start])
                or _PHONE_WORDS.search(view[end:end + 12]))


def _looks_like_amount_or_date(view: str, start: int, end: int) -> bool:
    found = view[start:end]
    if any(shape.match(found) for shape in _DATE_SHAPES):
        return True
    return bool(_AMOUNT_AFTER.match(view[end:end + 10]) or _AMOUNT_BEFORE.search(view[max(0, start - 5):start]))


def _phones(view: str) -> Iterator[Match]:
    for m in _INTERNATIONAL.finditer(view):
        if 8 <= len(_digits(m.group(0))) <= 15:
            yield m.span()
    for pattern in (_CHINESE_MOBILE, _UK_NATIONAL):
        for m in pattern.finditer(view):
            yield m.span()
    for m in _GROUPED.finditer(view):
        digits = _digits(m.group(0))
        if not 7 <= len(digits) <= 12 or _looks_like_amount_or_date(view, *m.span()):
            continue
        if _NAMED_OTHERWISE.search(view[max(0, m.start() - 24):m.start()]):
            continue  # "meeting ID 843 2219 0047", "order 112 4455 667": a number that says what it is
        groups = [g for g in re.split(r"[\s.\-/()]+", m.group(0)) if g]
        if [len(g) for g in groups] == [3, 2, 4]:
            continue  # shaped like an SSN (the national-id finder decides)
        if len(groups) == 2 and not _near_phone_word(view, *m.span()):
            continue  # "2024-0042", "1990-2000", "31.2304": a phone written in two groups says so nearby
        if len(groups) >= 4 and "." in m.group(0) and all(len(g) <= 3 for g in groups):
            continue  # an IP address
        if "/" in m.group(0) and not _near_phone_word(view, *m.span()):
            continue  # a fraction, a path, a date
        yield m.span()
    for m in _BARE_DIGITS.finditer(view):
        if _near_phone_word(view, *m.span()) and not _looks_like_amount_or_date(view, *m.span()):
            yield m.span()
    for m in _SAID_NUMBER.finditer(view):  # "my mobile is 07700 900123": any grouping, once it says so
        digits = _digits(m.group(1))
        between = view[m.start():m.start(1)]
        if (7 <= len(digits) <= 15 and not _looks_like_amount_or_date(view, *m.span(1))
                and not _NOT_THE_NUMBER.search(between)):
            yield m.span(1)


_NAMED_OTHERWISE = re.compile(r"\b(?:ID|meeting|order|invoice|ticket|ref|reference|tracking|account|serial|SKU|"
                              r"code|booking|confirmation|case|policy|model|part)\b[^\d]{0,12}$", re.IGNORECASE)
_NOT_THE_NUMBER = re.compile(r"\b(?:extension|ext|room|ticket|order|invoice|reference|ref)\b", re.IGNORECASE)
_SAID_NUMBER = re.compile(r"(?:phone|mobile|cell|tel\b|telephone|whatsapp|fax|landline|(?:my|his|her|their) number|"
                          r"call(?: me| us| him| her)?(?: on| at)?|ring(?: me)?(?: on| at)?|text me(?: on| at)?|"
                          r"电话|手机|手机号|座机|联系方式|微信)[^\d+\n]{0,16}?(\+?\(?\d[\d\s.\-()]{5,24}\d)(?![\d])",
                          re.IGNORECASE)


# --------------------------------------------------------------------------- secrets

# API keys and tokens by the shapes their issuers publish, and a password, passcode or PIN a person states.
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-(?:proj-|live-|test-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # a JWT
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret keys
    r"|glpat-[0-9A-Za-z_\-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}"  # GitLab, npm, Hugging Face
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r")")
_NAMED_SECRET = re.compile(r"(?:api[ _\-]?key|secret(?: key)?|access[ _\-]?key|auth[ _\-]?token|bearer token|"
                           r"token|密钥|令牌)\s*(?:is|was|:|=|是|为|：)\s*[\"'“「]?([A-Za-z0-9_\-./+=]{16,})",
                           re.IGNORECASE)
_PASSWORD = re.compile(r"(?:password|passcode|passwd|pwd|passphrase|pin(?: code| number)?|密码|口令|PIN码)"
                       r"(?:\s+(?:for|to|of|on)\s+[^\s,.:;]+(?:\s+[^\s,.:;]+)?)?"
                       r"\s*(?:is|was|:|=|是|为|：|:)\s*[\"'“「『]?([^\s\"'”」』，。,;；]{3,64})", re.IGNORECASE)
_NOT_A_PASSWORD = frozenset("""too very so not still just a an the my your our their in on at case same different new
old weak strong long short expired wrong incorrect invalid correct right saved stored secure safe changed reset
forgotten hard easy simple complicated required needed set also being now written encrypted hashed protected
compromised leaked hidden private secret something nothing what where how why which that this it required
mandatory optional blank empty ready locked unlocked sent shared""".split())


# A login given as a pair ("Login for the NAS is admin / Winter2024!", "creds: root:hunter22", "username
# admin password Tr0ub4dor"): the second part is the secret when it is no plain word (a digit or a symbol).
_CREDENTIALS = re.compile(
    r"\b(?:log-?in|log in|sign-?in|credentials?|creds|user(?:name)?\s*(?:and|&|/)\s*pass(?:word)?|account)\b"
    r"(?:\s+(?:details\s+)?(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[^\s,.:;/]+(?:\s+[^\s,.:;/]+)?)?"
    r"\s*(?:is|are|was|were|:|=|是|为|：)\s*[\"'“]?[^\s/:|,\"'”]{2,64}[\"'”]?"
    r"(?:\s*[/:|,]\s*|\s+and\s+|\s+)(?:(?:pw|pass(?:word)?)\s*[:=]?\s*)?[\"'“]?([^\s\"'”,;]{4,64})",
    re.IGNORECASE)
_BARE_PASSWORD = re.compile(r"\b(?:password|passwd|pwd|pw|passcode)\s+([^\s\"'”,;]{6,64})", re.IGNORECASE)


def _credentials(view: str) -> Iterator[Match]:
    for pattern in (_CREDENTIALS, _BARE_PASSWORD):
        for m in pattern.finditer(view):
            value = m.group(1).rstrip(".!?)")
            if value.isascii() and (any(c.isdigit() for c in value) or not value.isalnum()) \
                    and any(c.isalpha() for c in value) and value.lower() not in _NOT_A_PASSWORD:
                yield m.start(1), m.start(1) + len(m.group(1))


def _secrets(view: str) -> Iterator[Match]:
    yield from _credentials(view)
    for m in _KEY_SHAPES.finditer(view):
        yield m.span()
    for m in _NAMED_SECRET.finditer(view):
        value = m.group(1)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            yield m.span(1)
    for m in _PASSWORD.finditer(view):
        value = m.group(1).rstrip(".!?")
        word = m.group(0).lower()
        if value.lower() in _NOT_A_PASSWORD or not value.isascii():
            continue
        if ("pin" in word and "pin" == word[:3]) and not value.isdigit():
            continue
        yield m.start(1), m.start(1) + len(value)


# --------------------------------------------------------------------------- home addresses

_STREET_TYPES = (r"(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Way|Place|Pl|Terrace|"
                 r"Close|Crescent|Gardens|Square|Sq|Parkway|Pkwy|Highway|Hwy|Row|Mews|Grove|Circle|Cir)")
_STREET = re.compile(rf"(?<![A-Za-z0-9])\d{{1,5}}[A-Za-z]?,?\s+(?:[A-Za-z][A-Za-z'’.\-]*\s+){{1,4}}"
                     rf"{_STREET_TYPES}\b\.?",
                     re.IGNORECASE)
_STREET_FIRST = re.compile(r"\b(?:Rua|Avenida|Calle|Rue|Via|Viale|Straße|Strasse|Carrer|Praça|Plaza)\s+"
                           r"(?:[A-Za-zÀ-ÿ'’.\-]+\s+){0,4}?[A-Za-zÀ-ÿ'’.\-]+,?\s*(?:n\.?º\s*)?\d{1,5}[A-Za-z]?\b")
_NOT_A_STREET_NAME = frozenset("the a an down up along across miles mile km minutes minute blocks block of to from on "
                               "in at my our this that is was".split())
_POSTCODE_UK = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b")
_ADDRESS_SAID = re.compile(r"\b(?:my|our|home|his|her|their)\s+(?:home\s+|postal\s+|mailing\s+)?address\s*"
                           r"(?:is|:)\s*([^.;!?\n]{6,80}?\d[^.;!?\n]{0,60})(?=[.;!?\n]|$)", re.IGNORECASE)
_HOME_CUE = re.compile(r"\b(?:live|lives|living|lived|moved|moving|move|home|house|flat|apartment|apt|address|reside|"
                       r"(?:my|our|new|his|her) place|"
                       r"deliver|delivery|send|ship|mail|post|stay(?:ing)? at)\b|住|地址|家|寄到|送到|搬到|收货",
                       re.IGNORECASE)
_ZH_ADDRESS = re.compile(r"(?:[\u4e00-\u9fff][\u4e00-\u9fff0-9]{0,10}(?:路|街|大道|大街|道|巷|胡同|弄|里)"
                         r"\s*\d{1,5}\s*(?:号|號|弄)"
                         r"(?:\s*\d{1,4}\s*(?:号楼|栋|幢|座))?(?:\s*\d{1,3}\s*(?:单元|單元))?(?:\s*\d{1,5}\s*(?:室|号|房))?"
                         r"|[\u4e00-\u9fff]{2,10}(?:小区|花园|公寓|苑|新村|家园)\s*\d{1,4}\s*(?:号楼|栋|幢|座)"
                         r"(?:\s*\d{1,3}\s*(?:单元|單元))?(?:\s*\d{1,5}\s*(?:室|号|房))?"
                         r"|\d{1,4}\s*(?:号楼|栋|幢)\s*\d{1,3}\s*(?:单元|單元)\s*\d{1,5}\s*(?:室|号)?)")


_SENTENCE_END = re.compile(r"[.!?。！？\n;；]")
_SENTENCE_REACH = 300  # characters either side: a long text costs linear time, not a scan per finding


def _sentence(view: str, start: int, end: int) -> str:
    """The sentence around [start, end) of the view (at most _SENTENCE_REACH characters either side)."""
    low = max(0, start - _SENTENCE_REACH)
    before = [m.end() for m in _SENTENCE_END.finditer(view, low, start)]
    after = _SENTENCE_END.search(view, end, end + _SENTENCE_REACH)
    return view[before[-1] if before else low:after.start() if after else min(len(view), end + _SENTENCE_REACH)]


def _addresses(view: str) -> Iterator[Match]:
    for m in _ADDRESS_SAID.finditer(view):
        yield m.span(1)
    for pattern in (_STREET, _STREET_FIRST, _ZH_ADDRESS, _POSTCODE_UK):
        for m in pattern.finditer(view):
            words = m.group(0).split()[1:-1]
            if pattern is _STREET and any(w.lower().strip(",") in _NOT_A_STREET_NAME for w in words):
                continue
            if _HOME_CUE.search(_sentence(view, *m.span())):
                yield m.span()


# --------------------------------------------------------------------------- dates of birth

_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
           r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_FULL_DATE = (rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS},?\s+\d{{4}}"
              rf"|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
              r"|\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.](?:\d{4}|\d{2})"
              r"|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号號]?)")
_BIRTH = re.compile(rf"(?:born|birthday|birth\s*date|date\s+of\s+birth|d\.?o\.?b\.?|出生|生日|生于|出生日期)"
                    rf"[^.!?。！？\d]{{0,24}}?({_FULL_DATE})(?![\d])", re.IGNORECASE)


_BIRTH_AFTER = re.compile(rf"(?<!\d)({_FULL_DATE})\s*(?:出生|生的|生人|"
                          r"(?:is|was) (?:my|his|her) (?:birthday|date of birth)|"
                          r"is when I was born)", re.IGNORECASE)


def _birth_dates(view: str) -> Iterator[Match]:
    for pattern in (_BIRTH, _BIRTH_AFTER):
        for m in pattern.finditer(view):
            yield m.span(1)


# --------------------------------------------------------------------------- GDPR's special categories

# Health, sex life and orientation, religion, political opinions (GDPR art. 9): a term that names one, said of
# a person (the speaker, the user, someone named or related), and not of a pet, a book, a charity or a sign.
# Allergies, intolerances and diets are not held: they are what an assistant must know to be safe (docs).
_PERSON_EN = re.compile(r"\b(?:(?i:I|I'm|I’m|I've|I’ve|I'd|me|my|we|we're|our|he|he's|she|she's|his|her|him|they|"
                        r"their|user|mom|mum|dad|mother|father|wife|husband|partner|son|daughter|brother|sister|"
                        r"grandma|grandpa|grandmother|grandfather|aunt|uncle|cousin|friend|boss|colleague|boyfriend|"
                        r"girlfriend|fiancée?)|[A-Z][a-z]+(?=\s+(?:has|had|is|was|takes|took|sees|got|'s|’s)\b))\b")
_PERSON_ZH = re.compile(r"我|他|她|用户|妈|爸|老婆|老公|丈夫|妻子|儿子|女儿|哥|姐|弟|妹|爷爷|奶奶|外公|外婆|朋友|同事|"
                        r"得了|患有|患了|确诊|查出")
_NOT_A_PERSON = re.compile(r"\b(?:dog|dogs|cat|cats|pet|pets|puppy|kitten|horse|hamster|parrot|research|researcher|"
                           r"charity|fundrais\w*|awareness|donat\w*|documentary|movie|film|novel|book|article|podcast|"
                           r"lecture|course|textbook|museum|zodiac|horoscope|star sign|season|essay|exam|quiz|"
                           r"campaign for|walk for|run for|ride for|a cure)\b|"
                           r"狗|猫|宠物|研究|纪录片|电影|小说|书|课|讲座|"
                           r"公益|捐|星座|考试|论文", re.IGNORECASE)

_HEALTH_EN = re.compile(
    r"\b(?:AIDS|(?i:HIV(?:[\- ]positive)?|chemo(?:therapy)?|radiotherapy|antidepressants?|SSRIs?|insulin|metformin|"
    r"schizophreni\w*|bipolar|PTSD|ADHD|OCD|autis(?:m|tic)|dementia|alzheimer'?s|parkinson'?s|epilep(?:sy|tic)|"
    r"multiple sclerosis|miscarriage|abortion|IVF|infertil\w*|STDs?|STIs?|herpes|chlamydia|syphilis|"
    r"gonorrh?oea|hepatitis(?: [ABC])?|tuberculosis|diabet(?:es|ic)|cancer|leuka?emia|lymphoma|tumou?rs?|"
    r"(?:clinical |severe |postpartum |major )?depression|depressive|anxiety(?: disorder)?|panic attacks?|"
    r"eating disorder|anorexi[ac]|bulimi[ac]|rehab|alcoholi(?:c|sm)|"
    r"(?:drug|alcohol|opioid|gambling) (?:addiction|abuse)|"
    r"addiction|asthma|psoriasis|crohn'?s|c[oe]eliac disease|lupus|arthritis|hypertension|high blood pressure|"
    r"heart (?:condition|disease|failure|attack)|pregnan(?:t|cy)|expecting a baby|diagnos(?:ed|is)|prescribed|"
    r"disabilit(?:y|ies)|disabled|wheelchair|suicid\w*|self[\- ]harm|HPV|mental illness|"
    r"(?:my|his|her|their) mental health (?:issues|problems|struggles|condition|crisis|diagnosis)|"
    r"struggl\w* with (?:my |his |her )?mental health|"
    r"(?:my|his|her|our|a|the) (?:therapist|psychiatrist|psychologist|oncologist|counsell?or)(?! in\b| at\b| for\b)|"
    r"(?:in|started|starting|going to) therapy|therapy sessions?|"
    r"(?:my|his|her) (?:meds|medication|diagnosis|prescription|treatment|surgery|condition)))\b")
_HEALTH_COLLOQUIAL = re.compile(r"\b(?:(?:a|an|I'm a|I am a) Cancer\b|Cancer (?:season|sign)|Great Depression|"
                                r"tropical depression|economic depression|so OCD|addicted to|diagnosed the (?:problem|"
                                r"issue|bug|fault)|AIDS (?:for|to)\b|teaching aids|hearing aids?)", re.IGNORECASE)
_HEALTH_ZH = re.compile(r"艾滋|HIV|癌|肿瘤|化疗|放疗|白血病|淋巴瘤|糖尿病|抑郁症|抑郁|焦虑症|双相|躁郁|精神分裂|自闭症|"
                        r"孤独症|多动症|强迫症|癫痫|老年痴呆|阿尔茨海默|帕金森|乙肝|丙肝|肝炎|肺结核|结核|性病|梅毒|"
                        r"淋病|疱疹|怀孕|怀上了|流产|堕胎|打胎|试管婴儿|不孕|不育|哮喘|高血压|心脏病|心梗|中风|"
                        r"抗抑郁药|胰岛素|心理医生|心理咨询|精神科|心理治疗|住院治疗|残疾|轮椅|戒毒|戒酒|酗酒|"
                        r"毒瘾|自杀|自残|进食障碍|厌食症|红斑狼疮|类风湿")
_HEALTH_ZH_COLLOQUIAL = re.compile(r"巨蟹|癌症研究|抗癌公益")

_SEX_EN = re.compile(
    r"\b(?:(?:I'm|I’m|I am|he's|she's|he is|she is|they're|we're|my \w+ is)\s+(?:a\s+)?(?:gay|lesbian|bisexual|"
    r"queer|pansexual|asexual|transgender|trans (?:man|woman)|non-binary|a virgin)(?![\-\w])|"
    r"(?:I'm|I am) straight(?=[.,!?;]|$| and| but)|"
    r"(?:came|coming|come) out (?:as|to (?:my|his|her))|sex life|(?:have|had|having|has) sex|"
    r"sexual (?:partner|partners|"
    r"health|orientation|history|problems?)|one[\- ]night stand|hook(?:ed|ing)? up with|hookups?|Grindr|"
    r"friends with benefits|open relationship|polyamor\w*|swingers?|erectile dysfunction|(?:my|his|her) libido|"
    r"lost (?:my|his|her) virginity|BDSM|threesomes?|sexting|OnlyFans)\b", re.IGNORECASE)
_SEX_ZH = re.compile(r"(?:我|他|她)是(?:同性恋|gay|GAY|拉拉|les|双性恋|无性恋|跨性别者?|异性恋)|"
                     r"出柜|性取向|性生活|约炮|"
                     r"一夜情|炮友|开放式关系|(?:跟|和|同)[^，。,.!?！？]{1,8}(?:发生了?关系|上床)|性伴侣|阳痿|早泄|处男|处女(?![座作地航秀])")

_FAITHS = (r"(?:Muslim|Christian|Catholic|Protestant|Jewish|Jew|Hindu|Buddhist|Sikh|Mormon|Jain|Baptist|Methodist|"
           r"Evangelical|Orthodox|atheist|agnostic|Jehovah's Witness|Quaker|Anglican|Lutheran|Pentecostal|"
           r"Presbyterian|Shia|Sunni|Taoist)")
_RELIGION_EN = re.compile(
    rf"\b(?:(?:I'm|I’m|I am|I was|we're|we are|he's|she's|he is|she is|they're|is|are|was|were|became|become|"
    rf"raised|born|grew up)\s+(?:a\s+|an\s+)?(?:devout\s+|practi[cs]ing\s+|born-again\s+|lapsed\s+|strict\s+|"
    rf"non-practi[cs]ing\s+)?{_FAITHS}\b(?!\s+(?:school|college|university|hospital|charity|deli|restaurant|name))"
    r"|(?:go|goes|went|attend|attends|attended|going)\s+(?:to\s+)?(?:church|mass|mosque|synagogue|temple|gurdwara|"
    r"Bible study|confession|Friday prayers?)\b(?!\s+(?:to see|to look|to photograph|for the architecture))"
    r"|\bI\s+(?:\w+\s+)?pray(?:ed|s)?\b(?:\s+(?:five times|daily|every|to|at|before|for))|"
    r"fast(?:ing)? (?:for|during) Ramadan|observ(?:e|es|ing) Ramadan|keep(?:s|ing)? kosher|(?:only )?eat(?:s)? only "
    r"halal|only eat halal|keep(?:s|ing)? (?:the )?Sabbath|observ(?:e|es|ing) (?:the )?Sabbath|converted to (?:Islam|"
    r"Christianity|Judaism|Buddhism|Catholicism|Hinduism)|(?:was|got|been) bapti[sz]ed|(?:my|our|his|her) "
    r"(?:faith|religion|pastor|imam|rabbi|priest|parish|congregation|church|mosque|synagogue|guru)\b|"
    r"(?:don't|do not|doesn't|does not) believe in God|believe in God|accepted Jesus|born again|my religious)",
    re.IGNORECASE)
_RELIGION_ZH = re.compile(r"(?:我|他|她|我们|全家|我妈|我爸)(?:是|信|信仰|皈依了?|成了|改信了?)(?:一名|一个|虔诚的)?"
                          r"(?:基督徒|天主教徒|穆斯林|佛教徒|道教徒|伊斯兰教|基督教|天主教|犹太教|耶稣|主|佛教?|道教|"
                          r"无神论者?)|做礼拜|望弥撒|受洗|斋月|封斋|吃斋念佛|念佛|守安息日|祷告|去清真寺礼拜|"
                          r"每(?:周|个星期|个礼拜)[日天]?(?:都)?去(?:教堂|清真寺|寺庙)")

_PARTIES = (r"(?:Labour|Tory|Tories|Conservatives?|Democrats?|Republicans?|Greens?|Lib Dems?|Liberal Democrats?|"
            r"Reform UK|SNP|Communists?|Socialists?|Libertarians?|GOP|MAGA)")
_POLITICS_EN = re.compile(
    rf"\b(?:I|we|he|she|they|my \w+)\s+(?:\w+\s+)?vot(?:ed|e|es|ing)\s+(?:for\s+|against\s+)?(?:the\s+)?"
    rf"(?:{_PARTIES}|Trump|Biden|Harris|Obama|Clinton|Sanders|Brexit|Leave|Remain|Le Pen|Macron|Starmer|Sunak|Modi)"
    rf"|(?:I'm|I am|he's|she's|he is|she is|I've always been|we're)\s+(?:a\s+)?(?:lifelong\s+|registered\s+|"
    rf"card-carrying\s+|proud\s+|staunch\s+)?(?:{_PARTIES}|Democrat|Republican|socialist|communist|libertarian|"
    rf"Marxist|anarchist|Brexiteer|Remainer|pro-life|pro-choice|anti-abortion|left-wing|right-wing|"
    rf"conservative|liberal|progressive)\b(?!\s+(?:with|about|when|in how|in my|estimate|amount))"
    rf"|(?:member of|joined|support|supports|supported|back|backs|campaign(?:ed|ing)? for|donate[sd]? to|"
    rf"canvass(?:ed|ing)? for)\s+(?:the\s+)?(?:Labour|Conservative|Tory|Green|Democratic|Republican|"
    rf"Liberal Democrat|Reform|Communist|Socialist|Libertarian|[A-Z][a-z]+) Party"
    r"|(?i:union member|member of the (?:\w+ )?(?:trade )?union|joined the (?:[\w'’]+ )?union|shop steward"
    r"|my political (?:views|opinions|beliefs)|my politics|politically,? I'm|I lean (?:left|right)|"
    r"I'm on the (?:left|right)(?=[.,!;?]|$|,? politically| of (?:the party|politics)))|"
    r"(?:I|we)\s+(?:support|hate|love|can't stand|despise|admire|oppose)\s+"
    r"(?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris|Netanyahu|Erdogan|Bolsonaro|Lula)|"
    r"I think (?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris) (?:is|was|should|will)")
_POLITICS_ZH = re.compile(r"(?:我|他|她)是(?:一名)?(?:中共|共产)?党员|(?:我|他|她)(?:入党了|入了党)|"
                          r"(?:我|他|她)(?:支持|反对|讨厌|拥护)(?:民进党|国民党|共产党|民主党|共和党|工党|保守党|"
                          r"川普|特朗普|拜登|政府|台独|港独)|(?:我|他|她)投(?:票)?给了?(?:民进党|国民党|民主党|共和党|"
                          r"工党|保守党|川普|特朗普|拜登|赖清德|侯友宜|柯文哲)|(?:我|他|她)是(?:自由派|左派|右派|保守派|"
                          r"民族主义者|共产主义者|社会主义者|无政府主义者)|工会会员|加入了工会|我的政治(?:立场|观点)")


def _said_of_a_person(view: str, start: int, end: int, *, chinese: bool) -> bool:
    sentence = _sentence(view, start, end)
    if _NOT_A_PERSON.search(sentence):
        return False
    return bool((_PERSON_ZH if chinese else _PERSON_EN).search(sentence))


def _health(view: str) -> Iterator[Match]:
    for m in _HEALTH_EN.finditer(view):
        sentence = _sentence(view, *m.span())
        if not _HEALTH_COLLOQUIAL.search(sentence) and _said_of_a_person(view, *m.span(), chinese=False):
            yield m.span()
    for m in _HEALTH_ZH.finditer(view):
        sentence = _sentence(view, *m.span())
        if not _HEALTH_ZH_COLLOQUIAL.search(sentence) and _said_of_a_person(view, *m.span(), chinese=True):
            yield m.span()


_ABOUT_A_WORK = re.compile(r"\b(?:documentary|movie|film|novel|book|biography|article|podcast|lecture|course|"
                           r"textbook|museum|essay|exam|quiz|class)\b|纪录片|电影|小说|书|讲座|考试|论文",
                           re.IGNORECASE)


def _topic(english: re.Pattern[str], chinese: re.Pattern[str]) -> Callable[[str], Iterator[Match]]:
    """A special category other than health: its patterns already say it of a person; a sentence about
    a book or a film about it is not the person's."""
    def find(view: str) -> Iterator[Match]:
        for pattern in (english, chinese):
            for m in pattern.finditer(view):
                if not _ABOUT_A_WORK.search(_sentence(view, *m.span())):
                    yield m.span()
    return find


FINDERS: dict[str, Callable[[str], Iterator[Match]]] = {
    "secret": _secrets, "email": _emails, "card": _cards, "national_id": _national_ids, "iban": _ibans,
    "phone": _phones, "birth_date": _birth_dates, "address": _addresses, "health": _health,
    "sex_life": _topic(_SEX_EN, _SEX_ZH), "religion": _topic(_RELIGION_EN, _RELIGION_ZH),
    "politics": _topic(_POLITICS_EN, _POLITICS_ZH)}
# Withheld as (a card's digits are no phone number: the more specific kinds claim their spans first).
MARKERS = {"secret": "[secret withheld]", "national_id": "[id withheld]", "card": "[card withheld]",
           "iban": "[iban withheld]", "email": "[email withheld]", "phone": "[phone withheld]",
           "birth_date": "[date of birth withheld]", "address": "[address withheld]", "health": "[health withheld]",
           "sex_life": "[intimate life withheld]", "religion": "[religion withheld]", "politics": "[politics withheld]"}
ORDER = ("secret", "national_id", "iban", "card", "email", "birth_date", "phone", "address", "health", "sex_life",
         "religion", "politics")
# What identifies a person or opens an account: refused in ids (a special category is not in an id's words).
IDENTIFYING = ("secret", "national_id", "iban", "card", "email", "phone")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int  # in the original text
    end: int


def find_sensitive(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> list[Finding]:
    """Every non-overlapping finding of the given kinds, in the original text's coordinates."""
    view = normalise(text)
    taken: list[tuple[int, int]] = []
    found: list[Finding] = []
    for kind in ORDER:
        if kind not in kinds:
            continue
        for start, end in FINDERS[kind](view.text):
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            original = view.span(start, end)
            found.append(Finding(kind, *original))
    return sorted(found, key=lambda f: f.start)


def sensitive_kinds_in(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> list[str]:
    """Which kinds the text carries, in `kinds` order."""
    present = {f.kind for f in find_sensitive(text, kinds)}
    return [kind for kind in kinds if kind in present]


def redact(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> str:
    """The text with every finding replaced by its marker."""
    out, position = [], 0
    for finding in find_sensitive(text, kinds):
        out.append(text[position:finding.start])
        out.append(MARKERS[finding.kind])
        position = finding.end
    out.append(text[position:])
    return "".join(out)


def findings_across_turns(texts: Sequence[str],
                          kinds: tuple[str, ...] | list[str] = ORDER) -> dict[int, list[Finding]]:
    """What only shows when a turn is read with the next one ("my card is 4111 1111" / "1111 1111"): for
    each turn, the parts of such findings that lie in it, in its own coordinates. `texts`: one speaker's
    consecutive turns, in order."""
    parts: dict[int, list[Finding]] = {}
    for index in range(len(texts) - 1):
        first, second = texts[index], texts[index + 1]
        boundary = len(first) + 1
        for finding in find_sensitive(f"{first} {second}", kinds):
            if finding.start < len(first) and finding.end > boundary:
                parts.setdefault(index, []).append(Finding(finding.kind, finding.start, len(first)))
                parts.setdefault(index + 1, []).append(Finding(finding.kind, 0, finding.end - boundary))
    return parts


def redact_turns(texts: Sequence[str], kinds: tuple[str, ...] | list[str] = ORDER) -> list[str]:
    """Each turn redacted of what it carries alone and of its part of what it carries with a neighbour."""
    across = findings_across_turns(texts, kinds)
    redacted = []
    for index, text in enumerate(texts):
        shared = across.get(index, [])  # the finding read with the neighbour names the kind (a card, not a phone)
        spans = sorted([*shared, *find_sensitive(text, kinds)], key=lambda f: (f.start, -f.end, f not in shared))
        out, position = [], 0
        for finding in spans:
            if finding.end <= position:
                continue
            out.append(text[position:max(position, finding.start)])
            out.append(MARKERS[finding.kind])
            position = finding.end
        out.append(text[position:])
        redacted.append("".join(out))
    return redacted
