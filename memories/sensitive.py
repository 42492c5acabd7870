"""The one sensitive-data detector: what the review gate holds for a person (facts, saves, approvals)
and what an episode withholds from its kept turns.

Detection runs on a normalised view of the text: NFKC (full-width digits and signs such as
`＠`, `０７８` become `@`, `078`) and Chinese numerals read as digits (`一三八…` as `138…`), character
by character, so every match maps back to the span of the original text it came from and redaction
replaces exactly that span (the rest of a Chinese sentence keeps its full-width punctuation).

Kinds (settings.SENSITIVE_DETECTORS picks which run):
- email: `name@domain.tld`, with `@` in any width, or written `[at]` / `(at)`;
- phone: an international number (`+351 912 345 678`, `0044 20 7946 0958`), a Chinese mobile
  (`138 1234 5678`, in digits or numerals), or a number grouped the way phone numbers are written
  (brackets, dashes, dots, spaces; 7 to 12 digits) that is not a date, a time, an IP address or an
  amount; a bare run of 7 to 15 digits counts only next to a word that says it is a phone number;
- card: 13 to 19 digits with any separators, in a card network's issuer range, that pass the Luhn check;
- national_id: a US SSN (3-2-4 digits with dashes, spaces or dots, valid area/group/serial; bare nine
  digits only after "SSN" / "social security"), a Chinese resident id (18 characters: region, birth date,
  sequence, check character; a wrong check character is a typo, still withheld);
- iban: two letters, two check digits and 11 to 30 letters or digits, spaces allowed, mod-97 valid.

tests/samples/sensitive.json is the labelled set (positives and near-misses, English and Chinese);
tests/test_sensitive.py reports recall and false positives by kind.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Chinese numerals as phone numbers are read aloud (幺 is 1 on the phone; 〇/零 are 0).
_CHINESE_DIGITS = {"〇": "0", "零": "0", "幺": "1", "一": "1", "二": "2", "三": "3", "四": "4", "五": "5",
                   "六": "6", "七": "7", "八": "8", "九": "9"}


@dataclass(frozen=True)
class Normalised:
    """The detection view of a text and, for each of its characters, the original index it came from."""

    text: str
    origin: list[int]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span of the view's [start, end)."""
        return self.origin[start], (self.origin[end - 1] + 1) if end > start else self.origin[start]


def normalise(text: str) -> Normalised:
    view: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        mapped = _CHINESE_DIGITS.get(char) or unicodedata.normalize("NFKC", char)
        for piece in mapped:
            view.append(piece)
            origin.append(index)
    return Normalised("".join(view), origin)


# --------------------------------------------------------------------------- checks


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def card_issuer_plausible(digits: str) -> bool:
    """The issuer ranges and lengths of the card networks (Visa, Mastercard, Amex, Discover, UnionPay,
    JCB, Diners): a tracking number that happens to pass the Luhn check usually starts elsewhere."""
    length, two, four = len(digits), int(digits[:2]), int(digits[:4])
    return ((digits[0] == "4" and length in (13, 16, 19)) or (two in (34, 37) and length == 15)
            or ((51 <= two <= 55 or 2221 <= four <= 2720) and length == 16)
            or ((digits.startswith(("6011", "65", "62", "35")) or 644 <= int(digits[:3]) <= 649) and 16 <= length <= 19)
            or (two in (30, 36, 38) and 14 <= length <= 19))


def ssn_valid(digits: str) -> bool:
    """Area 001-899 except 666, group 01-99, serial 0001-9999 (the SSA's rules)."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def chinese_id_valid(text: str) -> bool:
    """GB 11643's shape: a region code, a plausible birth date, a sequence and a check character."""
    body, check = text[:17], text[17].upper()
    if not body.isdigit():
        return False
    year, month, day = int(body[6:10]), int(body[10:12]), int(body[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= 31) or body[0] not in "12345678":
        return False
    # A wrong check character is still somebody's id, mistyped: only the shape (region, birth date) decides.
    return check.isdigit() or check == "X"


def iban_valid(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


# --------------------------------------------------------------------------- patterns (on the view)

_W = r"[A-Za-z0-9_]"  # a word character of a number or an address (\\w would include every Chinese character)
_AT, _DOT = r"(?:@|\s*(?:\[at\]|\(at\))\s*)", r"(?:\.|\s*(?:\[dot\]|\(dot\))\s*)"
_EMAIL = re.compile(rf"[A-Za-z0-9_.+\-]+{_AT}[A-Za-z0-9\-]+(?:{_DOT}[A-Za-z0-9\-]+)*{_DOT}[A-Za-z]{{2,}}(?!{_W})",
                    re.IGNORECASE)
_SEP = r"[\s.\-/]"
_CARD = re.compile(rf"(?<!{_W}|[.+])\d(?:{_SEP}?\d){{12,18}}(?!{_W})")
_SSN = re.compile(rf"(?<!{_W}|[.\-])(\d{{3}})([\s.\-])(\d{{2}})\2(\d{{4}})(?!{_W}|-|\.\d)")
_SSN_BARE = re.compile(r"(?:ssn|social security(?: number| no\.?)?|社会安全号)\D{0,12}?(?<!\d)(\d{9})(?!\d)",
                       re.IGNORECASE)
_CHINESE_ID = re.compile(rf"(?<!{_W})(\d{{6}})\s?(\d{{8}})\s?(\d{{3}}[\dXx])(?!{_W})")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_INTERNATIONAL = re.compile(rf"(?<!{_W}|\+)(?:\+\d{{1,3}}|00[1-9]\d{{0,2}}[\s.\-])(?:[\s.\-]?\(?\d{{1,4}}\)?){{2,6}}"
                            rf"(?!{_W}|[.\-/]{_W})")
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


def _emails(view: str) -> Iterator[Match]:
    for m in _EMAIL.finditer(view):
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
    for m in _IBAN.finditer(view):
        if iban_valid(m.group(0)):
            yield m.span()


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
    for m in _CHINESE_MOBILE.finditer(view):
        yield m.span()
    for m in _GROUPED.finditer(view):
        digits = _digits(m.group(0))
        if not 7 <= len(digits) <= 12 or _looks_like_amount_or_date(view, *m.span()):
            continue
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


FINDERS: dict[str, Callable[[str], Iterator[Match]]] = {
    "email": _emails, "card": _cards, "national_id": _national_ids, "iban": _ibans, "phone": _phones}
# Withheld as (a card's digits are no phone number: the more specific kinds claim their spans first).
MARKERS = {"national_id": "[id withheld]", "card": "[card withheld]", "iban": "[iban withheld]",
           "email": "[email withheld]", "phone": "[phone withheld]"}
ORDER = ("national_id", "iban", "card", "email", "phone")


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
