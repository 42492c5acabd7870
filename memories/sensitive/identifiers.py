"""Identifiers: e-mail addresses, payment cards, national ids, IBANs and phone numbers, found on the
normalised view (memories/sensitive/digits.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from memories.sensitive.common import Match, W, digits_of, sentence_of
from memories.sensitive.digits import (
    card_issuer_plausible,
    chinese_id_checks,
    chinese_id_valid,
    iban_valid,
    luhn_valid,
    ssn_valid,
)

# "@", "[at]", "(at)", "{at}", "<at>", and an @ with a space either side ("hannah.lee @ fastmail.com").
_AT = r"(?:\s?@\s?|\s*[\[({<]\s*at\s*[\])}>]\s*)"
_DOT = r"(?:\.|\s*[\[({<]\s*dot\s*[\])}>]\s*)"
_LABEL = r"[A-Za-z0-9\-\u00C0-\u024F]+"  # a domain label, internationalised ones too ("müllerfamilie.de")
_EMAIL = re.compile(rf"(?<![A-Za-z0-9_.+\-])([A-Za-z0-9_.+\-]+){_AT}"  # a local part from its start: linear time
                    rf"{_LABEL}(?:{_DOT}{_LABEL})*{_DOT}([A-Za-z]{{2,}})(?!{W}|:[\w/~])",
                    re.IGNORECASE)
# What an address-shaped word is when it is no one's mailbox: a file at 2x, an SSH or git remote's host, a
# placeholder to fill in.
_NOT_A_DOMAIN = frozenset("png jpg jpeg gif svg webp pdf txt md py js ts json html css git local lan internal "
                          "localhost invalid test".split())
_PLACEHOLDER_MAILBOXES = frozenset("user username name yourname your.name you your.email email someone somebody "
                                   "me xxx foo first.last firstname.lastname".split())
_SEP = r"[\s.\-/,_]"
_CARD = re.compile(rf"(?<!{W}|[.+])\d(?:{_SEP}{{0,2}}\d){{12,18}}(?!{W})")
_SSN = re.compile(rf"(?<!{W}|[.\-])(\d{{3}})[\s.\-_,]{{1,2}}(\d{{2}})[\s.\-_,]{{1,2}}(\d{{4}})(?!{W}|-|\.\d)")
_SSN_BARE = re.compile(r"(?:ssn|social security(?: number| no\.?)?|(?:my|his|her|their) social|社会安全号)"
                       r"\D{0,20}?(?<!\d)(\d{9})(?!\d)",
                       re.IGNORECASE)
_CHINESE_ID = re.compile(rf"(?<!{W})(\d(?:[\s\-]?\d){{16}}[\s\-]?[\dXx])(?!{W})")
_CHINESE_ID_SAID = re.compile(r"身份证|证件号|身份號|ID card|identity card", re.IGNORECASE)
# A UK National Insurance number: two letters (HMRC's prefixes), six digits, a suffix A-D, however spaced; any
# two letters once the sentence says it is one ("NI number: QQ 12 34 56 C", HMRC's specimen).
_NINO = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})[\s\-]?(\d{2})[\s\-]?(\d{2})[\s\-]?(\d{2})[\s\-]?([A-Da-d])"
                   r"(?![A-Za-z0-9])")
_NINO_PREFIX = re.compile(r"^(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]$")
_NINO_SAID = re.compile(r"\b(?:NI|NINO|national insurance)\b", re.IGNORECASE)
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[\s.\-]?[A-Za-z0-9]){11,30}")
_INTERNATIONAL = re.compile(rf"(?<!{W}|\+)(?:\+\d{{1,3}}|00[1-9]\d{{0,2}}[\s.\-])(?:[\s.\-]?\(?\d{{1,4}}\)?){{2,6}}"
                            rf"(?!{W}|[.\-/]{W})")
_UK_NATIONAL = re.compile(r"(?<![A-Za-z0-9_.+\-])0\d{4}[\s\-]?\d{6}(?![A-Za-z0-9_]|[.\-]\d)")  # 07700 900123
_CHINESE_MOBILE = re.compile(r"(?<!\d)1[3-9]\d(?:[\s\-]?\d){8}(?!\d)")
_GROUPED = re.compile(rf"(?<!{W})(?<![.+\-/])(?<!\d:)(?<!\d[\s.\-/])"
                      rf"(?:\(\d{{2,5}}\)\s?|\d{{2,5}}[\s.\-/])(?:\d{{2,4}}[\s.\-/]){{0,3}}\d{{3,4}}(?!{W}|[.\-/:,]{W}|[\s.\-/]\d)")
_BARE_DIGITS = re.compile(rf"(?<!{W}|\.)\d{{7,15}}(?!{W}|[.,]\d)")
_PHONE_WORDS = re.compile(r"phone|call|tel\b|mobile|cell|whatsapp|text me|reach me|fax|number is|"
                          r"电话|手机|号码|致电|打给|联系方式|微信", re.IGNORECASE)
_DATE_SHAPES = (re.compile(r"^\d{4}([.\-/])\d{1,2}\1\d{1,2}$"), re.compile(r"^\d{1,2}([.\-/])\d{1,2}\1\d{2,4}$"))
_AMOUNT_AFTER = re.compile(r"^\s*(?:[%€$£¥元块円]|km|kg|m\b|cm|mm|ml|l\b|g\b|mb|gb|tb|mph|"
                           r"dollars|euros|yuan|rmb|usd|eur|words|people|steps|calories|miles|points|次|人|个|步|米|公里)",
                           re.IGNORECASE)
_AMOUNT_BEFORE = re.compile(r"(?:[€$£¥]|rmb|usd|eur|cny)\s*$", re.IGNORECASE)




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


def find_emails(view: str) -> Iterator[Match]:
    for m in _EMAIL.finditer(view):
        if m.group(2).lower() not in _NOT_A_DOMAIN and m.group(1).lower() not in _PLACEHOLDER_MAILBOXES:
            yield m.span()
    for m in _SPOKEN_EMAIL.finditer(view):
        if "@" not in m.group(0) or " dot " in m.group(0).lower() or "点" in m.group(0):
            if m.group(1).lower() not in _NOT_A_MAILBOX:
                yield m.span()


def _card_valid(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and card_issuer_plausible(digits) and luhn_valid(digits) and len(set(digits)) > 1


def find_cards(view: str) -> Iterator[Match]:
    for m in _CARD.finditer(view):
        if _card_valid(digits_of(m.group(0))):
            yield m.span()
    yield from split_numbers(view, _card_valid)


_RUN = re.compile(r"(?<![0-9])\d{4,}(?![0-9])")


def split_numbers(view: str, valid: Callable[[str], bool]) -> Iterator[Match]:
    """A number given in two parts a few words apart ("first half 44851290, second half 33762181", "我身份证号
    610113197，后面是 911230011"): two runs of digits at most 30 characters apart that together pass `valid`,
    as one span from the first to the second."""
    runs = list(_RUN.finditer(view))
    for first, second in zip(runs, runs[1:], strict=False):
        if second.start() - first.end() <= 30 and valid(first.group(0) + second.group(0)):
            yield first.start(), second.end()


def find_national_ids(view: str) -> Iterator[Match]:
    for m in _SSN.finditer(view):
        if ssn_valid(m.group(1) + m.group(2) + m.group(3)):
            yield m.span()
    for m in _SSN_BARE.finditer(view):
        if ssn_valid(m.group(1)):
            yield m.span(1)
    for m in _CHINESE_ID.finditer(view):
        number = re.sub(r"[\s\-]", "", m.group(1))
        if chinese_id_valid(number) and (chinese_id_checks(number) or _CHINESE_ID_SAID.search(
                sentence_of(view, *m.span())) and not _EXAMPLE.search(sentence_of(view, *m.span()))):
            yield m.span()
    yield from split_numbers(view, lambda digits: len(digits) == 18 and chinese_id_valid(digits)
                             and chinese_id_checks(digits))
    for m in _NINO.finditer(view):
        said = _NINO_SAID.search(sentence_of(view, *m.span()))
        if said or _NINO_PREFIX.match(m.group(1).upper()) and not m.group(1).islower():
            yield m.span()


# A number that is a tutorial's example, not anyone's ("the sample in the tutorial fails validation").
_EXAMPLE = re.compile(r"教程|举例|例子|示例|样例|tutorial|example|sample", re.IGNORECASE)


def find_ibans(view: str) -> Iterator[Match]:
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


def find_phones(view: str) -> Iterator[Match]:
    for m in _INTERNATIONAL.finditer(view):
        if 8 <= len(digits_of(m.group(0))) <= 15:
            yield m.span()
    for pattern in (_CHINESE_MOBILE, _UK_NATIONAL):
        for m in pattern.finditer(view):
            yield m.span()
    for m in _GROUPED.finditer(view):
        digits = digits_of(m.group(0))
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
        if _near_phone_word(view, *m.span()) and not _looks_like_amount_or_date(view, *m.span()) \
                and not _NAMED_OTHERWISE.search(view[max(0, m.start() - 24):m.start()]):
            yield m.span()
    for m in _SAID_NUMBER.finditer(view):  # "my mobile is 07700 900123": any grouping, once it says so
        digits = digits_of(m.group(1))
        between = view[m.start():m.start(1)]
        if (7 <= len(digits) <= 15 and not _looks_like_amount_or_date(view, *m.span(1))
                and not _NOT_THE_NUMBER.search(between)):
            yield m.span(1)


_NAMED_OTHERWISE = re.compile(r"(?:\b(?:ID|meeting|order|invoice|ticket|ref|reference|tracking|account|serial|SKU|"
                              r"code|booking|confirmation|case|policy|model|part)\b|会议号|会议ID|会议|订单号?|单号|"
                              r"运单|快递|取件码|工号|学号|房间号|航班|车次|发票)[^\d]{0,12}$", re.IGNORECASE)
_NOT_THE_NUMBER = re.compile(r"\b(?:extension|ext|room|ticket|order|invoice|reference|ref)\b", re.IGNORECASE)
_SAID_NUMBER = re.compile(r"(?:phone|mobile|cell|tel\b|telephone|whatsapp|fax|landline|(?:my|his|her|their) number|"
                          r"call(?: me| us| him| her)?(?: on| at)?|ring(?: me)?(?: on| at)?|text me(?: on| at)?|"
                          r"电话|手机|手机号|座机|联系方式|微信)[^\d+\n]{0,16}?(\+?\(?\d[\d\s.,\-()]{5,24}\d)(?![\d])",
                          re.IGNORECASE)
